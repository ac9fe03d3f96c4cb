"""python manage.py load_study_demo [--project NAME]: the finished demo study's scoring side (no LLM calls), in the
demo project ("Demo (synthetic)") unless another is named."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from annotation import projects
from annotation.demo import DEMO_FINISHED, SYNTHETIC_PHYSICIANS
from annotation.models import Campaign
from scoring.judges import service as judge_reports
from scoring.judges.demo import load_judge_demo
from scoring.preference.demo import load_finished_preference_demo
from scoring.reports.service import compute_now


class Command(BaseCommand):
    help = ("Finish the demo study: two synthetic judge runs (per item, per dialogue) with stored answers, a "
            "locked and unblinded preference study, and the finished campaign's agreement report and the per-item "
            "run's judge report computed for the demo coordinator and analyst. Run load_demo first. Safe to run "
            "again; makes no LLM calls.")

    def add_arguments(self, parser):
        projects.add_argument(parser)  # default here: the demo project

    def handle(self, *args, **options):
        project = projects.for_command(options["project"]) if options.get("project") else projects.demo_project()
        with projects.working_in(project):
            self._load(project)

    def _load(self, project):
        runs = load_judge_demo(project)
        preference = load_finished_preference_demo([username for username, _ in SYNTHETIC_PHYSICIANS],
                                                   project=project)
        campaign = Campaign.objects.alive().in_project(project).filter(name=DEMO_FINISHED).first()
        reports = set()
        if campaign is not None:
            # The demo campaign allows names (made-up raters), so both users share one report.
            for user in get_user_model().objects.filter(username__in=["coordinator", "analyst"]):
                job = compute_now(campaign, user)
                if job.status == "succeeded":
                    reports.add(job.pk)
                if runs:  # the home page's "Synthetic LLM judge vs physicians" opens this one
                    judged = judge_reports.compute_now(runs[0], campaign, user)
                    if judged.status == "succeeded":
                        reports.add(judged.pk)
        self.stdout.write(f"Demo study finished: {len(runs)} synthetic judge run(s), preference study "
                          f"#{preference['study']} unblinded, {len(reports)} report(s) ready.")
