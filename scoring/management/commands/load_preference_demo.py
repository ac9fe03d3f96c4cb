"""python manage.py load_preference_demo [--project NAME]: the demo preference study, in the demo project
("Demo (synthetic)") unless another is named."""

from django.core.management.base import BaseCommand
from django.utils.translation import gettext

from projects import scoping, services
from scoring.preference.demo import load_preference_demo


class Command(BaseCommand):
    help = "Create the demo preference study (run load_demo first for the demo users)."

    def add_arguments(self, parser):
        services.add_argument(parser)  # default here: the demo project

    def handle(self, *args, **options):
        project = services.for_command(options["project"]) if options.get("project") else services.demo_project()
        with scoping.in_project(project):
            result = load_preference_demo(project)
        if result["created"]:
            self.stdout.write(gettext("Demo preference study #%(study)s created and opened: %(tasks)s comparison(s) "
                                      "assigned.") % {"study": result["study"], "tasks": result["tasks"]})
        else:
            self.stdout.write(gettext("Demo preference study #%(study)s already exists.") % {"study": result["study"]})
