from django.urls import path

from scoring.generation import views

urlpatterns = [
    path("generation/", views.generation_home, name="generation-home"),
    path("generation/cases/import/", views.case_import, name="generation-case-import"),
    path("generation/cases/<int:pk>/", views.case_set_detail, name="generation-case-set"),
    path("generation/jobs/new/", views.job_new, name="generation-job-new"),
    path("generation/jobs/<int:pk>/", views.job_detail, name="generation-job"),
    path("generation/jobs/<int:pk>/progress/", views.job_progress, name="generation-job-progress"),
    path("generation/jobs/<int:pk>/action/", views.job_action, name="generation-job-action"),
    path("generation/dialogues/<int:pk>/", views.generated_detail, name="generation-dialogue"),
]
