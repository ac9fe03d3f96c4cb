"""A world of two projects for the cross-project tests.

Projects "Alpha" and "Bravo" each have a coordinator, an analyst and two physicians, and one of every kind of study
object: a corpus with dialogues and a redaction, a scale of their own with a draft version (beside the shared,
published Mini-CEX of "Default"), a campaign with raters, assignments, labels, a gold label and an adjudication, a
prompt set, a judge config with a finished run and an imported run (results written directly, no LLM calls), a
preference study with tasks and answers and a preference judge run, a case set with a generation job, report jobs,
a Delphi study with a round, panelists, an answer, a proposal and a decision, an LLM endpoint granted to the project,
and the audit events the services write. A third user, ``dual``, is a coordinator in Alpha and a physician in Bravo
(a rater of Bravo's campaign); ``root`` is an administrator.

Every name, external id and username of a project carries its marker ("Alpha" / "Bravo", also lower case), so a test
can assert that no other-project row shows up in a page, a list or an export by searching for the marker.

``build_world()`` builds it in the current database; ``shared_world`` (a module-scoped fixture factory) builds it once
per test module inside a transaction rolled back at the end (tests.conftest.module_world).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

MARKERS = ("Alpha", "Bravo")
PASSWORD = "correct-horse-battery"
MISSING_ID = 987654


@dataclass
class Side:
    """One project's users and objects; ``objects`` maps an object kind (see KINDS) to the row."""

    name: str
    project: object
    coordinator: object
    analyst: object
    physicians: list
    objects: dict = field(default_factory=dict)

    @property
    def marker(self) -> str:
        return self.name

    def user(self, role: str):
        return {"coordinator": self.coordinator, "analyst": self.analyst, "physician": self.physicians[0]}[role]

    def pk(self, kind: str) -> int:
        return self.objects[kind].pk

    def leaks(self, text: str) -> list[str]:
        """This project's markers found in ``text`` (case-insensitive), with a little context."""
        return [text[max(0, m.start() - 60):m.end() + 60].replace("\n", " ")
                for m in re.finditer(self.name, text, flags=re.IGNORECASE)][:5]


@dataclass
class World:
    alpha: Side
    bravo: Side
    dual: object  # coordinator in Alpha, physician in Bravo
    admin: object
    default: object
    dual2: object = None  # physician in Alpha, coordinator in Bravo (the other order)

    def side(self, name: str) -> Side:
        return {"alpha": self.alpha, "bravo": self.bravo}[name.lower()]


def _user(username: str, **extra):
    return get_user_model().objects.create_user(username=username, password=PASSWORD,
                                                email=f"{username}@example.org", **extra)


def _side(name: str, admin, members=()) -> Side:
    """A project with its four users and ``members`` ((user, role) pairs) added before its objects are built:
    a physician among them is a rater of the project's campaign."""
    from projects import services as projects
    from projects.scoping import in_project

    low = name.lower()
    project = projects.create_project(name, by=admin)
    side = Side(name=name, project=project, coordinator=_user(f"{low}_coord"), analyst=_user(f"{low}_analyst"),
                physicians=[_user(f"{low}_doc1"), _user(f"{low}_doc2")])
    for user, role in ((side.coordinator, "coordinator"), (side.analyst, "analyst"), (side.physicians[0], "physician"),
                       (side.physicians[1], "physician"), *members):
        projects.add_member(project, user, role, by=admin)
    with in_project(project):
        _fill(side, [user for user, role in members if role == "physician"])
    return side


def _fill(side: Side, extra_raters: list) -> None:  # noqa: PLR0915 - one of every kind, in order
    from annotation import instruments, labels
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.models import Adjudication, Corpus, Dialogue, GoldLabel, Redaction, ScaleVersion
    from core.jobs.models import Job
    from delphi import services as delphi
    from delphi.models import ItemDecision
    from projects.models import AuditEvent
    from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob, PatientCase
    from scoring.judges import juries
    from scoring.judges import prompts as judge_prompts
    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Prompt, PromptSet
    from scoring.llm.engine import config_snapshot
    from scoring.llm.models import LLMEndpoint
    from scoring.preference import services as preference
    from scoring.preference.models import PreferenceJudgeRun, PreferenceTask

    name, low, project, coord = side.name, side.name.lower(), side.project, side.coordinator
    obj = side.objects
    mini_cex = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)

    # corpus, dialogues, a redaction
    corpus = Corpus.objects.create(name=f"{name} corpus", project=project, created_by=coord)
    Dialogue.objects.bulk_create([
        Dialogue(corpus=corpus, external_id=f"{low}-d{i:03d}", self_report=f"{name} complaint {i}",
                 turns=[{"role": "doctor" if t % 2 == 0 else "patient", "text": f"{name} turn {t} of {i}"}
                        for t in range(4)],
                 source_model=f"{low}-model-{i % 2}", language="en", split="test")
        for i in range(4)])
    dialogues = list(corpus.dialogues.order_by("external_id"))
    obj.update(corpus=corpus, dialogue=dialogues[0])
    obj["redaction"] = Redaction.objects.create(dialogue=dialogues[1], field="self_report", start=0, end=len(name),
                                                source=Redaction.Source.COORDINATOR, reason=f"{name} redaction",
                                                created_by=coord)

    # a scale of the project's own, draft version 1 with one item
    draft = instruments.create_scale(slug=f"{low}-scale", name_en=f"{name} scale", user=coord)
    instruments.add_dimension(draft, code="d1", name_en=f"{name} dimension", user=coord)
    item = instruments.add_item(draft, {"code": "q1", "dimension": "d1", "text": f"{name} question",
                                        "response": {"type": "binary"}}, user=coord)
    obj.update(scale=draft.scale, scale_version=draft, item=item)

    # endpoint granted to the project
    endpoint = LLMEndpoint.objects.create(name=f"{name} endpoint", base_url=f"http://127.0.0.1:9/{low}/v1")
    endpoint.projects.add(project)
    obj["endpoint"] = endpoint

    # campaign: raters, assignments, labels (one submitted), gold label and adjudication
    campaign = create_campaign(name=f"{name} campaign", corpus=corpus, scale_version=mini_cex, overlap=2,
                               user=coord)
    for user in [*side.physicians, *extra_raters]:
        add_rater(campaign, user)
    assign(campaign)
    first = campaign.assignments.filter(rater=side.physicians[0]).order_by("dialogue__external_id").first()
    items = list(mini_cex.rating_items().order_by("order"))
    for it in items:
        labels.save_label(first, it.pk, 1 if it.response_type == "binary" else 2, side.physicians[0])
    labels.submit(first, side.physicians[0], comment=f"{name} submitted comment")
    second = campaign.assignments.filter(rater=side.physicians[1]).first()
    labels.save_label(second, items[0].pk, 0, side.physicians[1], comment=f"{name} label comment")
    label = first.labels.order_by("item__order").first()
    GoldLabel.objects.create(campaign=campaign, dialogue=first.dialogue, item=items[0], value=1, set_by=coord)
    Adjudication.objects.create(campaign=campaign, dialogue=first.dialogue, item=items[0], value=1,
                                reason=f"{name} adjudication", decided_by=coord)
    obj.update(campaign=campaign, assignment=first, label=label, rater=side.physicians[0],
               rating_item=items[0])
    if extra_raters:
        obj["extra_assignment"] = campaign.assignments.filter(rater=extra_raters[0]).first()
    # an assignment still open (the rating page as a rater meets it, not the closed one above)
    obj["open_assignment"] = (campaign.assignments.filter(rater=side.physicians[0]).exclude(pk=first.pk)
                              .order_by("dialogue__external_id").first())

    # judges: prompt set, config, a finished run and an imported run
    prompt_set = PromptSet.objects.create(
        name=f"{name} prompts", version=1, scale_version=mini_cex, system_prompt=judge_prompts.SYSTEM_PROMPT,
        dialogue_template=judge_prompts.DIALOGUE_TEMPLATE,
        per_dialogue_instruction=judge_prompts.PER_DIALOGUE_INSTRUCTION, created_by=coord)
    Prompt.objects.bulk_create([Prompt(prompt_set=prompt_set, item=it, question=it.text_en)
                                for it in items])
    config = JudgeConfig.objects.create(name=f"{name} judge", model=f"{low}-judge-model", prompt_set=prompt_set,
                                        endpoint=endpoint, created_by=coord)
    run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED, created_by=coord)
    imported = JudgeRun.objects.create(config=None, source=JudgeRun.Source.IMPORTED, scale_version=mini_cex,
                                       corpus=corpus, source_file=f"{low}-scores.csv", snapshot={"name": f"{name} "
                                                                                                 "imported"},
                                       status=JudgeRun.Status.SUCCEEDED, created_by=coord)
    JudgeResult.objects.bulk_create([
        JudgeResult(run=r, dialogue=d, item=it, status=JudgeResult.Status.DONE,
                    value=1 if it.response_type == "binary" else 2, rationale=f"{name} rationale")
        for r in (run, imported) for d in dialogues for it in items])
    obj.update(prompt_set=prompt_set, judge_config=config, judge_run=run, imported_run=imported)
    obj["jury"] = juries.create_jury(f"{name} jury", corpus, [run, imported], rule="majority", user=coord)

    # report jobs
    obj["report_job"] = Job.objects.create(kind=Job.Kind.CAMPAIGN_REPORT, params={"campaign": campaign.pk},
                                           project=project, requested_by=coord, status=Job.Status.SUCCEEDED,
                                           result={"note": f"{name} report"})
    # a finished study archive export, its zip in the file storage
    archive_job = Job.objects.create(kind=Job.Kind.STUDY_EXPORT, project=project, requested_by=coord,
                                     status=Job.Status.SUCCEEDED, params={"file": f"study-{low}.zip"})
    stored = default_storage.save(f"study-archives/{project.pk}/{archive_job.pk}-study-{low}.zip",
                                  ContentFile(f"{name} archive".encode()))
    archive_job.result = {"file": f"study-{low}.zip", "storage": stored, "sha256": "0" * 64, "bytes": 10}
    archive_job.save(update_fields=["result"])
    obj["archive_job"] = archive_job
    obj["judge_report_job"] = Job.objects.create(kind=Job.Kind.JUDGE_REPORT,
                                                 params={"run": run.pk, "campaign": campaign.pk},
                                                 project=project, requested_by=coord, status=Job.Status.QUEUED)
    obj["jury_report_job"] = Job.objects.create(kind=Job.Kind.JUDGE_REPORT,
                                                params={"run": f"jury:{obj['jury'].pk}", "campaign": campaign.pk},
                                                project=project, requested_by=coord, status=Job.Status.QUEUED)

    # preference study: answers of three sources, raters, tasks, one submitted task
    study = preference.create_study(name=f"{name} preference", kind="answer", criteria="response", overlap=2,
                                    seed=11, user=coord)
    lines = [json.dumps({"item": f"{low}-q{i}", "prompt": f"{name} question {i}", "source": f"{name}Src{k}",
                         "answer": f"{name} answer {i} from source {k}."})
             for i in range(2) for k in range(2)]
    preference.import_answers(study, lines, coord)
    for user in side.physicians:
        preference.add_rater(study, user, added_by=coord)
    preference.open_study(study, coord)
    task = PreferenceTask.objects.filter(study=study, rater=side.physicians[0]).order_by("pk").first()
    for criterion in study.criteria.all():
        preference.save_answer(task, criterion.pk, "A", task.rater, comment=f"{name} preference comment")
    preference.submit_task(task, task.rater)
    obj.update(preference_study=study, preference_task=task, preference_item=study.items.order_by("pk").first(),
               preference_judge_run=PreferenceJudgeRun.objects.create(
                   study=study, config=config, snapshot=config_snapshot(config), created_by=coord,
                   status=PreferenceJudgeRun.Status.SUCCEEDED))

    # generation: case set, case, job with one generated dialogue (no calls)
    case_set = CaseSet.objects.create(name=f"{name} cases", source=f"{low}-cases.jsonl", created_by=coord)
    case = PatientCase.objects.create(case_set=case_set, external_id=f"{low}-case-1",
                                      kind=PatientCase.Kind.SELF_REPORT, self_report=f"{name} case self-report",
                                      line=1)
    job = GenerationJob.objects.create(name=f"{name} generation", case_set=case_set, corpus=corpus,
                                       doctor_models=[f"{low}-doctor"], patient_model=f"{low}-patient",
                                       temperatures=[0.0], doctor_biases=["none"], patient_biases=["none"],
                                       snapshot={}, created_by=coord, status=GenerationJob.Status.PAUSED)
    generated = GeneratedDialogue.objects.create(job=job, case=case, doctor_model=f"{low}-doctor", temperature=0.0)
    obj.update(case_set=case_set, generation_job=job, generated_dialogue=generated)

    # Delphi: study over the Mini-CEX, three panelists, round 1 open, an answer, a proposal, a decision
    dstudy = delphi.create_study(title=f"{name} Delphi", user=coord, version=mini_cex, site_url="http://testserver")
    delphi.invite(dstudy, coord, text="\n".join(f"{name} Expert {i} <{low}{i}@example.org>" for i in range(3)))
    rnd = dstudy.rounds.order_by("number").first()
    delphi.open_round(rnd, coord, deadline=timezone.now() + timedelta(days=7), notify=False)
    participation = rnd.participations.order_by("pk").first()
    ditems = delphi.round_items(rnd)
    response = delphi.save_answer(participation, ditems[0].pk, importance=4, comment=f"{name} delphi comment")
    proposal = delphi.add_proposal(participation, text=f"{name} proposed item", reason=f"{name} reason")
    decision = ItemDecision.objects.create(round=rnd, action=ItemDecision.Action.ADD, new_code="x1",
                                           dimension_code="1", new_text_en=f"{name} added item", decided_by=coord)
    obj.update(delphi_study=dstudy, round=rnd, panelist=participation.panelist, participation=participation,
               response=response,
               proposal=proposal, decision=decision, delphi_item=ditems[0])
    # a pending invitation to the project (its address names the project, as every other name does)
    from projects import invitations
    obj["invitation"], _path = invitations.invite(project, email=f"{low}.invitee@example.org", role="physician",
                                                  by=coord)
    AuditEvent.record(coord, "world.built", project)


def build_world() -> World:
    """Both projects, the dual-role user and an administrator, in the current database (the Mini-CEX must be
    loaded: the ``instrument`` fixture or the data migration)."""
    from projects.models import Project
    from projects.roles import assign_role
    from projects.services import create_project

    default = Project.objects.filter(name="Default").first() or create_project("Default")
    admin = _user("root", is_superuser=True, is_staff=True)
    assign_role(admin, "admin")
    dual, dual2 = _user("dual"), _user("dual2")
    alpha = _side("Alpha", admin, [(dual, "coordinator"), (dual2, "physician")])
    bravo = _side("Bravo", admin, [(dual, "physician"), (dual2, "coordinator")])
    _library(alpha, bravo)
    return World(alpha=alpha, bravo=bravo, dual=dual, admin=admin, default=default, dual2=dual2)


def _library(owner: Side, drafter: Side) -> None:
    """A scale ``owner`` publishes to the library (a levels item with its levels), and a draft of its next version
    that ``drafter`` makes (as a Delphi study of theirs would), reworded in the drafter's name: the owner must never
    see, edit, publish or copy that draft."""
    from annotation import instruments, scales
    from annotation.models import Item
    from projects.scoping import in_project

    low = owner.name.lower()
    with in_project(owner.project):
        version = instruments.create_scale(slug=f"{low}-library", name_en=f"{owner.name} library scale",
                                           user=owner.coordinator)
        instruments.add_dimension(version, code="d1", name_en=f"{owner.name} library dimension",
                                  user=owner.coordinator)
        instruments.add_item(version, {"code": "q1", "dimension": "d1", "text": f"{owner.name} library question",
                                       "response": {"type": "levels", "levels": [
                                           {"code": "q1.1", "value": 1, "label": f"{owner.name} low"},
                                           {"code": "q1.2", "value": 2, "label": f"{owner.name} high"}]}},
                             user=owner.coordinator)
        scales.publish(version, owner.coordinator)
    owner.objects.update(library_scale=version.scale, library_version=version)
    with in_project(drafter.project):
        draft = scales.new_version(version, drafter.coordinator, f"{drafter.name} Delphi rewording")
        item = Item.objects.get(version=draft, code="q1")
        level = Item.objects.get(version=draft, code="q1.1")
        for row, text in ((item, f"{drafter.name} draft wording"), (level, f"{drafter.name} draft level")):
            row.text_en = text
            row.save()
    drafter.objects.update(library_draft=draft, library_draft_item=item, library_draft_level=level)


def shared_world(django_db_setup, django_db_blocker):
    """Generator for a module-scoped fixture: the world built once, inside a transaction rolled back at the end
    (each test still runs in its own savepoint through the ``db`` fixture)."""
    from tests.conftest import module_world

    def build() -> World:
        from projects.scoping import scopes_disabled

        with scopes_disabled():
            return build_world()

    yield from module_world(django_db_blocker, build)
