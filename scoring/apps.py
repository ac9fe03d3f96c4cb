from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring: LLM judges, statistics and reports"
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "coordinator": ["add_job", "view_job"],
        "analyst": ["view_job"],
    }
