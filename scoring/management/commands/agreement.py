"""python manage.py agreement --corpus NAME [--campaign NAME] [--format json|csv] [--project NAME]

The report of one campaign with the default resamples and seed is the one the report worker stores
(:mod:`scoring.reports.figures`): when the stored report is of the campaign's current labels (its fingerprint) the
command prints it without computing anything, and imports neither pandas nor the statistics libraries; otherwise
(stale or none stored, several campaigns, other resamples or seed) it computes the report in its own process."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Corpus
from projects.services import ProjectCommand
from scoring.reports.fingerprint import CI_METHODS, CORRELATIONS

#: The report's defaults (:data:`scoring.reports.agreement.N_RESAMPLES`, ``compute``'s seed), here so that reading a
#: stored report needs no import of the statistics stack; tests check they agree.
N_RESAMPLES, SEED = 1000, 20240501


class Command(ProjectCommand, BaseCommand):
    help = "Print the agreement report (the same figures as the browser report) as JSON or CSV."
    # A report for scripts: the system checks (they load every URL, view and the API schema) are `manage.py check`'s.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--campaign", help="campaign name (default: every campaign on the corpus)")
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--names", action="store_true", help="show rater usernames instead of pseudonyms")
        parser.add_argument("--resamples", type=int, default=N_RESAMPLES)
        parser.add_argument("--seed", type=int, default=SEED)
        parser.add_argument("--ci-method", choices=list(CI_METHODS), default="percentile",
                            help="bootstrap intervals: percentile (default) or bca")
        parser.add_argument("--correlation", choices=list(CORRELATIONS), default="pearson",
                            help="correlations for reliability and validity: pearson (phi, default) or tetrachoric")
        parser.add_argument("--recompute", action="store_true",
                            help="compute the report in this process even when a stored one is current")

    def handle(self, *args, **options):
        project = self.project
        corpus = Corpus.objects.alive().filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus named {options['corpus']!r} in project {project.name!r}.")
        campaigns = Campaign.objects.alive().filter(corpus=corpus)
        if options["campaign"]:
            campaigns = campaigns.filter(name=options["campaign"])
            if not campaigns.exists():
                raise CommandError(f"No campaign named {options['campaign']!r} on corpus {corpus.name!r}.")
        elif not campaigns.exists():
            raise CommandError(f"Corpus {corpus.name!r} has no campaigns.")
        campaigns = list(campaigns)
        report = None if options["recompute"] else self._stored(campaigns, options)
        if report is None:
            report = self._compute(campaigns, options)
        if options["format"] == "json":
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
        else:
            from scoring.reports.agreement_csv import csv_text

            self.stdout.write(csv_text(report), ending="")

    @staticmethod
    def _stored(campaigns: list[Campaign], options: dict) -> dict | None:
        """The stored report of the campaign's current labels with these options, as this command prints it (no
        plots, no timing), or None."""
        if len(campaigns) != 1 or options["resamples"] != N_RESAMPLES or options["seed"] != SEED:
            return None
        from scoring.reports.figures import report_figures

        found = report_figures(campaigns[0], None, start=False, names=options["names"],
                               options={"ci_method": options["ci_method"], "correlation": options["correlation"]})
        if not found.fresh:
            return None
        return {key: value for key, value in found.report.items() if key not in ("plots", "seconds")}

    @staticmethod
    def _compute(campaigns: list[Campaign], options: dict) -> dict:
        from scoring.reports import agreement as reports

        try:
            study = reports.load_study(campaigns, names=options["names"])
        except reports.ReportError as exc:
            raise CommandError(f"{exc} Use --campaign.") from None
        report = reports.compute(study, n_resamples=options["resamples"], seed=options["seed"], plots=False,
                                 ci_method=options["ci_method"], correlation=options["correlation"])
        report.pop("seconds", None)
        return report
