from django.urls import path

from delphi import views

app_name = "delphi"

urlpatterns = [
    path("", views.study_list, name="list"),
    path("new/", views.study_new, name="study-new"),
    path("mine/", views.my_questionnaires, name="mine"),
    path("<int:pk>/", views.study_detail, name="study"),
    path("<int:pk>/settings/", views.study_settings, name="study-settings"),
    path("<int:pk>/invite/", views.study_invite, name="study-invite"),
    path("<int:pk>/do/<slug:action>/", views.study_action, name="study-action"),
    path("<int:pk>/export/<slug:what>.<slug:fmt>", views.study_export, name="study-export"),
    path("<int:pk>/links/", views.study_links, name="study-links"),
    path("panelists/<int:pk>/link/", views.panelist_link, name="panelist-link"),
    path("panelists/<int:pk>/<slug:action>/", views.panelist_action, name="panelist-action"),
    path("rounds/<int:pk>/", views.round_detail, name="round"),
    path("rounds/<int:pk>/do/<slug:action>/", views.round_action, name="round-action"),
    path("rounds/<int:pk>/items/<int:item_id>/decide/", views.round_decide, name="round-decide"),
    path("rounds/<int:pk>/add-item/", views.round_add_item, name="round-add-item"),
    path("rounds/<int:pk>/added/<int:decision_id>/withdraw/", views.round_withdraw_added, name="round-withdraw-added"),
    path("rounds/<int:pk>/adopt/<slug:kind>/<int:obj_id>/", views.round_adopt, name="round-adopt"),
    path("rounds/<int:pk>/validation/", views.round_validation, name="round-validation"),
    path("rounds/<int:pk>/export/items.<slug:fmt>", views.round_export, name="round-export"),
    path("p/<str:token>/", views.panel_home, name="panel-home"),
    path("p/<str:token>/<int:part_id>/items/<int:item_id>/", views.panel_answer, name="panel-answer"),
    path("p/<str:token>/<int:part_id>/profile/", views.panel_profile, name="panel-profile"),
    path("p/<str:token>/<int:part_id>/propose/", views.panel_propose, name="panel-propose"),
    path("p/<str:token>/<int:part_id>/proposals/<int:proposal_id>/withdraw/", views.panel_withdraw_proposal,
         name="panel-withdraw-proposal"),
    path("p/<str:token>/<int:part_id>/complete/", views.panel_complete, name="panel-complete"),
]
