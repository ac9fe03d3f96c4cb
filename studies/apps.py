from django.apps import AppConfig


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = "Study archive"

    def ready(self) -> None:
        from studies import jobs  # noqa: F401 - registers the export job's handler (web processes and workers)
