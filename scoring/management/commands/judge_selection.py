"""python manage.py judge_selection --corpus NAME --campaign NAME [--format json|csv|html] [--held-out 0.3]
[--seed N] [--juries NAME,NAME] [--out FILE] [--project NAME]: which judge run or jury may replace the physicians on
which item, and at what cost (:mod:`scoring.judges.selection`).

Without options that change the table (held-out share, seed, resamples, juries, verdict settings) it gives the
campaign's selection with its stored settings (:mod:`scoring.judges.selection_figures`, what the selection page shows):
the stored table when it is current, else computed in this process and stored for the page. With any of them it
computes the table in this process with those options (the stored settings fill the ones left out) and stores
nothing."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Corpus
from projects.services import ProjectCommand
from scoring.judges import selection_figures
from scoring.judges.forms import VerdictSettingsForm
from scoring.judges.models import Jury
from scoring.judges.report_csv import csv_text
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
        parser.add_argument("--held-out", type=float,
                            help="share of the physician-labelled dialogues held out (default: the campaign's "
                                 f"stored setting, at first {DEFAULT_HELD_OUT})")
        parser.add_argument("--seed", type=int, help="seed of the split and the bootstrap (default: the campaign's "
                                                     f"stored setting, at first {DEFAULT_SEED})")
        parser.add_argument("--juries", help="only these saved juries (names, comma-separated) besides the runs")
        parser.add_argument("--no-tried-juries", action="store_true",
                            help="do not try every jury of two or three runs (only runs and saved juries)")
        parser.add_argument("--resamples", type=int, help="bootstrap resamples (default 1000)")
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
        stored = selection_figures.settings_of(campaign)
        verdict = {"floor": 0.40, "min_dialogues": 30, "margin": 0.10, "ci_method": "percentile", **stored.verdict}
        query = {key: str(verdict[key]) for key in ("floor", "min_dialogues", "margin")} | {"ci": verdict["ci_method"]}
        query |= {key: str(options[key]) for key in ("floor", "min_dialogues", "margin") if options[key] is not None}
        form = VerdictSettingsForm.from_query(query)
        if not form.is_valid():
            raise CommandError("Invalid settings: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        resamples = options["resamples"] if options["resamples"] is not None else selection_figures.RESAMPLES
        if not 10 <= resamples <= 100000:
            raise CommandError("--resamples must be between 10 and 100000.")
        named = None
        if options["juries"]:
            names = [n.strip() for n in options["juries"].split(",") if n.strip()]
            named = list(Jury.objects.alive().filter(corpus=corpus, name__in=names))
            unknown = sorted(set(names) - {j.name for j in named})
            if unknown:
                raise CommandError(f"No jury named {', '.join(map(repr, unknown))} on corpus {corpus.name!r}.")
        names = may_see_names(None, [campaign])
        changed = [key for key in ("held_out", "seed", "resamples", "juries", "floor", "min_dialogues", "margin")
                   if options[key] is not None] + (["no_tried_juries"] if options["no_tried_juries"] else [])
        try:
            if changed:
                result = judge_selection(
                    campaign, verdict=form.settings(),
                    held_out_share=stored.held_out_share if options["held_out"] is None else options["held_out"],
                    seed=stored.seed if options["seed"] is None else options["seed"], n_resamples=resamples,
                    juries=named, all_juries=False if options["no_tried_juries"] else None, names=names)
            else:
                job = selection_figures.compute_now(campaign, None, names=names)
                if job.status != job.Status.SUCCEEDED:
                    raise SelectionError(job.error.split(": ", 1)[-1] or "the selection could not be computed")
                result = job.result
                if "error" in result:
                    raise SelectionError(result["error"])
        except (SelectionError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "json":
            text = json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False)
        elif options["format"] == "csv":
            text = csv_text(selection_rows(result))
        else:
            from django.template.loader import render_to_string
            from django.utils import timezone

            from scoring.reports.views import inline_css

            text = render_to_string("scoring/judge_selection_standalone.html", {
                "campaign": campaign, "selection": result, "generated": timezone.now(), "css": inline_css()})
        ReportCommand._write(self, text, options, f"the judge selection for {campaign.name!r}")
