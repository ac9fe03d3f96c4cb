from django.urls import path

from scoring.preference import views

urlpatterns = [
    path("preference/", views.study_list, name="preference-list"),
    path("preference/new/", views.study_new, name="preference-new"),
    path("preference/<int:pk>/", views.study_detail, name="preference-detail"),
    path("preference/<int:pk>/sources/", views.study_sources, name="preference-sources"),
    path("preference/<int:pk>/raters/", views.study_raters, name="preference-raters"),
    path("preference/<int:pk>/action/", views.study_action, name="preference-action"),
    path("preference/<int:pk>/items/<int:item_id>/delete/", views.item_delete,
         name="preference-item-delete"),
    path("preference/<int:pk>/results/", views.study_results, name="preference-results"),
    path("preference/<int:pk>/export.csv", views.study_export, name="preference-export"),
    path("compare/", views.compare_next, name="compare-next"),
    path("compare/<int:pk>/", views.compare_task, name="compare-task"),
    path("compare/<int:pk>/answer/", views.compare_answer, name="compare-answer"),
    path("compare/<int:pk>/comment/", views.compare_comment, name="compare-comment"),
    path("compare/<int:pk>/submit/", views.compare_submit, name="compare-submit"),
    path("compare/<int:pk>/skip/", views.compare_skip, name="compare-skip"),
    path("compare/<int:pk>/next/", views.compare_goto_next, name="compare-goto-next"),
]
