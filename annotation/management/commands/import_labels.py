"""``manage.py import_labels PATH --corpus NAME``: legacy labels in the CSV long format, all-or-nothing (judges'
answers that give no score may be imported unscored: ``--skip-unscored``)."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from annotation.importers import ImportRejected
from annotation.label_import import DEFAULT_SCALE, LabelImportError, import_labels, resolve_scale_version
from annotation.models import Corpus
from projects.services import ProjectCommand


class Command(ProjectCommand, BaseCommand):
    help = (
        "Import labels (CSV: dialogue_id,rater,item,value [,rater_kind,judge_run,created,comment,judge_model,prompt,"
        "raw_response]): physicians' labels into a campaign of phase 'imported' (unknown raters become external "
        "raters who cannot log in), an existing judge's scores (rater_kind judge) into an imported judge run per "
        "judge, with the file's name and SHA-256. All-or-nothing: every distinct problem is reported once with how "
        "many lines have it and their first line numbers (the header is line 1), and nothing is written (exit "
        "status 1); with --skip-unscored a judge's answer that gives no score is imported unscored instead, as a "
        "run would leave it, each reported with its line."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names the scale version here; it replaces Django's "show the Django version" option.
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("path", help="CSV file in the long format, with a header line")
        parser.add_argument("--corpus", required=True, help="the corpus the dialogue ids belong to")
        parser.add_argument("--campaign", help='campaign name (default "Imported labels: <file name> on <corpus>"); '
                                               "an existing imported campaign of that name on the corpus is added to")
        parser.add_argument("--scale", default=DEFAULT_SCALE, help=f"scale slug (default {DEFAULT_SCALE})")
        parser.add_argument("--version", dest="scale_version", type=int,
                            help="published scale version number (default: the newest published)")
        parser.add_argument("--random-sample", action="store_true",
                            help="declare that the labelled dialogues are a random sample of the corpus (recorded "
                                 "with the import); prediction-powered model scores in the judge report need it")
        parser.add_argument("--rater-kind", choices=["physicians", "experts", "llm"],
                            help="who the raters are: physicians, other human experts, or LLM scoring iterations "
                                 "(recorded on the campaign; the methods text says so, and 'not recorded' without it)")
        parser.add_argument("--skip-unscored", action="store_true",
                            help="a judge's row whose raw_response gives no score on its item's scale (an off-grid "
                                 "value, no answer for the item) is imported unscored, as a run leaves such an "
                                 "answer, and reported with its line, instead of refusing the file")

    def handle(self, *args, path: str, corpus: str, campaign: str | None, scale: str, scale_version: int | None,
               random_sample: bool = False, skip_unscored: bool = False, rater_kind: str | None = None, **options):
        project = self.project
        target = Corpus.objects.filter(name=corpus.strip(), project=project).first()
        if target is None or target.is_deleted:
            raise CommandError(f'There is no corpus "{corpus}"; import its dialogues first (import_dialogues).')
        if not os.path.isfile(path):
            raise CommandError(f"{path}: no such file.")
        try:
            version = None  # default: the campaign's version, or the newest published Mini-CEX
            if scale != DEFAULT_SCALE or scale_version is not None:
                version = resolve_scale_version(scale, scale_version)
            with open(path, "rb") as handle:
                counts = import_labels(target, handle, file_name=os.path.basename(path), campaign_name=campaign,
                                       scale_version=version, random_sample=random_sample,
                                       skip_unscored=skip_unscored, rater_kind=rater_kind)
        except LabelImportError as exc:
            raise CommandError(str(exc)) from None
        except ImportRejected as rejected:
            for line in rejected.grouped():
                self.stderr.write(line)
            bad_lines = len({e.line for e in rejected.errors})
            raise CommandError(f"Import refused: {bad_lines} bad line{'s' if bad_lines != 1 else ''} in {path}; "
                               "nothing was written.") from None
        units = "answers" if counts.get("target") == "answer" else "dialogues"
        if counts["raters_created"]:
            self.stdout.write(f"Created {counts['raters_created']} external rater(s) (they cannot log in).")
        if counts["labels"]:
            self.stdout.write(self.style.SUCCESS(
                f'Imported {counts["labels"]} labels on {counts["dialogues"]} {units} by {counts["raters"]} raters '
                f'into {"new " if counts["campaign_created"] else ""}campaign "{counts["campaign"]}" '
                f'({counts["assignments"]} submitted assignments, overlap {counts["overlap"]}).'))
        for run in counts.get("judge_runs", []):
            unscored = f', {run["unscored"]} of them unscored' if run.get("unscored") else ""
            self.stdout.write(self.style.SUCCESS(
                f'Imported judge "{run["name"]}"{" (" + run["model"] + ")" if run["model"] else ""}: '
                f'{run["results"]} scores{unscored} on {run["dialogues"]} {units} as run #{run["id"]} '
                f'(/judges/runs/{run["id"]}/; file SHA-256 {counts["sha256"][:12]}...).'))
        for line, reason in counts.get("unscored", []):
            self.stdout.write(f"line {line}: {reason}; imported unscored")
        if random_sample:
            self.stdout.write("Recorded: these labels come from a random sample of the corpus (your declaration).")
        if counts["labels"] and not counts.get("rater_kind"):
            self.stdout.write("Who the raters are is not recorded (--rater-kind physicians, experts or llm): the "
                              "methods text says \"not recorded\".")
