"""python manage.py load_methods_demo [--project NAME]: the demo study's *Methods and results* page written now, as
its worker would (run by ``load_demo`` after every other demo, so that no demo page computes on first view)."""

from django.core.management.base import BaseCommand
from django.utils.translation import gettext

from projects import scoping, services
from studies.figures import compute_now


class Command(BaseCommand):
    help = ("Write the demo study's Methods and results page now (a worker writes it when the study changes). Run by "
            "load_demo after every other demo; safe to run again: a current page is kept.")

    def add_arguments(self, parser):
        services.add_argument(parser)  # default here: the demo project

    def handle(self, *args, **options):
        project = services.for_command(options["project"]) if options.get("project") else services.demo_project()
        with scoping.in_project(project):
            job = compute_now(project)
        self.stdout.write(gettext("Methods page of %(project)s: %(status)s.")
                          % {"project": repr(project.name), "status": job.get_status_display()})
