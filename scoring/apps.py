from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = _("Scoring: LLM judges, statistics and reports")
    default_auto_field = "django.db.models.BigAutoField"
    role_permissions = {
        "coordinator": ["add_judgeconfig", "change_judgeconfig", "view_judgeconfig",
                        "add_judgerun", "change_judgerun", "view_judgerun", "view_judgeresult", "view_promptset",
                        "add_promptset", "view_llmcall", "view_llmendpoint",
                        "add_caseset", "view_caseset", "view_patientcase", "add_generationjob",
                        "change_generationjob", "view_generationjob", "view_generateddialogue"],
        "analyst": ["view_llmendpoint", "view_judgeconfig", "view_judgerun", "view_judgeresult",
                    "view_caseset", "view_patientcase", "view_generationjob", "view_generateddialogue"],
    }
    # Run by annotation's ``load_demo`` (after the demo users it creates), by name.
    demo_commands = ["load_preference_demo", "load_generation_demo", "load_study_demo"]
    # Entered by ``load_demo`` around the whole load: the figures it queues are computed by the loader
    # (load_study_demo), not by a worker at the same time as well.
    demo_contexts = ["core.jobs.figures.computed_here"]

    def start_here(self, user, held: set[str], project) -> list[dict[str, str]]:
        """Home-page links to the finished demo study's judge and preference results (see annotation.demo), shown
        in the demo project only (the page's project; elsewhere they would answer 404)."""
        if not held & {"coordinator", "analyst"} or project is None or not project.is_demo:
            return []
        from django.urls import reverse
        from django.utils.translation import gettext as _

        from scoring.judges.demo import demo_runs
        from scoring.preference.demo import FINISHED_STUDY
        from scoring.preference.models import PreferenceStudy

        links = []
        campaign, runs = demo_runs(project)
        if campaign is not None and runs:
            query = f"?campaign={campaign.pk}"
            links.append({"kind": "demo", "url": reverse("judge-run-report", args=[runs[0].pk]) + query,
                          "text": _("Synthetic LLM judge vs physicians"),
                          "note": _("Table 5 per item: kappa, accuracy, verdicts; judges' scores by model")})
            if len(runs) > 1:
                links.append({"kind": "demo", "url": reverse("judge-run-compare", args=[runs[0].pk, runs[1].pk])
                              + query, "text": _("Per-item vs per-dialogue judging"),
                          "note": _("the two modes side by side")})
        study = (PreferenceStudy.objects.alive().filter(name=FINISHED_STUDY, status="unblinded")
                 .first())
        if study is not None:
            links.append({"kind": "demo", "url": reverse("preference-results", args=[study.pk]),
                          "text": _("Preference study result"), "note": _("win/tie/loss, Bradley-Terry ranking")})
        return links

    def physician_work(self, user) -> list[dict]:
        """The physician's home page: their preference studies with comparisons still waiting (rows of the same
        work table as their campaigns, with the same counts), and where to answer them."""
        if not getattr(user, "is_authenticated", False):
            return []
        from django.urls import reverse

        from scoring.preference.services import my_studies

        return [{"kind": "comparisons", "name": row["study__name"], "open": row["open"], "total": row["total"],
                 "done": row["done"], "percent": round(100 * row["done"] / row["total"]) if row["total"] else 0,
                 "project": row["study__project__name"], "url": reverse("compare-next")}
                for row in my_studies(user) if row["open"]]

    def ready(self) -> None:
        from annotation.signals import labels_changed
        from core.jobs import precompute
        from core.jobs import services as jobs
        from core.site import health, reconcile
        from scoring.generation import services as generation  # noqa: F401 - registers its engine handler
        from scoring.judges import (
            imports,  # noqa: F401 - registers the writer of imported judge runs (import_labels' judge rows)
            labels,  # noqa: F401 - registers judge labels in the label exports
            runs,  # noqa: F401 - registers its engine handler
        )
        from scoring.llm import batch, recovery
        from scoring.preference import judging  # noqa: F401 - registers its engine handler

        labels_changed.connect(precompute.on_labels_changed, dispatch_uid="scoring-reports-follow-labels")
        # The stored figures that follow a change, in the order they are queued (by path: imported on the change).
        for path in ("scoring.reports.figures.refresh_reports", "scoring.judges.figures.refresh_reports",
                     "scoring.judges.comparison_figures.refresh", "scoring.judges.selection_figures.refresh",
                     "scoring.judges.planner_figures.refresh"):
            precompute.follow(precompute.LABELS, path)
        for path in ("scoring.judges.figures.refresh_reports", "scoring.judges.comparison_figures.refresh",
                     "scoring.judges.selection_figures.refresh"):
            precompute.follow(precompute.JUDGE_RUN, path)
        precompute.follow(precompute.PREFERENCE_JUDGE_RUN, "scoring.preference.figures.refresh_results")
        jobs.LAZY_HANDLERS["campaign_report"] = "scoring.reports.figures.campaign_report"
        jobs.LAZY_HANDLERS["judge_report"] = "scoring.judges.figures.judge_report"
        jobs.LAZY_HANDLERS["judge_compare"] = "scoring.judges.comparison_figures.judge_compare"
        jobs.LAZY_HANDLERS["judge_selection"] = "scoring.judges.selection_figures.judge_selection"
        jobs.LAZY_HANDLERS["judge_planner"] = "scoring.judges.planner_figures.judge_planner"
        jobs.LAZY_HANDLERS["preference_results"] = "scoring.preference.figures.preference_results"
        jobs.LAZY_HANDLERS["preference_blinded"] = "scoring.preference.figures.preference_blinded"
        health.register_detail("llm_work", recovery.backlog)
        reconcile.register("LLM engines and their jobs", recovery.reconcile)
        reconcile.register("provider batches", batch.reconcile)
