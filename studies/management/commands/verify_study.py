"""python manage.py verify_study FILE [--differences]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from studies.archive import ArchiveError
from studies.verify import verify_study


class Command(BaseCommand):
    help = ("Recompute every figure of a study archive with this instance's code from the archived data and "
            "settings (in a throwaway project, rolled back) and print figure, archived value, recomputed value and "
            "whether they are equal at printed precision. Exits 0 only when every figure is equal; an archive "
            "whose files do not match its manifest is refused.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the archive (.zip) written by export_study")
        parser.add_argument("--differences", action="store_true", help="print only the figures that differ")

    def handle(self, *args, **options):
        try:
            checks = verify_study(options["file"])
        except ArchiveError as exc:
            raise CommandError(f"Refused: {exc}") from None
        shown = [c for c in checks if not c.equal] if options["differences"] else checks
        width = min(100, max((len(c.figure) for c in shown), default=6))
        self.stdout.write(f"{'figure':<{width}}  {'archived':>14}  {'recomputed':>14}  equal")
        for c in shown:
            self.stdout.write(f"{c.figure:<{width}}  {c.archived:>14}  {c.recomputed:>14}  "
                              f"{'yes' if c.equal else 'NO'}")
        differing = [c for c in checks if not c.equal]
        if differing:
            raise CommandError(f"{len(differing)} of {len(checks)} figures differ (first: {differing[0].figure}).")
        self.stdout.write(self.style.SUCCESS(f"All {len(checks)} figures equal."))
