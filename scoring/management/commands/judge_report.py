"""python manage.py judge_report --corpus NAME [--campaign NAME] --judge RUN_ID_OR_RATER [--format json|csv|html]
[--out FILE] [--project NAME]: the judge-vs-physicians report for scripts, the same JSON as the API
(/api/judge-runs/<id>/report/); with ``--scores`` the judge's own scores instead, no physicians needed (per model and
criterion the mean with its CI, and Table 2 of repeated answers: the same JSON as /api/judge-runs/<id>/scores/)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Campaign, Corpus
from projects.services import ProjectCommand
from scoring.judges.figures import comparable_campaigns, is_jury
from scoring.judges.forms import VerdictSettingsForm
from scoring.judges.models import JudgeRun, Jury
from scoring.judges.names import judge_rater_name, jury_rater_name
from scoring.judges.report_csv import csv_rows, csv_text, score_rows
from scoring.reports.exports import may_see_names


def source_label(source) -> str:
    """"Run #12" or "Jury #3 (name)" (:func:`scoring.judges.report.source_label`, without loading pandas)."""
    return f"Jury #{source.pk} ({source.name})" if is_jury(source) else f"Run #{source.pk}"


def find_jury(corpus: Corpus, judge: str) -> Jury | None:
    """A live jury on ``corpus`` by "jury:ID", by its name, or by its rater name in exports ("panel (jury 3)")."""
    text = judge.strip()
    juries = Jury.objects.alive().filter(corpus=corpus).select_related("corpus")
    if text.lower().startswith("jury:"):
        number = text[5:].strip().lstrip("#")
        jury = juries.filter(pk=int(number)).first() if number.isdigit() and len(number) < 19 else None
        if jury is None:
            raise CommandError(f"Corpus {corpus.name!r} has no jury #{number}.")
        return jury
    return next((j for j in juries.order_by("pk") if text in (j.name, jury_rater_name(j))), None)


def find_run(corpus: Corpus, judge: str) -> JudgeRun | Jury:
    """A run on ``corpus`` by id ("12", "#12") or by its judge's name as pages and exports show it ("MedGPT judge",
    or "gpt-4o per-item (run 12)"), or a jury ("jury:3", or its name); CommandError naming the candidates when none
    or several match."""
    jury = find_jury(corpus, judge)
    if jury is not None:
        return jury
    runs = (JudgeRun.objects.filter(corpus=corpus).select_related("config", "corpus")
            .order_by("pk"))
    text = judge.strip().lstrip("#")
    if text.isdigit():
        run = runs.filter(pk=int(text)).first()
        if run is None:
            raise CommandError(f"Corpus {corpus.name!r} has no judge run #{text}.")
        return run
    matches = [run for run in runs if judge.strip() in (run.name, judge_rater_name(run))]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(f"#{run.pk} {run.name}" for run in runs) or "none"
    if not matches:
        raise CommandError(f"No judge run named {judge!r} on corpus {corpus.name!r} (runs: {known}).")
    raise CommandError(f"{len(matches)} runs are named {judge!r}: give the run id (runs: "
                       + ", ".join(f"#{run.pk}" for run in matches) + ").")


def find_campaign(corpus: Corpus, run: JudgeRun, name: str | None) -> Campaign:
    """The campaign named ``name`` on the corpus, or the only one rating it on the run's scale version."""
    campaigns = (Campaign.objects.alive().filter(corpus=corpus)
                 .select_related("scale_version"))
    if name:
        campaign = campaigns.filter(name=name).first()
        if campaign is None:
            raise CommandError(f"No campaign named {name!r} on corpus {corpus.name!r}.")
        return campaign
    fitting = [c for c in comparable_campaigns(run) if c.corpus_id == corpus.pk]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        raise CommandError(f"No campaign rates corpus {corpus.name!r} on the judge's scale version: the report "
                           "compares the judge with physicians' labels (import them with import_labels); --scores "
                           "gives the judge's own scores and Table 2 without them.")
    raise CommandError("Several campaigns rate this corpus on the judge's scale version; choose one with --campaign ("
                       + ", ".join(repr(c.name) for c in fitting) + ").")


def stored_report(run, campaign: Campaign, verdict, names: bool) -> dict | None:
    """The stored report of ``run`` against ``campaign`` with ``verdict`` settings and the name rule when it is of the
    current labels and answers (:func:`scoring.judges.figures.report_figures`), else None. A report of a campaign
    the run cannot be compared with is never stored: None, and the computation says why."""
    from scoring.judges.figures import report_figures

    if campaign.corpus_id != run.corpus_id:
        return None
    found = report_figures(run, campaign, None, verdict, start=False, names=names)
    return found.report if found.fresh else None


class Command(ProjectCommand, BaseCommand):
    # A report for scripts: the system checks (they load every URL, view and the API schema) are `manage.py check`'s.
    requires_system_checks: list[str] = []
    help = ("The judge-vs-physicians report of a judge run (one run by the app, or an imported judge's scores) "
            "against a campaign on the same corpus: the same JSON as the API, or CSV rows, or one HTML file.")

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (in the project)")
        parser.add_argument("--campaign", help="campaign name (default: the only campaign rating the corpus on the "
                                               "judge's scale version)")
        parser.add_argument("--judge", required=True, help="the run id, or the judge's name as pages and exports "
                                                           "show it, or a jury (jury:ID or its name)")
        parser.add_argument("--scores", action="store_true",
                            help="the judge's own scores instead of the comparison with physicians (no campaign "
                                 "needed): per model and criterion the mean with its CI and, for repeated answers, "
                                 "Table 2 (mean over cases, SD and CI over replicates); JSON as "
                                 "/api/judge-runs/<id>/scores/, or CSV")
        parser.add_argument("--format", choices=["json", "csv", "html"], default="json")
        parser.add_argument("--out", help="write to this file instead of standard output")
        parser.add_argument("--floor", type=float, help="reliability floor (default 0.40)")
        parser.add_argument("--min-dialogues", type=int, help="minimum dialogues for a verdict (default 30)")
        parser.add_argument("--margin", type=float, help="non-inferiority margin (default 0.10)")
        parser.add_argument("--ci", choices=["percentile", "bca"], help="interval method (default percentile)")
        parser.add_argument("--recompute", action="store_true",
                            help="compute the report in this process even when a stored one is current")

    def handle(self, *args, **options):
        project = self.project
        corpus = Corpus.objects.alive().filter(name=options["corpus"]).first()
        if corpus is None:
            raise CommandError(f"No corpus named {options['corpus']!r} in project {project.name!r}.")
        run = find_run(corpus, options["judge"])
        if options["scores"]:
            return self._scores(run, options)
        campaign = find_campaign(corpus, run, options["campaign"])
        query = {key: str(options[name]) for key, name in (("floor", "floor"), ("min_dialogues", "min_dialogues"),
                                                           ("margin", "margin"), ("ci", "ci"))
                 if options[name] is not None}
        form = VerdictSettingsForm.from_query(query)
        if not form.is_valid():
            raise CommandError("Invalid settings: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        # names as an analyst sees them: only where the coordinator allowed them (the README's one rule)
        names = may_see_names(None, [campaign])
        report = None if options["recompute"] else stored_report(run, campaign, form.settings(), names)
        if report is None:
            from scoring.judges.report import JudgeReportError, judge_vs_physicians

            try:
                report = judge_vs_physicians(run, campaign, verdict=form.settings(), names=names)
            except (JudgeReportError, ValueError) as exc:
                raise CommandError(str(exc)) from None
        if options["format"] == "json":
            text = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False)
        elif options["format"] == "csv":
            text = csv_text(csv_rows(report))
        else:
            from django.template.loader import render_to_string
            from django.utils import timezone

            from scoring.reports.views import inline_css

            text = render_to_string("scoring/judge_report_standalone.html", {
                "run": run, "campaign": campaign, "report": report, "generated": timezone.now(),
                "css": inline_css()})
        self._write(text, options, f"the report of {source_label(run).lower()} ({run.name}) against {campaign.name!r}")

    def _scores(self, run: JudgeRun, options: dict) -> None:
        if options["format"] == "html":
            raise CommandError("--scores gives JSON or CSV (the run's page shows them in the browser).")
        if options["campaign"]:
            raise CommandError("--scores needs no campaign: it reports the judge's own scores.")
        if not run.is_finished:
            raise CommandError(f"Run #{run.pk} is {run.get_status_display().lower()}: its scores are read once it "
                               "has finished.")
        from scoring.judges.figures import stored_judge_scores

        scores = stored_judge_scores(run)
        if options["format"] == "json":
            text = json.dumps(scores, indent=2, ensure_ascii=False, allow_nan=False)
        else:
            text = csv_text(score_rows(scores))
        self._write(text, options, f"the scores of run #{run.pk} ({run.name})")

    def _write(self, text: str, options: dict, what: str) -> None:
        if options["out"]:
            with open(options["out"], "w", encoding="utf-8") as handle:
                handle.write(text)
            self.stderr.write(f"Wrote {what} to {options['out']}.")
        else:
            self.stdout.write(text)
