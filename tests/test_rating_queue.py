"""The rating queue shared by campaigns and preference studies, and the status vocabulary of the workflow models:
stored values and words as before, one set of rules for both kinds of work, and claims that hold under races."""

from __future__ import annotations

import json
import threading
from collections import Counter

import pytest
from django.db import connection

from annotation import campaigns, labels
from annotation.models import Assignment, Campaign, ScaleVersion
from annotation.queue import QueuedWork
from annotation.status import Stage, WorkStatus, stages
from delphi.models import DelphiStudy, Round
from projects import scoping
from projects.models import AuditEvent
from scoring.preference import services as preference
from scoring.preference.errors import PreferenceError
from scoring.preference.models import PreferenceStudy, PreferenceTask
from tests.factories import answer_all, campaign_with


def test_every_workflow_status_keeps_its_stored_values_and_its_words():
    assert ScaleVersion.Status.choices == [("draft", "Draft"), ("published", "Published"), ("retired", "Retired")]
    assert Campaign.Status.choices == [("open", "Open"), ("closed", "Closed")]
    assert PreferenceStudy.Status.choices == [
        ("draft", "Draft (setting up)"), ("open", "Open (raters answering)"),
        ("locked", "Locked (answers final, identities sealed)"), ("unblinded", "Unblinded")]
    assert DelphiStudy.Status.choices == [("setup", "Setting up"), ("running", "Delphi rounds"),
                                          ("validation", "Validation survey"),
                                          ("published", "Agreed version published")]
    assert Round.Status.choices == [("draft", "Not opened"), ("open", "Open"), ("closed", "Closed")]
    assert Campaign.Status.OPEN == Round.Status.OPEN == PreferenceStudy.Status.OPEN == Stage.OPEN == "open"
    assert WorkStatus.values == ["assigned", "in_progress", "submitted", "skipped", "returned", "withdrawn"]
    assert Assignment.Status is PreferenceTask.Status is WorkStatus


def test_a_model_words_only_the_stages_it_has():
    with pytest.raises(ValueError, match="LOCKED"):
        stages(Stage.OPEN, Stage.CLOSED, LOCKED="Sealed")


def test_both_kinds_of_work_have_the_queue_fields():
    for model in (Assignment, PreferenceTask):
        assert issubclass(model, QueuedWork)
        names = {f.name for f in model._meta.get_fields()}
        assert {"status", "position", "comment", "skip_reason", "started_at", "submitted_at"} <= names
    assert [s for s in WorkStatus if Assignment(status=s).is_open] == [WorkStatus.ASSIGNED, WorkStatus.IN_PROGRESS,
                                                                       WorkStatus.RETURNED]


@pytest.fixture
def study(db, coordinator, make_user):
    study = preference.create_study(name="Queue", kind="answer", criteria="overall", overlap=1, seed=5,
                                    user=coordinator)
    preference.import_answers(study, [json.dumps({"item": f"q{i}", "prompt": f"Question {i}", "source": source,
                                                  "answer": f"Answer {i} of {source}"})
                                      for i in range(3) for source in ("North", "South")], coordinator)
    return study


def test_a_comparison_is_reassigned_by_the_same_rules_as_a_dialogue(study, coordinator, make_user):
    first, second = (make_user(f"q{i}", "physician") for i in range(2))
    preference.add_rater(study, first, added_by=coordinator)
    preference.open_study(study, coordinator)
    preference.add_rater(study, second, added_by=coordinator)
    task = PreferenceTask.objects.filter(study=study, rater=first).order_by("position").first()
    new = preference.QUEUE.reassign(task, second, by=coordinator, reason="on leave")
    task.refresh_from_db()
    assert task.status == WorkStatus.WITHDRAWN and new.rater == second and new.pair_id == task.pair_id
    assert new.position == 1 and new.swapped == preference.side_for(study.seed, second.pk, 1)
    event = AuditEvent.objects.get(action="preference_task.reassign")
    assert event.reason == "on leave" and event.data["from_rater"] == first.username
    with pytest.raises(PreferenceError, match="already reassigned"):
        preference.QUEUE.reassign(task, second)
    with pytest.raises(PreferenceError, match="never gets a comparison twice"):
        preference.QUEUE.reassign(new, first)
    assert preference.next_task(second) == new  # the new rater's queue opens on it
    assert preference.QUEUE.place(new) == {"place": 1, "total": 1, "done": 0, "skipped": 0}


def test_returned_work_opens_first_in_either_kind_of_queue(make_user, coordinator):
    rater = make_user("r1", "physician")
    campaign = campaign_with([rater], n=3, overlap=1, name="ret")
    mine = list(Assignment.objects.filter(campaign=campaign, rater=rater).order_by("position"))
    last = mine[-1]
    answer_all(last, rater)
    labels.submit(last, rater)
    labels.return_for_reannotation(last, coordinator, "item 3 looks wrong")
    assert campaigns.next_assignment(rater) == last
    assert campaigns.next_assignment(rater, after=last) == mine[0]


def _at_once(count: int, action, project_id: int) -> list:
    """Run ``action(i)`` in ``count`` threads released together; returns what each returned or raised."""
    barrier = threading.Barrier(count)
    outcomes: list = [None] * count

    def run(i: int) -> None:
        try:
            with scoping.in_project(project_id):
                barrier.wait(timeout=10)
                outcomes[i] = action(i)
        except Exception as exc:  # the outcome under test
            outcomes[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_work_submitted_twice_at_once_is_submitted_once(make_user, _project_scope):
    rater = make_user("twin", "physician")
    campaign = campaign_with([rater], n=1, overlap=1, name="race")
    assignment = Assignment.objects.get(campaign=campaign)
    answer_all(assignment, rater)
    outcomes = _at_once(2, lambda i: labels.submit(assignment, rater, comment=f"tab {i}"), _project_scope.pk)
    refused = [o for o in outcomes if isinstance(o, labels.LabelError)]
    assert len(refused) == 1 and refused[0].status == 409, outcomes
    assert AuditEvent.objects.filter(action="assignment.submit").count() == 1
    assignment.refresh_from_db()
    assert assignment.status == WorkStatus.SUBMITTED


@pytest.mark.django_db(transaction=True)
def test_two_assignment_runs_at_once_give_each_dialogue_its_overlap_once(make_user, _project_scope):
    raters = [make_user(f"a{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=4, overlap=2, name="twice")
    campaigns.add_rater(campaign, make_user("late", "physician"))
    skipped = Assignment.objects.filter(campaign=campaign, rater=raters[0]).update(status=WorkStatus.SKIPPED)
    outcomes = _at_once(2, lambda i: campaigns.assign(campaign).created, _project_scope.pk)
    assert skipped and sorted(outcomes) == [0, skipped], outcomes  # the second run finds nothing left to do
    counted = Counter(Assignment.objects.filter(campaign=campaign, status__in=Assignment.COUNTED_STATUSES)
                      .values_list("dialogue_id", flat=True))
    assert set(counted.values()) == {2}


def test_a_locked_study_takes_no_new_work(study, coordinator, make_user):
    first, second = (make_user(f"l{i}", "physician") for i in range(2))
    for user in (first, second):
        preference.add_rater(study, user, added_by=coordinator)
    preference.open_study(study, coordinator)
    preference.lock(study, coordinator)
    task = PreferenceTask.objects.filter(study=study, rater=first).first()
    with pytest.raises(PreferenceError, match="not open") as info:
        preference.QUEUE.reassign(task, second, by=coordinator)
    assert info.value.status == 409
    with pytest.raises(PreferenceError, match="not open"):
        preference.assign(study)
