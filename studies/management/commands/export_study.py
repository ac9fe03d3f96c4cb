"""python manage.py export_study --project NAME [--out FILE] [--user NAME] [--license URL]"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from projects.services import ProjectCommand
from studies.archive import ArchiveError
from studies.export import archive_name, export_study


class Command(ProjectCommand, BaseCommand):
    help = ("Write the project's whole study to one archive (a zip laid out as an RO-Crate): instruments, corpora "
            "(redacted), campaigns, pseudonymised labels, judge runs, settings and every figure, with a SHA-256 "
            "manifest. Refused while a dialogue awaits privacy review.")

    def add_arguments(self, parser):
        parser.add_argument("--out", help="the archive's path (default: study-<project>-<date>.zip here)")
        parser.add_argument("--user", help="the account the audit trail names as exporter (default: none, a "
                                           "command)")
        parser.add_argument("--license", default="", metavar="URL",
                            help="the licence of the study's data, as a URL (e.g. "
                                 "https://creativecommons.org/licenses/by/4.0/); the archive's RO-Crate says "
                                 "'Licence not recorded' without it")

    def handle(self, *args, **options):
        actor = None
        if options["user"]:
            actor = get_user_model().objects.filter(username=options["user"]).first()
            if actor is None:
                raise CommandError(f"No user named {options['user']!r}.")
        out = options["out"] or archive_name(self.project)
        try:
            summary = export_study(self.project, out, actor, license_url=options["license"])
        except ArchiveError as exc:
            raise CommandError(str(exc)) from None
        tables = summary["tables"]
        self.stdout.write(
            f"Wrote {summary['path']}: {summary['files']} files, {tables.get('data/dialogues.csv', 0)} texts, "
            f"{tables.get('data/labels.csv', 0)} labels, {tables.get('data/judge_results.csv', 0)} judge answers, "
            f"{summary['figures']} figures. SHA-256 {summary['sha256']}")
