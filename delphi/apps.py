from typing import Any

from django.apps import AppConfig

MODELS = ["delphistudy", "round", "panelist", "participation", "response", "responsechange", "proposal",
          "itemdecision"]


class DelphiConfig(AppConfig):
    name = "delphi"
    verbose_name = "Delphi: studies, rounds and panels"
    default_auto_field = "django.db.models.BigAutoField"
    # Coordinators create and run studies; analysts read statistics and exports. Panelists need no role:
    # they answer through their personal signed link.
    role_permissions: dict[str, list[str]] = {
        "coordinator": [f"{verb}_{model}" for verb in ("add", "change", "view") for model in MODELS],
        "analyst": [f"view_{model}" for model in MODELS],
    }
    # Run by annotation's ``load_demo``, by name.
    demo_commands = ["load_delphi_demo"]

    def ready(self) -> None:
        from config import reconcile

        # Due reminders are found in the database by every worker's reconciler (every minute).
        reconcile.register("Delphi reminders", _remind, every=60)


def _remind() -> Any:
    """The reminder pass, imported when it first runs: delphi.services loads pandas, which start-up need not."""
    from delphi import services

    return services.reconcile_reminders()
