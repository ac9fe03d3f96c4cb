from django.urls import path

from studies import views

urlpatterns = [
    path("archive/", views.archive_page, name="study-archive"),
    path("archive/export/", views.archive_export, name="study-archive-export"),
    path("archive/exports/<int:pk>/", views.export_status, name="study-archive-export-status"),
    path("archive/exports/<int:pk>/download/", views.export_download, name="study-archive-download"),
    path("archive/methods/", views.methods_page, name="study-archive-methods"),
    path("archive/methods/<str:what>", views.methods_download, name="study-archive-document"),
]
