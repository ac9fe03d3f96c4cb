"""python manage.py judge_selection --corpus NAME --campaign NAME [--format json|csv|html] [--held-out 0.3]
[--seed N] [--juries NAME,NAME] [--out FILE] [--project NAME]: which judge run or jury may replace the physicians on
which item, and at what cost (:mod:`scoring.judges.selection`)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Corpus
from projects.services import ProjectCommand
from scoring.judges.forms import VerdictSettingsForm
from scoring.judges.models import Jury
from scoring.judges.selection import DEFAULT_HELD_OUT, DEFAULT_SEED, SelectionError, judge_selection, selection_rows
from scoring.management.commands.judge_report import Command as ReportCommand
from scoring.reports.exports import may_see_names


class Command(ProjectCommand, BaseCommand):
    help = ("The judge selection table of a campaign: every finished run and jury against its physicians, per item "
            "the verdict, agreement, cost and time per 1,000 dialogues, and the cheapest candidate that may replace "
            "the physicians, confirmed on held-out dialogues.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--campaign", required=True, help="campaign name on the corpus")
        parser.add_argument("--format", choices=["json", "csv", "html"], default="json")
        parser.add_argument("--out", help="write to this file instead of standard output")
        parser.add_argument("--held-out", type=float, default=DEFAULT_HELD_OUT,
                            help=f"share of the physician-labelled dialogues held out (default {DEFAULT_HELD_OUT})")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the split and the bootstrap")
        parser.add_argument("--juries", help="only these saved juries (names, comma-separated) besides the runs")
        parser.add_argument("--no-tried-juries", action="store_true",
                            help="do not try every jury of two or three runs (only runs and saved juries)")
        parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
        parser.add_argument("--floor", type=float, help="reliability floor (default 0.40)")
        parser.add_argument("--min-dialogues", type=int, help="minimum dialogues for a verdict (default 30)")
        parser.add_argument("--margin", type=float, help="non-inferiority margin (default 0.10)")

    def handle(self, *args, **options):
        corpus = Corpus.objects.alive().filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus named {options['corpus']!r} in project {self.project.name!r}.")
        campaign = (Campaign.objects.alive().filter(corpus=corpus, name=options["campaign"])
                    .select_related("corpus", "scale_version").first())
        if campaign is None:
            raise CommandError(f"No campaign named {options['campaign']!r} on corpus {corpus.name!r}.")
        query = {key: str(options[key]) for key in ("floor", "min_dialogues", "margin") if options[key] is not None}
        form = VerdictSettingsForm.from_query(query)
        if not form.is_valid():
            raise CommandError("Invalid settings: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        if not 10 <= options["resamples"] <= 100000:
            raise CommandError("--resamples must be between 10 and 100000.")
        named = None
        if options["juries"]:
            names = [n.strip() for n in options["juries"].split(",") if n.strip()]
            named = list(Jury.objects.alive().filter(corpus=corpus, name__in=names))
            unknown = sorted(set(names) - {j.name for j in named})
            if unknown:
                raise CommandError(f"No jury named {', '.join(map(repr, unknown))} on corpus {corpus.name!r}.")
        try:
            result = judge_selection(campaign, verdict=form.settings(), held_out_share=options["held_out"],
                                     seed=options["seed"], n_resamples=options["resamples"], juries=named,
                                     all_juries=False if options["no_tried_juries"] else None,
                                     names=may_see_names(None, [campaign]))
        except (SelectionError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False)
        elif options["format"] == "csv":
            text = ReportCommand._csv(selection_rows(result))
        else:
            from django.template.loader import render_to_string
            from django.utils import timezone

            from scoring.reports.views import inline_css

            text = render_to_string("scoring/judge_selection_standalone.html", {
                "campaign": campaign, "selection": result, "generated": timezone.now(), "css": inline_css()})
        ReportCommand._write(self, text, options, f"the judge selection for {campaign.name!r}")
