"""python manage.py import_study FILE --project NAME"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from studies.archive import ArchiveError
from studies.load import import_study


class Command(BaseCommand):
    help = ("Load a study archive into a NEW project (all or nothing), after checking every file against the "
            "archive's manifest: for inspection, browsing and re-analysis. Raters come back as their pseudonyms.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the archive (.zip) written by export_study")
        parser.add_argument("--project", required=True, help="the name of the new project to load it into")

    def handle(self, *args, **options):
        try:
            loaded = import_study(options["file"], options["project"])
        except ArchiveError as exc:
            raise CommandError(str(exc)) from None
        counts = ", ".join(f"{n} {what}" for what, n in loaded.counts.items() if n)
        self.stdout.write(f"Loaded into the new project {loaded.project.name!r}: {counts}. Add its members with "
                          f"`manage.py project add {loaded.project.name!r} USER ROLE`.")
