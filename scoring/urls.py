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

from scoring import views_preference  # noqa: E402

urlpatterns += [
    path("preference/", views_preference.study_list, name="preference-list"),
    path("preference/new/", views_preference.study_new, name="preference-new"),
    path("preference/<int:pk>/", views_preference.study_detail, name="preference-detail"),
    path("preference/<int:pk>/sources/", views_preference.study_sources, name="preference-sources"),
    path("preference/<int:pk>/raters/", views_preference.study_raters, name="preference-raters"),
    path("preference/<int:pk>/action/", views_preference.study_action, name="preference-action"),
    path("preference/<int:pk>/items/<int:item_id>/delete/", views_preference.item_delete,
         name="preference-item-delete"),
    path("preference/<int:pk>/results/", views_preference.study_results, name="preference-results"),
    path("preference/<int:pk>/export.csv", views_preference.study_export, name="preference-export"),
    path("compare/", views_preference.compare_next, name="compare-next"),
    path("compare/<int:pk>/", views_preference.compare_task, name="compare-task"),
    path("compare/<int:pk>/answer/", views_preference.compare_answer, name="compare-answer"),
    path("compare/<int:pk>/comment/", views_preference.compare_comment, name="compare-comment"),
    path("compare/<int:pk>/submit/", views_preference.compare_submit, name="compare-submit"),
    path("compare/<int:pk>/skip/", views_preference.compare_skip, name="compare-skip"),
    path("compare/<int:pk>/next/", views_preference.compare_goto_next, name="compare-goto-next"),
]

from scoring import views_generation  # noqa: E402

urlpatterns += [
    path("generation/", views_generation.generation_home, name="generation-home"),
    path("generation/cases/import/", views_generation.case_import, name="generation-case-import"),
    path("generation/cases/<int:pk>/", views_generation.case_set_detail, name="generation-case-set"),
    path("generation/jobs/new/", views_generation.job_new, name="generation-job-new"),
    path("generation/jobs/<int:pk>/", views_generation.job_detail, name="generation-job"),
    path("generation/jobs/<int:pk>/progress/", views_generation.job_progress, name="generation-job-progress"),
    path("generation/jobs/<int:pk>/action/", views_generation.job_action, name="generation-job-action"),
    path("generation/dialogues/<int:pk>/", views_generation.generated_detail, name="generation-dialogue"),
]
