from django.urls import path

from scoring.reports import views

urlpatterns = [
    path("campaigns/<int:pk>/trial-report/", views.campaign_trial_report, name="campaign-trial-report"),
    path("campaigns/<int:pk>/report/", views.campaign_report, name="campaign-report"),
    path("campaigns/<int:pk>/report/status/<int:job_id>/", views.campaign_report_status, name="campaign-report-status"),
    path("campaigns/<int:pk>/report/download/", views.campaign_report_download, name="campaign-report-download"),
    path("campaigns/<int:pk>/report/agreement.csv", views.campaign_report_csv, name="campaign-report-csv"),
    path("campaigns/<int:pk>/labels.<str:fmt>", views.campaign_export, name="campaign-export"),
]
