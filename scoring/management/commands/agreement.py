"""python manage.py agreement --corpus NAME [--campaign NAME] [--format json|csv] [--project NAME]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Corpus
from projects.services import ProjectCommand
from scoring.reports import agreement as reports
from scoring.reports.agreement_csv import csv_text


class Command(ProjectCommand, BaseCommand):
    help = "Print the agreement report (the same figures as the browser report) as JSON or CSV."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--campaign", help="campaign name (default: every campaign on the corpus)")
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--names", action="store_true", help="show rater usernames instead of pseudonyms")
        parser.add_argument("--resamples", type=int, default=reports.N_RESAMPLES)
        parser.add_argument("--seed", type=int, default=20240501)
        parser.add_argument("--ci-method", choices=list(reports.CI_METHODS), default="percentile",
                            help="bootstrap intervals: percentile (default) or bca")
        parser.add_argument("--correlation", choices=list(reports.CORRELATIONS), default="pearson",
                            help="correlations for reliability and validity: pearson (phi, default) or tetrachoric")

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
        try:
            study = reports.load_study(list(campaigns), names=options["names"])
        except reports.ReportError as exc:
            raise CommandError(f"{exc} Use --campaign.") from None
        report = reports.compute(study, n_resamples=options["resamples"], seed=options["seed"], plots=False,
                                 ci_method=options["ci_method"], correlation=options["correlation"])
        report.pop("seconds", None)
        if options["format"] == "json":
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
        else:
            self.stdout.write(csv_text(report), ending="")
