"""python manage.py load_generation_demo [--project NAME]: the demo patient cases for dialogue generation (no LLM
calls), in the demo project ("Demo (synthetic)") unless another is named."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils.translation import gettext

from projects import scoping, services
from scoring.generation import cases
from scoring.generation.models import CaseSet

DEMO_FILE = Path(__file__).resolve().parents[2] / "generation" / "fixtures" / "generation_demo_cases.jsonl"
DEMO_NAME = "Demo cases (self-reports, templates, OSCE)"


def load_generation_demo(project=None) -> int:
    """Import the demo case set once into ``project`` (default: the demo project); returns the number of cases
    imported now (0 when already there)."""
    project = project or services.demo_project()
    with scoping.in_project(project), transaction.atomic():
        if CaseSet.objects.filter(name=DEMO_NAME).exists():
            return 0
        case_set = CaseSet.objects.create(
            project=project, name=DEMO_NAME, source=DEMO_FILE.name,
            description="Two self-reports, a self-report template (4 sampled cases) and two AgentClinic-style OSCE "
                        "cases with hidden diagnoses. Written for the demo; not study data.")
        return cases.import_case_file(case_set, DEMO_FILE)["created"]


class Command(BaseCommand):
    help = "Import the demo patient cases for dialogue generation. Safe to run again; makes no LLM calls."

    def add_arguments(self, parser):
        services.add_argument(parser)  # default here: the demo project

    def handle(self, *args, **options):
        project = services.for_command(options["project"]) if options.get("project") else services.demo_project()
        with scoping.in_project(project):
            created = load_generation_demo(project)
        if created:
            self.stdout.write(gettext("Demo generation cases ready: %(created)s case(s) in %(name)s.")
                              % {"created": created, "name": repr(DEMO_NAME)})
        else:
            self.stdout.write(gettext("Demo generation cases already loaded (%(name)s).") % {"name": repr(DEMO_NAME)})
