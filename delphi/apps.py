from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

MODELS = ["delphistudy", "round", "panelist", "participation", "response", "responsechange", "proposal",
          "itemdecision"]


class DelphiConfig(AppConfig):
    name = "delphi"
    verbose_name = _("Delphi: studies, rounds and panels")
    default_auto_field = "django.db.models.BigAutoField"
    # Coordinators create and run studies; analysts read statistics and exports. Panelists need no role:
    # they answer through their personal signed link.
    role_permissions: dict[str, list[str]] = {
        "coordinator": [f"{verb}_{model}" for verb in ("add", "change", "view") for model in MODELS],
        "analyst": [f"view_{model}" for model in MODELS],
    }
    # Run by annotation's ``load_demo``, by name.
    demo_commands = ["load_delphi_demo"]

    def start_here(self, user, held: set[str], project) -> list[dict[str, str]]:
        """Home-page link to the demo Delphi study's last closed round (see annotation.demo), in the demo project
        (the page's)."""
        if not held & {"coordinator", "analyst"} or project is None or not project.is_demo:
            return []
        from django.urls import reverse
        from django.utils.translation import gettext as _

        from delphi.demo import TITLE
        from delphi.models import Round

        rnd = (Round.objects.filter(study__title=TITLE, status=Round.Status.CLOSED, study__deleted_at__isnull=True)
               .order_by("-number").first())
        if rnd is None:
            return []
        return [{"kind": "demo", "url": reverse("delphi:round", args=[rnd.pk]),
                 "text": _("Delphi statistics, round %(number)d") % {"number": rnd.number},
                 "note": _("mean, CV, agreement, Kendall's W and chi-square per round")}]

    def ready(self) -> None:
        from core.jobs import services as jobs
        from core.site import reconcile

        jobs.LAZY_HANDLERS["delphi_round"] = "delphi.services.round_statistics"
        # Due reminders are found in the database by every worker's reconciler (every minute).
        reconcile.register("Delphi reminders", _remind, every=60)


def _remind() -> Any:
    """The reminder pass, imported when it first runs: delphi.services loads pandas, which start-up need not."""
    from delphi import services

    return services.reconcile_reminders()
