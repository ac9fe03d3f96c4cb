"""``manage.py export_instrument SLUG [--version N] [--output PATH]``: a scale version as instrument JSON."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.instruments import export_instrument
from annotation.models import Scale
from projects.services import ProjectCommand


class Command(ProjectCommand, BaseCommand):
    help = "Write a scale version in the instrument JSON format that import_instrument reads (default: the newest " \
           "published version, else the newest draft)."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names the scale version here; it replaces Django's "show the Django version" option.
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("slug", help="the scale's slug, e.g. llm-mini-cex")
        parser.add_argument("--version", dest="number", type=int, help="version number")
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args, slug: str, number: int | None, output: str | None, **options):
        visible = Scale.objects.all()  # the scoped manager: the project's scales and the published library
        scale = visible.filter(slug=slug).first()
        if scale is None:
            known = ", ".join(visible.order_by("slug").values_list("slug", flat=True))
            raise CommandError(f'There is no scale "{slug}" (scales: {known}).')
        versions = scale.versions.all()
        newest = versions.filter(status="published").order_by("-number").first() or versions.order_by("-number").first()
        version = versions.filter(number=number).first() if number else newest
        if version is None:
            raise CommandError(f'Scale "{slug}" has no version {number}.' if number else f'"{slug}" has no version.')
        text = json.dumps(export_instrument(version), ensure_ascii=False, indent=2) + "\n"
        if output:
            with open(output, "w", encoding="utf-8") as handle:
                handle.write(text)
            self.stderr.write(f"Wrote {version} to {output}.")
        else:
            self.stdout.write(text, ending="")
