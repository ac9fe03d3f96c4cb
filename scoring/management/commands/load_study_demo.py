"""python manage.py load_study_demo [--project NAME]: the finished demo study's scoring side (no LLM calls), in the
demo project ("Demo (synthetic)") unless another is named."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.utils.translation import gettext

from annotation.demo import SYNTHETIC_PHYSICIANS
from annotation.models import Campaign
from projects import scoping, services
from scoring.judges import figures as judge_reports
from scoring.judges.demo import load_judge_demo
from scoring.preference.demo import load_finished_preference_demo
from scoring.reports.figures import compute_now


class Command(BaseCommand):
    help = ("Finish the demo study: two synthetic judge runs (per item, per dialogue) with stored answers, a "
            "locked and unblinded preference study, and the finished campaign's agreement report, the runs' judge "
            "reports and their side-by-side comparison computed for the demo coordinator and analyst. Run "
            "load_demo first. Safe to run again; makes no LLM calls.")

    def add_arguments(self, parser):
        services.add_argument(parser)  # default here: the demo project

    def handle(self, *args, **options):
        project = services.for_command(options["project"]) if options.get("project") else services.demo_project()
        with scoping.in_project(project):
            self._load(project)

    def _load(self, project):
        runs = load_judge_demo(project)
        preference = load_finished_preference_demo([username for username, _ in SYNTHETIC_PHYSICIANS],
                                                   project=project)
        reports = self._reports(runs)
        from scoring.preference.figures import compute_blinded_now as compute_blinded
        from scoring.preference.figures import compute_now as compute_results
        from scoring.preference.models import PreferenceStudy

        for study in PreferenceStudy.objects.alive().filter(status=PreferenceStudy.Status.UNBLINDED):
            if compute_results(study).status == "succeeded":
                reports.add(f"preference {study.pk}")
        for study in PreferenceStudy.objects.alive().filter(status=PreferenceStudy.Status.LOCKED):
            compute_blinded(study)  # the page's figures before unblinding
        self.stdout.write(gettext("Demo study finished: %(runs)s synthetic judge run(s), preference study #%(study)s "
                                  "unblinded, %(reports)s report(s) ready.")
                          % {"runs": len(runs), "study": preference["study"], "reports": len(reports)})

    def _reports(self, runs) -> set:
        """Every demo campaign's agreement report and the judge runs' reports against the campaigns they can be
        compared with, for the demo coordinator and analyst: no demo page computes a report on first view."""
        from scoring.judges import comparison_figures as comparison
        from scoring.judges.figures import comparable_campaigns

        reports = set()
        users = list(get_user_model().objects.filter(username__in=["coordinator", "analyst"]))
        for campaign in Campaign.objects.alive().order_by("pk"):
            for user in users:  # campaigns that allow names share one report between both users
                job = compute_now(campaign, user)
                if job.status == "succeeded":
                    reports.add(job.pk)
            archived = compute_now(campaign, None, names=False)  # the methods page's and the archive's
            if archived.status == "succeeded":
                reports.add(archived.pk)
        for run in runs:
            judge_reports.stored_judge_scores(run)  # the run page's own scores
            for campaign in comparable_campaigns(run):
                for user in users:
                    judged = judge_reports.compute_now(run, campaign, user)
                    if judged.status == "succeeded":
                        reports.add(judged.pk)
                    for other in comparison.partners(run):  # the comparisons the run's page links to
                        compared = comparison.compute_now(run, other, campaign, user)
                        if compared.status == "succeeded":
                            reports.add(compared.pk)
                # without names: the methods page and the study archive read it, whoever looks
                archived = judge_reports.compute_now(run, campaign, None, names=False)
                if archived.status == "succeeded":
                    reports.add(archived.pk)
        return reports
