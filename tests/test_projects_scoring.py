"""Projects, scoring side: two projects, each with its own coordinator, analyst and two physicians and an object of
every scoring kind (judge configuration, prompt set, run with results, preference study with tasks and a judge run,
case set, generation job with a dialogue, campaign and judge report jobs). Every scoring page, htmx partial, export,
report download and API operation answers another project's object with 404, exactly as a missing one; lists and
exports hold no other-project row; an endpoint not granted to a project cannot be chosen there; the commands read
the project named by ``--project``."""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign, Corpus
from core.jobs.models import Job
from projects import services as projects
from projects.models import Project
from projects.roles import PHYSICIAN, assign_role
from projects.scoping import in_project
from scoring.generation import services as generation
from scoring.generation.cases import import_case_file
from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, PromptSet
from scoring.judges.prompts import default_prompt_set
from scoring.llm.models import LLMEndpoint
from scoring.preference import judging as preference_judging
from scoring.preference import services as preference
from scoring.preference.demo import DEMO_FILE as ANSWERS_FILE
from scoring.preference.models import PreferenceJudgeRun, PreferenceStudy, PreferenceTask
from tests.conftest import module_world
from tests.factories import campaign_with, make_account, mini_cex, staffed_project
from tests.test_reports import rate_everything

pytestmark = pytest.mark.usefixtures("across_projects")

CASES_FILE = Path(__file__).resolve().parent.parent / "scoring" / "generation" / "fixtures" / \
    "generation_demo_cases.jsonl"


@dataclass
class Side:
    """One project's people and objects."""

    project: Project
    coordinator: object
    analyst: object
    physicians: list
    campaign: Campaign
    prompt_set: PromptSet
    config: JudgeConfig
    run: JudgeRun
    study: PreferenceStudy
    task: PreferenceTask
    judge_run: PreferenceJudgeRun
    case_set: CaseSet
    job: GenerationJob
    generated: GeneratedDialogue
    report_job: Job
    judge_report_job: Job


def build(make_user, name: str, tag: str) -> Side:
    project, coordinator, analyst, physicians = staffed_project(
        name, make_user, physicians=[f"doc{i}_{tag}" for i in range(2)], tag=tag)
    with in_project(project):
        # the same names in both projects: names are unique per project, and every lookup must say which
        campaign = campaign_with(physicians, n=4, overlap=2, name="Camp", project=project)
        rate_everything(campaign, random.Random(3))
        prompt_set = default_prompt_set(mini_cex(), project=project)
        config = JudgeConfig.objects.create(project=project, name="Judge", base_url="http://127.0.0.1:9/v1",
                                            model=f"model-{tag}", prompt_set=prompt_set)
        now = timezone.now()
        run = JudgeRun.objects.create(project=project, config=config, corpus=campaign.corpus,
                                      snapshot=judging.config_snapshot(config), status=JudgeRun.Status.SUCCEEDED,
                                      started_at=now, finished_at=now)
        JudgeResult.objects.bulk_create([
            JudgeResult(run=run, dialogue=dialogue, item=item, status=JudgeResult.Status.DONE,
                        value=item.allowed_values()[0], updated_at=now)
            for dialogue in judging.run_dialogues(run) for item in judging.run_items(run)])
        study = preference.create_study(name="Pref", kind=PreferenceStudy.Kind.ANSWER, criteria="response",
                                        overlap=1, user=coordinator, project=project)
        preference.import_answers(study, ANSWERS_FILE.read_text(encoding="utf-8").splitlines(), coordinator)
        preference.add_rater(study, physicians[0], added_by=coordinator)
        preference.open_study(study, coordinator)
        task = PreferenceTask.objects.filter(study=study).order_by("pk").first()
        judge_run = PreferenceJudgeRun.objects.create(project=project, study=study, config=config,
                                                      snapshot=judging.config_snapshot(config))
        case_set = CaseSet.objects.create(project=project, name="Cases")
        import_case_file(case_set, CASES_FILE)
        job = GenerationJob.objects.create(project=project, name="Gen", case_set=case_set, corpus=campaign.corpus,
                                           doctor_models=["doc-a"], patient_model="patient", temperatures=[0.2])
        generated = GeneratedDialogue.objects.create(job=job, case=case_set.cases.first(), doctor_model="doc-a",
                                                     temperature=0.2)
        report_job = Job.objects.create(kind=Job.Kind.CAMPAIGN_REPORT, project=project,
                                        params={"campaign": campaign.pk})
        judge_report_job = Job.objects.create(kind=Job.Kind.JUDGE_REPORT, project=project,
                                              params={"run": run.pk, "campaign": campaign.pk})
    return Side(project, coordinator, analyst, physicians, campaign, prompt_set, config, run, study, task, judge_run,
                case_set, job, generated, report_job, judge_report_job)


@pytest.fixture(scope="module")
def _two(django_db_setup, django_db_blocker):
    """Both projects, built once for the module (each test runs in a savepoint of its own, rolled back)."""
    from projects.scoping import scopes_disabled

    def build_both():
        with scopes_disabled():
            return build(make_account, "Alpha", "a"), build(make_account, "Beta", "b")

    yield from module_world(django_db_blocker, build_both)


@pytest.fixture
def two(_two, db):
    """The module's two projects, their objects read again from the database (a test's changes were rolled back)."""
    for side in _two:
        for value in vars(side).values():
            for obj in value if isinstance(value, list) else [value]:
                obj.refresh_from_db()
    return _two


def page_requests(side: Side) -> list[tuple[str, str, dict]]:
    """(method, url, data) of every scoring page, partial, download and action on ``side``'s objects."""
    c, r = side.campaign.pk, side.run.pk
    q = f"?campaign={c}"
    url = reverse
    return [
        ("get", url("judge-edit", args=[side.config.pk]), {}),
        ("post", url("judge-edit", args=[side.config.pk]), {"name": "stolen"}),
        ("get", url("judge-run", args=[r]), {}),
        ("get", url("judge-run-progress", args=[r]), {}),
        ("post", url("judge-run-action", args=[r]), {"action": "cancel"}),
        ("get", url("judge-run-report", args=[r]) + q, {}),
        ("post", url("judge-run-report", args=[r]) + q, {}),
        ("get", url("judge-run-report-status", args=[r, side.judge_report_job.pk]), {}),
        ("get", url("judge-run-report-download", args=[r, "json"]) + q, {}),
        ("get", url("judge-run-report-download", args=[r, "html"]) + q, {}),
        ("get", url("judge-run-compare", args=[r, r]) + q, {}),
        ("get", url("preference-detail", args=[side.study.pk]), {}),
        ("post", url("preference-sources", args=[side.study.pk]), {}),
        ("post", url("preference-raters", args=[side.study.pk]), {"users": [side.physicians[1].pk]}),
        ("post", url("preference-action", args=[side.study.pk]), {"action": "lock", "reason": "x"}),
        ("post", url("preference-item-delete", args=[side.study.pk, side.study.items.first().pk]), {"reason": "x"}),
        ("get", url("preference-results", args=[side.study.pk]), {}),
        ("get", url("preference-export", args=[side.study.pk]), {}),
        ("get", url("generation-case-set", args=[side.case_set.pk]), {}),
        ("get", url("generation-job", args=[side.job.pk]), {}),
        ("get", url("generation-job-progress", args=[side.job.pk]), {}),
        ("post", url("generation-job-action", args=[side.job.pk]), {"action": "cancel"}),
        ("get", url("generation-dialogue", args=[side.generated.pk]), {}),
        ("get", url("campaign-trial-report", args=[c]), {}),
        ("get", url("campaign-report", args=[c]), {}),
        ("post", url("campaign-report", args=[c]), {}),
        ("get", url("campaign-report-status", args=[c, side.report_job.pk]), {}),
        ("get", url("campaign-report-download", args=[c]), {}),
        ("get", url("campaign-report-csv", args=[c]), {}),
        *[("get", url("campaign-export", args=[c, fmt]), {}) for fmt in ("csv", "json", "xlsx", "sav")],
        ("get", url("job-status", args=[side.report_job.pk]), {}),
    ]


def api_requests(side: Side) -> list[tuple[str, str, dict]]:
    r, s = side.run.pk, side.study.pk
    return [
        ("get", reverse("api-judge-run-detail", args=[r]), {}),
        ("get", reverse("api-judge-report", args=[r]) + f"?campaign={side.campaign.pk}", {}),
        ("get", reverse("api-judge-scores", args=[r]), {}),
        ("get", reverse("api-preference-study-detail", args=[s]), {}),
        ("get", reverse("api-preference-study-results", args=[s]), {}),
        ("get", reverse("api-preference-study-export", args=[s]), {}),
        ("post", reverse("api-preference-study-lock", args=[s]), {"reason": "x"}),
        ("post", reverse("api-preference-study-unblind", args=[s]), {"reason": "x"}),
        ("get", reverse("api-preference-judge-run-detail", args=[side.judge_run.pk]), {}),
        ("get", reverse("api-generation-job-detail", args=[side.job.pk]), {}),
        ("get", reverse("api-campaign-report", args=[side.campaign.pk]), {}),
    ]


def physician_requests(side: Side) -> list[tuple[str, str, dict]]:
    t = side.task.pk
    return [
        ("get", reverse("compare-task", args=[t]), {}),
        ("post", reverse("compare-answer", args=[t]), {"criterion": side.study.criteria.first().pk, "choice": "A"}),
        ("post", reverse("compare-comment", args=[t]), {"comment": "x"}),
        ("post", reverse("compare-submit", args=[t]), {}),
        ("post", reverse("compare-skip", args=[t]), {"reason": "x"}),
        ("get", reverse("compare-goto-next", args=[t]), {}),
        ("get", reverse("api-preference-task-detail", args=[t]), {}),
        ("post", reverse("api-preference-task-answer", args=[t]),
         {"criterion": side.study.criteria.first().pk, "choice": "A"}),
        ("post", reverse("api-preference-task-submit", args=[t]), {}),
        ("post", reverse("api-preference-task-skip", args=[t]), {"reason": "x"}),
    ]


def call(client, method: str, url: str, data: dict):
    return getattr(client, method)(url, data)


def options(html: str, field: str) -> set[str]:
    """The values offered by a form's select or checkboxes named ``field``."""
    import re

    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', html, re.S)
    if select:
        return set(re.findall(r'<option value="([^"]+)"', select.group(1)))
    return set(re.findall(rf'name="{field}" value="([^"]+)"', html))


def assert_all_404(client, user, own: list, other: list) -> None:
    """``other`` (another project's objects) answers 404 wherever ``own`` (the same requests on the user's project's
    objects) is allowed; a request the user's role forbids may answer 403 for both. POSTs are not tried on own
    objects (they would change them); their answer on other objects must be 403 or 404."""
    for (method, url, data), (_, own_url, own_data) in zip(other, own, strict=True):
        response = call(client, method, url, data)
        if method == "get":
            own_status = call(client, method, own_url, own_data).status_code
            expected = {403} if own_status == 403 else {404}
            assert own_status != 404, (user.username, own_url)
        else:
            expected = {403, 404} if user.username.startswith("ana") else {404}
        assert response.status_code in expected, (user.username, method, url, response.status_code)


def test_every_scoring_page_answers_another_projects_object_with_404(client, two):
    alpha, beta = two
    for user in (alpha.coordinator, alpha.analyst):
        client.force_login(user)
        assert_all_404(client, user, page_requests(alpha), page_requests(beta))
    # nothing of beta's changed
    beta.run.refresh_from_db()
    beta.study.refresh_from_db()
    beta.job.refresh_from_db()
    assert beta.run.status == JudgeRun.Status.SUCCEEDED and beta.study.status == PreferenceStudy.Status.OPEN
    assert beta.job.status == GenerationJob.Status.QUEUED and JudgeConfig.objects.get(pk=beta.config.pk).name == "Judge"


def test_a_report_pairs_a_run_and_a_campaign_of_one_project_only(client, two):
    alpha, beta = two
    client.force_login(alpha.analyst)
    mixed = f"?campaign={beta.campaign.pk}"
    for name in ("judge-run-report", "judge-run-compare"):
        args = [alpha.run.pk] if name == "judge-run-report" else [alpha.run.pk, alpha.run.pk]
        assert client.get(reverse(name, args=args) + mixed).status_code == 404
    assert client.get(reverse("judge-run-report-download", args=[alpha.run.pk, "json"]) + mixed).status_code == 404
    assert client.get(reverse("api-judge-report", args=[alpha.run.pk]) + mixed).status_code == 404
    # a run of the other project cannot be the second run of a comparison either
    assert client.get(reverse("judge-run-compare", args=[alpha.run.pk, beta.run.pk])
                      + f"?campaign={alpha.campaign.pk}").status_code == 404
    # a report job of the other project is not this run's progress
    assert client.get(reverse("judge-run-report-status", args=[alpha.run.pk, beta.judge_report_job.pk])
                      ).status_code == 404
    assert client.get(reverse("campaign-report-status", args=[alpha.campaign.pk, beta.report_job.pk])
                      ).status_code == 404


def test_every_scoring_api_operation_answers_another_projects_object_with_404(client, two):
    alpha, beta = two
    for user in (alpha.coordinator, alpha.analyst):
        client.force_login(user)
        assert_all_404(client, user, api_requests(alpha), api_requests(beta))
    # naming the other project explicitly is refused as well: alpha's coordinator is not a member of beta
    assert client.get(reverse("api-judge-run-list"), HTTP_X_PROJECT="Beta").status_code == 404


def test_lists_hold_only_the_projects_rows(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    for name, own, other in (("api-judge-run-list", alpha.run, beta.run),
                             ("api-preference-study-list", alpha.study, beta.study),
                             ("api-preference-judge-run-list", alpha.judge_run, beta.judge_run),
                             ("api-generation-job-list", alpha.job, beta.job)):
        body = client.get(reverse(name)).json()
        rows = body["results"] if isinstance(body, dict) else body
        ids = {row["id"] for row in rows}
        assert own.pk in ids and other.pk not in ids, name
    pages = {
        "judge-list": (f'href="{reverse("judge-run", args=[alpha.run.pk])}"',
                       f'href="{reverse("judge-run", args=[beta.run.pk])}"'),
        "preference-list": (reverse("preference-detail", args=[alpha.study.pk]),
                            reverse("preference-detail", args=[beta.study.pk])),
        "generation-home": (reverse("generation-job", args=[alpha.job.pk]),
                            reverse("generation-job", args=[beta.job.pk])),
    }
    for name, (own, other) in pages.items():
        html = client.get(reverse(name)).content.decode()
        assert own in html and other not in html, name
    html = client.get(reverse("generation-home")).content.decode()
    assert reverse("generation-case-set", args=[beta.case_set.pk]) not in html
    assert "model-b" not in client.get(reverse("judge-list")).content.decode()


def test_form_choices_are_the_projects(client, two):
    alpha, beta = two
    client.force_login(alpha.coordinator)
    run_form = client.get(reverse("judge-run-new")).content.decode()
    assert options(run_form, "config") == {str(alpha.config.pk)}
    assert options(run_form, "corpus") == {str(alpha.campaign.corpus.pk)}
    judge_form = client.get(reverse("judge-new")).content.decode()
    offered = {int(pk) for pk in options(judge_form, "prompt_set")}
    assert alpha.prompt_set.pk in offered and beta.prompt_set.pk not in offered
    assert set(PromptSet.objects.filter(pk__in=offered).values_list("project", flat=True)) == {alpha.project.pk}
    job_form = client.get(reverse("generation-job-new")).content.decode()
    assert options(job_form, "case_set") == {str(alpha.case_set.pk)}
    # choosing another project's judge, corpus or case set by id is refused like an unknown choice
    client.post(reverse("judge-run-new"), {"config": beta.config.pk, "corpus": alpha.campaign.corpus.pk,
                                           "confirmed": "True"})
    client.post(reverse("judge-run-new"), {"config": alpha.config.pk, "corpus": beta.campaign.corpus.pk,
                                           "confirmed": "True"})
    assert JudgeRun.objects.count() == 2
    # a preference study offers the project's physicians, finished runs and corpora only
    draft = preference.create_study(name="Draft", kind=PreferenceStudy.Kind.EVALUATION, user=alpha.coordinator,
                                    project=alpha.project)
    detail = client.get(reverse("preference-detail", args=[draft.pk])).content.decode()
    assert options(detail, "users") == {str(user.pk) for user in alpha.physicians}
    assert options(detail, "runs") == {str(alpha.run.pk)}
    client.post(reverse("preference-raters", args=[draft.pk]), {"users": [beta.physicians[1].pk]})
    assert not draft.raters.exists()
    with pytest.raises(preference.PreferenceError):
        preference.add_rater(draft, beta.physicians[1])


def test_objects_of_two_projects_are_not_combined(two, fake_llm, monkeypatch):
    alpha, beta = two
    with pytest.raises(judging.RunError, match="different projects"):
        judging.create_run(alpha.config, beta.campaign.corpus)
    with pytest.raises(preference.PreferenceError):
        preference_judging.create_run(alpha.study, beta.config)
    evaluation = preference.create_study(name="Eval", kind=PreferenceStudy.Kind.EVALUATION, project=alpha.project)
    with pytest.raises(preference.PreferenceError, match="project"):
        preference.add_judge_runs(evaluation, [alpha.run, beta.run])
    dialogues = preference.create_study(name="Dia", kind=PreferenceStudy.Kind.DIALOGUE, project=alpha.project)
    with pytest.raises(preference.PreferenceError, match="project"):
        preference.add_dialogues(dialogues, beta.campaign.corpus)
    # background work: a generation job, its corpus (found by name in the case set's project) and its report jobs
    # belong to the project of the object they work for, whatever the working project is
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with in_project(alpha.project):
        job = generation.create_job(case_set=beta.case_set, corpus_name="corpus-Camp", doctor_models=["d"],
                                    patient_model="p", temperatures=[0.2], doctor_base_url=fake_llm.base_url,
                                    patient_base_url=fake_llm.base_url)
    assert job.project_id == beta.project.pk and job.corpus_id == beta.campaign.corpus_id
    from scoring.judges.figures import current_report_job
    from scoring.judges.report import VerdictSettings
    from scoring.reports.figures import current_report_job as campaign_report_job

    with in_project(alpha.project):
        assert campaign_report_job(beta.campaign, beta.analyst).project_id == beta.project.pk
        assert current_report_job(beta.run, beta.campaign, beta.analyst, VerdictSettings()).project_id == \
            beta.project.pk


def test_exports_and_report_downloads_hold_no_other_projects_rows(client, two):
    from scoring.reports import exports

    alpha, beta = two
    rows = list(exports.label_rows(alpha.campaign.corpus, None))
    judge_runs = {row["judge_run"] for row in rows if row["judge_run"]}
    assert judge_runs == {str(alpha.run.pk)}
    raters = {row["rater"] for row in rows if not row["judge_run"]}
    assert raters and raters.isdisjoint({row["rater"] for row in exports.label_rows(beta.campaign.corpus, None)
                                          if not row["judge_run"]})
    client.force_login(alpha.coordinator)
    csv_text = b"".join(client.get(reverse("campaign-export", args=[alpha.campaign.pk, "csv"])).streaming_content)
    assert f"(run {alpha.run.pk})" in csv_text.decode() and f"(run {beta.run.pk})" not in csv_text.decode()
    export = client.get(reverse("preference-export", args=[alpha.study.pk])).content.decode()
    assert beta.physicians[0].username not in export


def test_an_endpoint_not_granted_to_the_project_cannot_be_chosen(client, two):
    alpha, beta = two
    granted = LLMEndpoint.objects.create(name="Beta's server", base_url="http://127.0.0.1:9/v1")
    granted.projects.add(beta.project)
    client.force_login(alpha.coordinator)
    for name in ("judge-new", "generation-job-new", "judge-list"):
        html = client.get(reverse(name)).content.decode()
        assert "Beta&#x27;s server" not in html and "Beta's server" not in html, name
        assert "No LLM endpoint is granted to this project" in html, name
    client.post(reverse("judge-new"), {"name": "sneaky", "endpoint": granted.pk, "model": "m", "mode": "per-item",
                                       "temperature": 0, "max_tokens": 64, "max_attempts": 3,
                                       "price_input_per_1k": "0", "price_output_per_1k": "0",
                                       "prompt_set": alpha.prompt_set.pk})
    assert not JudgeConfig.objects.filter(name="sneaky").exists()
    # a judge on an endpoint the project is not granted (e.g. revoked later) cannot start a run: Start is off
    alpha.config.endpoint = granted
    alpha.config.save()
    html = client.get(reverse("judge-run-new")).content.decode()
    assert 'data-testid="no-usable-judge"' in html and "not granted to this project" in html
    response = client.post(reverse("judge-run-new"), {"config": alpha.config.pk, "corpus": alpha.campaign.corpus.pk,
                                                      "confirmed": "True"})
    assert "not granted to this project" in response.content.decode()
    assert JudgeRun.objects.filter(config=alpha.config).count() == 1
    # in the project it is granted to, it is offered
    client.force_login(beta.coordinator)
    html = client.get(reverse("judge-new")).content.decode()
    assert "Beta&#x27;s server" in html and "No LLM endpoint is granted" not in html


def test_a_physicians_comparisons_span_the_projects_where_they_are_a_physician(client, two):
    alpha, beta = two
    for method, url, data in physician_requests(beta):
        client.force_login(alpha.physicians[0])
        assert call(client, method, url, data).status_code == 404, (method, url)
    both = alpha.physicians[1]
    assign_role(both, PHYSICIAN, beta.project)
    for side in (alpha, beta):
        study = preference.create_study(name="Both", kind=PreferenceStudy.Kind.ANSWER, criteria="overall",
                                        overlap=1, user=side.coordinator, project=side.project)
        preference.import_answers(study, ANSWERS_FILE.read_text(encoding="utf-8").splitlines(), side.coordinator)
        preference.add_rater(study, both, added_by=side.coordinator)
        preference.open_study(study, side.coordinator)
    client.force_login(both)
    own = set(PreferenceTask.objects.filter(rater=both).values_list("study__project", flat=True))
    assert own == {alpha.project.pk, beta.project.pk}
    listed = client.get(reverse("api-preference-task-list")).json()
    listed = listed["results"] if isinstance(listed, dict) else listed
    assert len(listed) == PreferenceTask.objects.filter(rater=both).count()
    beta_task = PreferenceTask.objects.filter(rater=both, study__project=beta.project).first()
    assert client.get(reverse("compare-task", args=[beta_task.pk])).status_code == 200  # from alpha's session
    # no longer a physician in beta: its comparisons are gone from the queue and answer 404
    projects.remove_member(beta.project, both, PHYSICIAN)
    assert client.get(reverse("compare-task", args=[beta_task.pk])).status_code == 404
    assert preference.next_task(both).study.project_id == alpha.project.pk


def test_job_pages_and_the_worker_check(client, two, make_user):
    alpha, beta = two
    check = Job.objects.create(kind=Job.Kind.WORKER_CHECK, project=None)
    client.force_login(alpha.coordinator)
    assert client.get(reverse("job-status", args=[alpha.report_job.pk])).status_code == 200
    assert client.get(reverse("job-status", args=[beta.report_job.pk])).status_code == 404
    assert client.get(reverse("job-status", args=[check.pk])).status_code == 404
    assert client.post(reverse("worker-check")).status_code == 403
    assert "Run the check" not in client.get(reverse("system")).content.decode()
    admin = make_user("boss", "admin", is_superuser=True)
    client.force_login(admin)
    assert client.get(reverse("job-status", args=[check.pk])).status_code == 200


def test_audit_events_of_scoring_carry_the_project(two):
    from projects.models import AuditEvent

    alpha, beta = two
    for side in (alpha, beta):
        events = AuditEvent.objects.filter(action__startswith="preference.", target_id=str(side.study.pk))
        assert events.exists() and set(events.values_list("project", flat=True)) == {side.project.pk}
    preference.skip_task(beta.task, beta.task.rater, "not my field")
    assert AuditEvent.objects.get(action="preference_task.skip").project_id == beta.project.pk


def out(name: str, *args) -> str:
    buffer = io.StringIO()
    call_command(name, *args, stdout=buffer, stderr=io.StringIO())
    return buffer.getvalue()


def test_commands_read_the_project_named_by_project(two, tmp_path):
    alpha, beta = two
    exported = out("export_labels", "--project", "Alpha", "--corpus", "corpus-Camp", "--out", "-")
    assert f"(run {alpha.run.pk})" in exported and f"(run {beta.run.pk})" not in exported
    exported = out("export_labels", "--project", "Beta", "--corpus", "corpus-Camp", "--campaign", "Camp",
                   "--out", "-")
    assert f"(run {beta.run.pk})" in exported and f"(run {alpha.run.pk})" not in exported
    with pytest.raises(CommandError, match="No project named"):
        out("export_labels", "--project", "Gamma", "--corpus", "corpus-Camp", "--out", "-")
    report = json.loads(out("judge_report", "--project", "Beta", "--corpus", "corpus-Camp", "--judge",
                            str(beta.run.pk), "--min-dialogues", "2"))
    assert isinstance(report, dict) and report
    with pytest.raises(CommandError, match=f"no judge run #{alpha.run.pk}"):
        out("judge_report", "--project", "Beta", "--corpus", "corpus-Camp", "--judge", str(alpha.run.pk))
    csv_rows = out("agreement", "--project", "Alpha", "--corpus", "corpus-Camp", "--format", "csv",
                   "--resamples", "20")
    assert csv_rows.strip()
    Corpus.objects.create(project=beta.project, name="only in beta")
    for command in ("agreement", "judge_report", "run_judge"):
        extra = {"judge_report": ["--judge", "1"], "run_judge": ["--model", "m", "--dry-run"]}.get(command, [])
        with pytest.raises(CommandError, match="in project 'Alpha'"):
            out(command, "--project", "Alpha", "--corpus", "only in beta", *extra)
    from scoring.management.commands.generate_dialogues import case_set_for

    case_set, imported = case_set_for(str(CASES_FILE), alpha.project)
    assert case_set.project_id == alpha.project.pk and imported
    assert case_set_for(str(CASES_FILE), alpha.project) == (case_set, 0)
    other, _ = case_set_for(str(CASES_FILE), beta.project)
    assert other.project_id == beta.project.pk and other.pk != case_set.pk
    out("load_generation_demo", "--project", "Beta")
    from scoring.management.commands.load_generation_demo import DEMO_NAME

    assert CaseSet.objects.get(name=DEMO_NAME).project_id == beta.project.pk


def test_judge_names_are_unique_per_project(client, two, fake_llm):
    alpha, beta = two
    endpoint = LLMEndpoint.objects.create(name="Shared", base_url=fake_llm.base_url)
    endpoint.projects.add(alpha.project, beta.project)
    data = {"endpoint": endpoint.pk, "model": "m", "mode": "per-item", "temperature": 0, "max_tokens": 64,
            "max_attempts": 3, "price_input_per_1k": "0", "price_output_per_1k": "0"}
    client.force_login(alpha.coordinator)
    taken = client.post(reverse("judge-new"), {**data, "name": "Judge", "prompt_set": alpha.prompt_set.pk})
    assert taken.status_code == 200 and "already exists" in taken.content.decode()
    assert JudgeConfig.objects.filter(name="Judge").count() == 2
    # "Judge" exists in both projects; a new name is saved in the request's project only
    client.post(reverse("judge-new"), {**data, "name": "Fresh", "prompt_set": alpha.prompt_set.pk})
    assert JudgeConfig.objects.get(name="Fresh").project_id == alpha.project.pk
    client.force_login(beta.coordinator)
    client.post(reverse("judge-new"), {**data, "name": "Fresh", "prompt_set": beta.prompt_set.pk})
    assert set(JudgeConfig.objects.filter(name="Fresh").values_list("project", flat=True)) == {
        alpha.project.pk, beta.project.pk}


def test_the_admin_grants_endpoints_to_projects_and_shows_the_project(client, two, make_user):
    alpha, beta = two
    client.force_login(make_user("boss", "admin", is_superuser=True))
    form = client.get("/admin/scoring/llmendpoint/add/").content.decode()
    assert 'name="projects"' in form and "Alpha" in form and "Beta" in form
    endpoint = LLMEndpoint.objects.create(name="Granted", base_url="http://127.0.0.1:9/v1")
    endpoint.projects.add(beta.project)
    listing = client.get("/admin/scoring/llmendpoint/").content.decode()
    assert "Granted" in listing and "Beta" in listing
    filtered = client.get(f"/admin/scoring/judgerun/?project__id__exact={alpha.project.pk}").content.decode()
    assert f"/admin/scoring/judgerun/{alpha.run.pk}/change/" in filtered
    assert f"/admin/scoring/judgerun/{beta.run.pk}/change/" not in filtered
