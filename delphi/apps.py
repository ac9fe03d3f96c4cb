from django.apps import AppConfig


class DelphiConfig(AppConfig):
    name = "delphi"
    verbose_name = "Delphi: studies, rounds and panels"
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions: dict[str, list[str]] = {}
