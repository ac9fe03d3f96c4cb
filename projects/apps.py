from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate, post_save, pre_migrate, pre_save
from django.utils.translation import gettext_lazy as _


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = _("Projects, members and the audit trail")
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "coordinator": ["view_auditevent"],
        "analyst": ["view_auditevent"],
    }

    def ready(self) -> None:
        # before migrating (a migration made after the squash would fail on the missing tables) and after
        pre_migrate.connect(_refuse_half_created, sender=self, dispatch_uid="projects.half_created_before")
        post_migrate.connect(_refuse_half_created, sender=self, dispatch_uid="projects.half_created")
        post_migrate.connect(_sync_roles, dispatch_uid="projects.sync_roles")
        from projects.tokens import remember_password, rotate_on_password_change

        # A password change (any way: the page, the admin, manage.py changepassword) replaces the API token.
        pre_save.connect(remember_password, sender=settings.AUTH_USER_MODEL, dispatch_uid="projects.token_pw")
        post_save.connect(rotate_on_password_change, sender=settings.AUTH_USER_MODEL,
                          dispatch_uid="projects.token_rotate")


def _refuse_half_created(sender, using="default", **kwargs) -> None:
    """A first ``migrate`` interrupted between the squashed migrations left tables missing that no migration will
    create any more (see :mod:`projects.squashing`): say so, and how to start again, instead of failing later."""
    from django.core.management.base import CommandError
    from django.db import connections
    from django.db.migrations.recorder import MigrationRecorder

    from projects.squashing import REPLACED, missing_tables

    connection = connections[using]
    missing = missing_tables(connection)
    if missing and set(REPLACED) <= set(MigrationRecorder(connection).applied_migrations()):
        raise CommandError(
            f"The database {connection.settings_dict['NAME']} lacks {len(missing)} tables ({', '.join(missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}) although its migrations are recorded as applied: its first "
            "`migrate` was interrupted. It holds no study data yet: delete it (embedded mode: the var/ folder's "
            "db.sqlite3) or drop and create it again (PostgreSQL), then run `make run` again.")


def _sync_roles(sender, app_config=None, verbosity=1, **kwargs) -> None:
    # post_migrate fires once per app; roles need every app's permissions, so run after the last one.
    from django.apps import apps

    # Django sends it only for apps with a models module (an app without models, such as studies, gets none)
    last = [config for config in apps.get_app_configs() if config.models_module is not None][-1]
    if app_config is not last:
        return
    from projects.roles import sync_roles

    sync_roles(verbosity=0)
