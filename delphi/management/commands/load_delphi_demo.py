from django.core.management.base import BaseCommand
from django.utils.translation import gettext

from delphi.demo import load_delphi_demo


class Command(BaseCommand):
    help = ("Create the demo Delphi study (rounds 1 and 2 answered and closed, round 3 prepared). Safe to run "
            "again.")

    def handle(self, *args, **options):
        study = load_delphi_demo()
        if study is None:
            self.stderr.write(gettext("The Mini-CEX v1 is missing: run `manage.py migrate` first."))
            return
        from delphi.services import compute_statistics_now
        from projects.scoping import in_project

        with in_project(study.project_id):  # each round's statistics, so no demo page computes them on first view
            for rnd in study.rounds.all():
                compute_statistics_now(rnd)
        self.stdout.write(gettext("Demo Delphi study ready: %(title)s (%(url)s)")
                          % {"title": study.title, "url": f"/delphi/{study.pk}/"})
