"""``manage.py import_instrument PATH [--draft]``: a scale version from instrument JSON (README, "Your own
instrument"); every error names the JSON path that is wrong."""

from __future__ import annotations

import os

from django.core.management.base import BaseCommand, CommandError

from annotation.instruments import InstrumentError, import_instrument, read_file
from projects.services import ProjectCommand


class Command(ProjectCommand, BaseCommand):
    help = (
        "Create a scale version from an instrument JSON file: a new scale, or the next version of the scale with the "
        "same slug. Published (and so immutable) unless --draft. Nothing is written if the file has errors; each "
        "error names its JSON path (exit status 1)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="instrument JSON file")
        parser.add_argument("--draft", action="store_true", help="leave the version a draft (edit it in the "
                                                                  "browser, then publish it)")

    def handle(self, *args, path: str, draft: bool, **options):
        if not os.path.isfile(path):
            raise CommandError(f"{path}: no such file.")
        try:
            version, created = import_instrument(read_file(path), draft=draft, source=os.path.basename(path))
        except InstrumentError as exc:
            for error in exc.errors:
                self.stderr.write(error)
            count = len(exc.errors)
            raise CommandError(f"Import refused: {count} error{'s' if count != 1 else ''} in {path}; "
                               "nothing was written.") from None
        if not created:
            self.stdout.write(f"{version} already has this content; nothing was imported.")
            return
        items = version.items.filter(parent__isnull=True).count()
        self.stdout.write(self.style.SUCCESS(
            f"Created {version} ({version.get_status_display().lower()}, {items} items, rates "
            f"{version.scale.get_target_display().lower()}): /scales/{version.scale.slug}/v{version.number}/"))
