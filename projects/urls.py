from django.urls import path

from projects import views

urlpatterns = [
    path("projects/", views.project_list, name="project-list"),
    path("projects/switch/", views.project_switch, name="project-switch"),
    path("language/", views.language_switch, name="language-switch"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("projects/<int:pk>/members/<int:user_id>/remove/", views.member_remove, name="project-member-remove"),
    path("projects/<int:pk>/invitations/<int:invitation_id>/revoke/", views.invitation_revoke,
         name="project-invitation-revoke"),
]
