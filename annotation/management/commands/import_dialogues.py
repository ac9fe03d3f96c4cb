"""``manage.py import_dialogues PATH --corpus NAME [--update]``: JSON Lines (DESIGN.md section 5), all-or-nothing."""

from __future__ import annotations

import argparse
import os

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation.importers import ImportRejected, LineError, import_dialogue_file, max_import_bytes
from annotation.models import Corpus
from projects.services import ProjectCommand


def format_error(error: LineError) -> str:
    """"line N: message", or "file: message" for problems with the whole file (line 0)."""
    return str(error) if error.line > 0 else f"file: {error.message}"


class Command(ProjectCommand, BaseCommand):
    help = (
        "Import dialogues from a JSON Lines file into a corpus (created if missing). All-or-nothing: if any line "
        "is bad, every bad line is reported as 'line N: message' and nothing is written (exit status 1)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="JSON Lines file, one dialogue a line")
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--update", action="store_true",
                            help="replace dialogues whose id is already in the corpus (and re-run the privacy filter)")
        parser.add_argument("--create-corpus", action=argparse.BooleanOptionalAction, default=True,
                            help="create the corpus if it does not exist (default); --no-create-corpus refuses")

    def handle(self, *args, path: str, corpus: str, update: bool, create_corpus: bool, **options):
        project = self.project
        name = corpus.strip()
        if not name:
            raise CommandError("--corpus needs a name.")
        limit = Corpus._meta.get_field("name").max_length
        if len(name) > limit or "\x00" in name:
            raise CommandError(f"--corpus: a name of at most {limit} characters, without NUL characters.")
        if not os.path.isfile(path):
            raise CommandError(f"{path}: no such file.")
        existing = Corpus.objects.filter(name=name, project=project).first()
        if existing is not None and existing.is_deleted:
            raise CommandError(f'Corpus "{name}" was deleted; import into another corpus.')
        if existing is None and not create_corpus:
            raise CommandError(f'Corpus "{name}" does not exist (leave out --no-create-corpus to create it).')
        try:
            with transaction.atomic():  # a refused import also leaves no new, empty corpus behind
                target = existing or Corpus.objects.create(name=name, project=project, description=f"Imported from "
                                                                                   f"{os.path.basename(path)}.")
                counts = import_dialogue_file(target, path, update=update, max_bytes=max_import_bytes())
        except ImportRejected as rejected:
            for error in rejected.errors:
                self.stderr.write(format_error(error))
            bad_lines = len({e.line for e in rejected.errors})
            raise CommandError(f"Import refused: {bad_lines} bad line{'s' if bad_lines != 1 else ''} in {path}; "
                               "nothing was written.") from None
        if existing is None:
            self.stdout.write(f'Created corpus "{name}".')
        self.stdout.write(self.style.SUCCESS(
            f'Imported into corpus "{name}": {counts["created"]} created, {counts["updated"]} updated, '
            f'{counts["flagged"]} flagged by the privacy filter for review.'))
