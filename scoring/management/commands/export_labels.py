"""``manage.py export_labels --corpus NAME --format csv|xlsx|json|sav --out PATH``: every label of a corpus."""

from __future__ import annotations

import os
import tempfile

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Corpus
from projects.services import ProjectCommand
from scoring.reports.exports import (
    FORMATS,
    STREAMABLE,
    ExportError,
    campaigns_in_scope,
    label_rows,
    may_see_names,
    write_csv,
    write_json,
    write_sav,
    write_xlsx,
)


class Command(ProjectCommand, BaseCommand):
    help = (
        "Export every label of a corpus (physicians' and judges') in the CSV long format of the brief: "
        "dialogue_id,rater,item,value,rater_kind,judge_run,created,comment,status; also as XLSX, JSON or SPSS .sav. "
        "Raters appear under stable pseudonyms; --names gives usernames, only for coordinators/admins (--as) or "
        "when every included campaign allows names. A CSV of one campaign's physician labels reads back with "
        "import_labels."
    )

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--campaign", help="only this campaign's labels (default: every campaign on the corpus)")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default="csv", help="output format (csv)")
        parser.add_argument("--out", required=True, help='output file; "-" writes CSV or JSON to standard output')
        parser.add_argument("--names", action="store_true", help="usernames instead of pseudonyms (see above)")
        parser.add_argument("--submitted-only", action="store_true",
                            help="only the physicians' labels of submitted dialogues (what the reports count); "
                                 "otherwise every saved label, its status column saying which are submitted")
        parser.add_argument("--as", dest="as_user", metavar="USERNAME",
                            help="the user the export is made for; decides whether --names is allowed")

    def handle(self, *args, corpus: str, campaign: str | None, fmt: str, out: str, names: bool,
               as_user: str | None, submitted_only: bool = False, **options):
        project = self.project
        target = Corpus.objects.filter(name=corpus.strip()).first()
        if target is None or target.is_deleted:
            raise CommandError(f'There is no corpus "{corpus}" in project "{project.name}".')
        chosen = None
        if campaign is not None:
            chosen = Campaign.objects.filter(name=campaign.strip()).first()
            if chosen is None or chosen.is_deleted:
                raise CommandError(f'There is no campaign "{campaign}" in project "{project.name}".')
            if chosen.corpus_id != target.pk:
                raise CommandError(f'Campaign "{chosen}" rates corpus "{chosen.corpus}", not "{target}".')
        user = None
        if as_user is not None:
            user = get_user_model().objects.filter(username=as_user).first()
            if user is None or not user.is_active:
                raise CommandError(f'There is no active user "{as_user}".')
        if names and not may_see_names(user, campaigns_in_scope(target, chosen)):
            who = f'user "{as_user}"' if user else "an export without --as"
            raise CommandError(
                f"--names refused: {who} may not see raters' names. Names are for coordinators and admins "
                "(--as USERNAME) or for campaigns that allow names; without --names raters appear under their "
                "pseudonyms.")
        if out == "-" and fmt not in STREAMABLE:
            raise CommandError(f"--out - (standard output) works for {' and '.join(STREAMABLE)}; "
                               f"{fmt} needs a file path.")

        rows = label_rows(target, chosen, names=names, submitted_only=submitted_only)
        try:
            count = self._write(rows, fmt, out)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        where = "standard output" if out == "-" else out
        shown = "usernames" if names else "pseudonyms"
        self.stderr.write(f"Wrote {count} label rows ({fmt}, raters as {shown}) to {where}.")

    def _write(self, rows, fmt: str, out: str) -> int:
        if out == "-":
            stream = _Raw(self.stdout)
            return write_csv(rows, stream) if fmt == "csv" else write_json(rows, stream)
        directory = os.path.dirname(os.path.abspath(out))
        if not os.path.isdir(directory):
            raise CommandError(f"{out}: the directory {directory} does not exist.")
        # Write next to the target and rename at the end: a failed export leaves no half-written file.
        fd, temp = tempfile.mkstemp(prefix=".export-", suffix=f".{fmt}", dir=directory)
        os.close(fd)
        try:
            if fmt in STREAMABLE:
                with open(temp, "w", encoding="utf-8", newline="") as handle:
                    count = write_csv(rows, handle) if fmt == "csv" else write_json(rows, handle)
            elif fmt == "xlsx":
                count = write_xlsx(rows, temp)
            else:
                count = write_sav(rows, temp)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)  # the mode a plain open() would give, not mkstemp's 0600
            os.replace(temp, out)
        finally:
            if os.path.exists(temp):
                os.unlink(temp)
        return count


class _Raw:
    """A text sink on the command's stdout that adds no line endings of its own."""

    def __init__(self, wrapper):
        self.wrapper = wrapper

    def write(self, text: str) -> int:
        self.wrapper.write(text, ending="")
        return len(text)

    def flush(self) -> None:
        self.wrapper.flush()
