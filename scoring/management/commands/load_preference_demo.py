"""python manage.py load_preference_demo [--project NAME]: the demo preference study, in the demo project
("Demo (synthetic)") unless another is named."""

from django.core.management.base import BaseCommand

from annotation import projects
from scoring.preference.demo import load_preference_demo


class Command(BaseCommand):
    help = "Create the demo preference study (run load_demo first for the demo users)."

    def add_arguments(self, parser):
        projects.add_argument(parser)  # default here: the demo project

    def handle(self, *args, **options):
        project = projects.for_command(options["project"]) if options.get("project") else projects.demo_project()
        with projects.working_in(project):
            result = load_preference_demo(project)
        if result["created"]:
            self.stdout.write(f"Demo preference study #{result['study']} created and opened: "
                              f"{result['tasks']} comparison(s) assigned.")
        else:
            self.stdout.write(f"Demo preference study #{result['study']} already exists.")
