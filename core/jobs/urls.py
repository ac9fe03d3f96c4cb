from django.urls import path

from core.jobs import views

urlpatterns = [
    path("system/", views.system_status, name="system"),
    path("system/workers/", views.system_workers_status, name="system-workers"),
    path("system/worker-check/", views.worker_check_start, name="worker-check"),
    path("jobs/<int:pk>/", views.job_status, name="job-status"),
    path("jobs/<int:pk>/figures/", views.figures_status, name="figures-status"),
]
