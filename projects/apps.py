from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate, post_save, pre_save


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects, members and the audit trail"
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "coordinator": ["view_auditevent"],
        "analyst": ["view_auditevent"],
    }

    def ready(self) -> None:
        post_migrate.connect(_sync_roles, dispatch_uid="projects.sync_roles")
        from projects.tokens import remember_password, rotate_on_password_change

        # A password change (any way: the page, the admin, manage.py changepassword) replaces the API token.
        pre_save.connect(remember_password, sender=settings.AUTH_USER_MODEL, dispatch_uid="projects.token_pw")
        post_save.connect(rotate_on_password_change, sender=settings.AUTH_USER_MODEL,
                          dispatch_uid="projects.token_rotate")


def _sync_roles(sender, app_config=None, verbosity=1, **kwargs) -> None:
    # post_migrate fires once per app; roles need every app's permissions, so run after the last one.
    from django.apps import apps

    # Django sends it only for apps with a models module (an app without models, such as studies, gets none)
    last = [config for config in apps.get_app_configs() if config.models_module is not None][-1]
    if app_config is not last:
        return
    from projects.roles import sync_roles

    sync_roles(verbosity=0)
