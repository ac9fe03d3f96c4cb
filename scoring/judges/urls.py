from django.urls import path

from scoring.judges import views, views_active, views_juries

urlpatterns = [
    path("judges/", views.judge_list, name="judge-list"),
    path("judges/new/", views.judge_config_edit, name="judge-new"),
    path("judges/fake-endpoint/", views.fake_endpoint_grant, name="judge-fake-endpoint"),
    path("judges/<int:pk>/edit/", views.judge_config_edit, name="judge-edit"),
    path("judges/runs/new/", views.judge_run_new, name="judge-run-new"),
    path("judges/campaigns/<int:pk>/active-sample/", views_active.campaign_active_sample,
         name="campaign-active-sample"),
    path("judges/planner/", views.judge_planner, name="judge-planner"),
    path("judges/runs/<int:pk>/", views.judge_run, name="judge-run"),
    path("judges/runs/<int:pk>/progress/", views.judge_run_progress, name="judge-run-progress"),
    path("judges/runs/<int:pk>/action/", views.judge_run_action, name="judge-run-action"),
    path("judges/runs/<int:pk>/report/", views.judge_run_report, name="judge-run-report"),
    path("judges/runs/<int:pk>/report/status/<int:job_id>/", views.judge_run_report_status,
         name="judge-run-report-status"),
    path("judges/runs/<int:pk>/report.<str:fmt>", views.judge_run_report_download, name="judge-run-report-download"),
    path("judges/runs/<int:pk>/compare/<int:other>/", views.judge_run_compare, name="judge-run-compare"),
    path("judges/juries/new/", views_juries.jury_new, name="jury-new"),
    path("judges/juries/<int:pk>/", views_juries.jury_detail, name="jury-detail"),
    path("judges/juries/<int:pk>/delete/", views_juries.jury_delete, name="jury-delete"),
    path("judges/juries/<int:pk>/report/", views.judge_run_report, {"jury": True}, name="jury-report"),
    path("judges/juries/<int:pk>/report/status/<int:job_id>/", views.judge_run_report_status, {"jury": True},
         name="jury-report-status"),
    path("judges/juries/<int:pk>/report.<str:fmt>", views.judge_run_report_download, {"jury": True},
         name="jury-report-download"),
    path("judges/juries/<int:pk>/compare/<int:other>/", views.judge_run_compare, {"jury": True},
         name="jury-compare"),
    path("judges/selection/", views_juries.judge_selection, name="judge-selection"),
]
