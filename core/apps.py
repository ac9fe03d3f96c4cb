from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CoreConfig(AppConfig):
    """The floor every app may use and that imports none of them: background jobs and stored figures
    (``core.jobs``), the pure statistics (``core.stats``, no Django) and the site's infrastructure (``core.site``).
    What it needs from the apps above it they register here (job handlers, figures that follow a change, health
    details, reconciler hooks, the worker check's counts)."""

    name = "core"
    verbose_name = _("Background jobs and site infrastructure")
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "coordinator": ["add_job", "view_job"],
        "analyst": ["view_job"],
    }

    def ready(self) -> None:
        from core.jobs import services as jobs
        from core.site import reconcile

        reconcile.register("background jobs", jobs.reconcile)
