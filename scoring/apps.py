from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring: LLM judges, statistics and reports"
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "coordinator": ["add_job", "view_job", "add_judgeconfig", "change_judgeconfig", "view_judgeconfig",
                        "add_judgerun", "change_judgerun", "view_judgerun", "view_judgeresult", "view_promptset",
                        "add_promptset", "view_llmcall", "view_llmendpoint",
                        "add_caseset", "view_caseset", "view_patientcase", "add_generationjob",
                        "change_generationjob", "view_generationjob", "view_generateddialogue"],
        "analyst": ["view_job", "view_llmendpoint", "view_judgeconfig", "view_judgerun", "view_judgeresult",
                    "view_caseset", "view_patientcase", "view_generationjob", "view_generateddialogue"],
    }
    # Run by annotation's ``load_demo`` (after the demo users it creates), by name.
    demo_commands = ["load_preference_demo", "load_generation_demo"]

    def ready(self) -> None:
        from config import health, reconcile
        from scoring.generation import services as generation  # noqa: F401 - registers its engine handler
        from scoring.jobs import services as jobs
        from scoring.judges import (
            labels,  # noqa: F401 - registers judge labels in the label exports
            runs,  # noqa: F401 - registers its engine handler
        )
        from scoring.llm import batch, recovery
        from scoring.preference import judging  # noqa: F401 - registers its engine handler

        jobs.LAZY_HANDLERS["campaign_report"] = "scoring.reports.service.campaign_report"
        health.register_detail("llm_work", recovery.backlog)
        reconcile.register("LLM engines and their jobs", recovery.reconcile)
        reconcile.register("provider batches", batch.reconcile)
        reconcile.register("background jobs", jobs.reconcile)
