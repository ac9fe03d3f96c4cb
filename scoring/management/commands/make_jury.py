"""python manage.py make_jury --corpus NAME --name NAME --runs ID,ID[,ID...] --rule majority|median|mean
[--tie lower|higher|unscored] [--no-rounding] [--project NAME]: a jury of two or more finished judge runs on one
corpus and instrument, usable everywhere a run is (``judge_report --judge NAME``, the report pages, the API)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Corpus
from projects.services import ProjectCommand
from scoring.judges import juries
from scoring.judges.models import JudgeRun, Jury


class Command(ProjectCommand, BaseCommand):
    help = ("Make a jury of two or more finished judge runs (the app's own or imported) on one corpus and "
            "instrument, combined per item by a declared rule.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--name", required=True, help="the jury's name (unique in the project)")
        parser.add_argument("--runs", required=True, help="run ids, comma-separated (two or more)")
        parser.add_argument("--rule", required=True, choices=Jury.Rule.values,
                            help="majority vote, or the median or mean of the members' answers")
        parser.add_argument("--tie", choices=Jury.TieRule.values, default=Jury.TieRule.LOWER,
                            help="a tied vote, or a median/mean half-way between two allowed values: the lower "
                                 "value (default), the higher, or leave it unscored")
        parser.add_argument("--no-rounding", action="store_true",
                            help="median/mean: keep the raw figure instead of rounding to the item's grid")
        parser.add_argument("--note", default="")

    def handle(self, *args, **options):
        corpus = Corpus.objects.alive().filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus named {options['corpus']!r} in project {self.project.name!r}.")
        parts = [p.strip().lstrip("#") for p in options["runs"].split(",") if p.strip()]
        bad = [p for p in parts if not p.isdigit() or len(p) > 18]
        if bad:
            raise CommandError(f"--runs takes run ids separated by commas; not an id: {', '.join(bad)}.")
        ids = [int(p) for p in parts]
        found = {run.pk: run for run in JudgeRun.objects.filter(pk__in=ids).select_related("config", "corpus")}
        missing = [str(i) for i in ids if i not in found]
        if missing:
            raise CommandError(f"No judge run #{', #'.join(missing)} in project {self.project.name!r}.")
        try:
            jury = juries.create_jury(options["name"], corpus, [found[i] for i in ids], rule=options["rule"],
                                      tie_rule=options["tie"], round_to_grid=not options["no_rounding"],
                                      note=options["note"])
        except juries.JuryError as exc:
            raise CommandError(str(exc)) from None
        agreement = juries.jurors_agreement(jury)
        self.stdout.write(f"Jury #{jury.pk} {jury.name!r}: runs {', '.join(f'#{i}' for i in ids)}, "
                          f"{jury.get_rule_display().lower()}. {agreement['text']}")
