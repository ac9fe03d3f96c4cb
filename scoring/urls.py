from django.urls import path

from scoring import views

urlpatterns = [
    path("system/", views.system_status, name="system"),
    path("system/worker-check/", views.worker_check_start, name="worker-check"),
    path("jobs/<int:pk>/", views.job_status, name="job-status"),
    path("campaigns/<int:pk>/trial-report/", views.campaign_trial_report, name="campaign-trial-report"),
]

urlpatterns += [
    path("campaigns/<int:pk>/report/", views.campaign_report, name="campaign-report"),
    path("campaigns/<int:pk>/report/status/<int:job_id>/", views.campaign_report_status, name="campaign-report-status"),
    path("campaigns/<int:pk>/report/download/", views.campaign_report_download, name="campaign-report-download"),
]

urlpatterns += [
    path("campaigns/<int:pk>/labels.<str:fmt>", views.campaign_export, name="campaign-export"),
]

from scoring import views_judge  # noqa: E402

urlpatterns += [
    path("judges/", views_judge.judge_list, name="judge-list"),
    path("judges/new/", views_judge.judge_config_edit, name="judge-new"),
    path("judges/<int:pk>/edit/", views_judge.judge_config_edit, name="judge-edit"),
    path("judges/runs/new/", views_judge.judge_run_new, name="judge-run-new"),
    path("judges/runs/<int:pk>/", views_judge.judge_run, name="judge-run"),
    path("judges/runs/<int:pk>/progress/", views_judge.judge_run_progress, name="judge-run-progress"),
    path("judges/runs/<int:pk>/action/", views_judge.judge_run_action, name="judge-run-action"),
    path("judges/runs/<int:pk>/report/", views_judge.judge_run_report, name="judge-run-report"),
    path("judges/runs/<int:pk>/compare/<int:other>/", views_judge.judge_run_compare, name="judge-run-compare"),
]
