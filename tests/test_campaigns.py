"""Campaign services: assignment with overlap, load balance, no repeats, availability, reassignment,
label history, submit/skip/flag/return, adjudication, gold labels and the trial report."""

from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from annotation import campaigns, labels
from annotation.labels import RATING
from annotation.models import Adjudication, Assignment, CampaignRater, Label, LabelChange
from projects.models import AuditEvent
from scoring.reports.trial import trial_report
from tests.factories import answer_all, campaign_with, corpus_with, mini_cex, rating_items


@pytest.fixture
def physicians(make_user):
    return [make_user(f"p{i}", "physician") for i in range(5)]


def test_campaign_locks_the_scale_version(physicians):
    campaign = campaign_with(physicians[:2])
    assert campaign.scale_version.is_locked
    assert AuditEvent.objects.filter(action="campaign.create").exists()


def test_every_dialogue_gets_k_raters_with_balanced_load_and_no_repeats(physicians):
    campaign = campaign_with(physicians, n=20, overlap=3)
    rows = list(Assignment.objects.filter(campaign=campaign).values_list("dialogue_id", "rater_id"))
    assert len(rows) == 60 and len(set(rows)) == 60
    per_dialogue = Counter(d for d, _ in rows)
    assert set(per_dialogue.values()) == {3}
    load = Counter(r for _, r in rows)
    assert max(load.values()) - min(load.values()) <= 1
    again = campaigns.assign(campaign)
    assert again.created == 0 and again.complete


def test_not_enough_raters_is_reported(physicians):
    campaign = campaign_with(physicians[:2], n=3, overlap=3)
    result = campaigns.assign(campaign)
    assert len(result.short) == 3 and all(v == 1 for v in result.short.values())


def test_capacity_and_availability_are_respected(physicians):
    import datetime

    campaign = campaign_with([], n=10, overlap=1, name="cap")
    campaigns.add_rater(campaign, physicians[0], capacity=3)
    campaigns.add_rater(campaign, physicians[1], available_until=datetime.date(2000, 1, 1))
    campaigns.add_rater(campaign, physicians[2])
    campaigns.assign(campaign)
    load = Counter(Assignment.objects.filter(campaign=campaign).values_list("rater__username", flat=True))
    assert load["p0"] == 3 and load["p1"] == 0 and load["p2"] == 7


def test_added_rater_and_skips_are_topped_up_without_repeats(physicians):
    campaign = campaign_with(physicians[:2], n=4, overlap=2, name="top")
    assignment = Assignment.objects.filter(campaign=campaign, rater=physicians[0]).first()
    labels.skip(assignment, physicians[0], "I know this patient")
    campaigns.add_rater(campaign, physicians[2])
    result = campaigns.assign(campaign)
    assert result.created == 1
    new = Assignment.objects.get(campaign=campaign, dialogue=assignment.dialogue, rater=physicians[2])
    assert new.status == Assignment.Status.ASSIGNED
    # the rater who skipped never gets that dialogue again
    assert Assignment.objects.filter(campaign=campaign, dialogue=assignment.dialogue, rater=physicians[0]).count() == 1


def test_reassign_moves_open_work_and_keeps_history(physicians):
    campaign = campaign_with(physicians[:2], n=2, overlap=1, name="re")
    campaigns.add_rater(campaign, physicians[2])
    assignment = Assignment.objects.filter(campaign=campaign, rater=physicians[0]).first()
    new = campaigns.reassign(assignment, physicians[2], reason="on leave")
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.WITHDRAWN and new.rater == physicians[2]
    with pytest.raises(campaigns.CampaignError, match="already reassigned"):
        campaigns.reassign(assignment, physicians[1])
    with pytest.raises(campaigns.CampaignError, match="never gets a dialogue twice"):
        campaigns.reassign(new, physicians[0])
    with pytest.raises(campaigns.CampaignError, match="not a rater"):
        campaigns.reassign(new, physicians[3])


def test_reassignment_refusals_read_in_the_language_of_the_page(physicians):
    campaign = campaign_with(physicians[:2], n=2, overlap=1, name="re-zh")
    campaigns.add_rater(campaign, physicians[2])
    assignment = Assignment.objects.filter(campaign=campaign, rater=physicians[0]).first()
    new = campaigns.reassign(assignment, physicians[2])
    refusals = [(assignment, physicians[1]), (new, physicians[0]), (new, physicians[3])]
    with translation.override("zh-hans"):
        messages = []
        for work, to_user in refusals:
            with pytest.raises(campaigns.CampaignError) as refused:
                campaigns.reassign(work, to_user)
            messages.append(str(refused.value))
    assert messages == ["此评分分配已重新分配过。",
                        f"{physicians[0]} 已分配过此对话；同一对话不会两次分配给同一评分者。",
                        f"{physicians[3]} 不是此评分任务的评分者；请先添加。"]


def test_every_label_change_is_kept_with_who_when_and_old_value(physicians):
    campaign = campaign_with(physicians[:1], n=1, overlap=1, name="hist")
    assignment = Assignment.objects.get(campaign=campaign)
    item = rating_items(campaign)[0]
    labels.save_label(assignment, item.pk, 1, physicians[0], client_seq=10)
    labels.save_label(assignment, item.pk, 1, physicians[0], client_seq=11)  # retry: no new history
    labels.save_label(assignment, item.pk, 0, physicians[0], client_seq=12)
    labels.save_label(assignment, item.pk, 0, physicians[0], comment="unclear wording", client_seq=13)
    label = Label.objects.get(assignment=assignment, item=item)
    changes = list(label.changes.values_list("old_value", "new_value", "new_comment", "changed_by__username"))
    assert changes == [(None, 1, "", "p0"), (1, 0, "", "p0"), (0, 0, "unclear wording", "p0")]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS and assignment.started_at


def test_a_late_retry_of_an_older_click_does_not_overwrite_a_newer_one(physicians):
    campaign = campaign_with(physicians[:1], n=1, overlap=1, name="seq")
    assignment = Assignment.objects.get(campaign=campaign)
    item = rating_items(campaign)[0]
    labels.save_label(assignment, item.pk, 0, physicians[0], client_seq=200)
    labels.save_label(assignment, item.pk, 1, physicians[0], client_seq=100)
    assert Label.objects.get(assignment=assignment, item=item).value == 0


def test_save_rules(physicians):
    campaign = campaign_with(physicians[:2], n=1, overlap=2, name="rules")
    mine = Assignment.objects.get(campaign=campaign, rater=physicians[0])
    items = rating_items(campaign)
    with pytest.raises(labels.LabelError, match="not assigned to you") as exc:
        labels.save_label(mine, items[0].pk, 1, physicians[1])
    assert exc.value.status == 403
    with pytest.raises(labels.LabelError, match="takes 0, 1"):
        labels.save_label(mine, items[0].pk, 2, physicians[0])
    with pytest.raises(labels.LabelError, match="takes 1, 2, 3"):
        labels.save_label(mine, items[-1].pk, 0, physicians[0])
    other_version_item = mini_cex().items.get(code="4.1")  # a level, not a rating item
    with pytest.raises(labels.LabelError, match="not part"):
        labels.save_label(mine, other_version_item.pk, 1, physicians[0])
    assert not Label.objects.exists()


def test_a_whole_sheet_is_saved_with_the_same_checks_and_history_as_a_click(physicians):
    campaign = campaign_with(physicians[:2], n=1, overlap=2, name="sheet")
    mine = Assignment.objects.get(campaign=campaign, rater=physicians[0])
    items = rating_items(campaign)
    labels.save_label(mine, items[0].pk, 0, physicians[0])  # one click before the sheet
    sheet = {item.pk: 1 if item.response_type == "binary" else 2 for item in items}
    assert labels.save_answers(mine, sheet, physicians[0], reason="from the paper form") == len(items)
    assert labels.save_answers(mine, sheet, physicians[0]) == 0  # the same sheet again: nothing changes
    stored = dict(Label.objects.filter(assignment=mine).values_list("item_id", "value"))
    assert stored == sheet
    first = Label.objects.get(assignment=mine, item=items[0])
    assert list(first.changes.values_list("old_value", "new_value", "changed_by__username", "reason")) == [
        (None, 0, "p0", ""), (0, 1, "p0", "from the paper form")]
    assert LabelChange.objects.filter(label__assignment=mine).count() == len(items) + 1
    mine.refresh_from_db()
    assert mine.status == Assignment.Status.IN_PROGRESS and mine.started_at
    labels.submit(mine, physicians[0])
    with pytest.raises(labels.LabelError) as closed:
        labels.save_answers(mine, sheet, physicians[0])
    assert closed.value.status == 409


def test_a_sheet_with_one_refused_answer_stores_nothing(physicians):
    campaign = campaign_with(physicians[:2], n=1, overlap=2, name="refused sheet")
    mine = Assignment.objects.get(campaign=campaign, rater=physicians[0])
    items = rating_items(campaign)
    sheet = {item.pk: 1 if item.response_type == "binary" else 2 for item in items}
    with pytest.raises(labels.LabelError, match="not assigned to you") as exc:
        labels.save_answers(mine, sheet, physicians[1])
    assert exc.value.status == 403
    with pytest.raises(labels.LabelError, match="takes 1, 2, 3"):
        labels.save_answers(mine, {**sheet, items[-1].pk: 0}, physicians[0])
    with pytest.raises(labels.LabelError, match="must be a number"):
        labels.save_answers(mine, {**sheet, items[1].pk: "yes"}, physicians[0])
    with pytest.raises(labels.LabelError, match="not part"):
        labels.save_answers(mine, {**sheet, mini_cex().items.get(code="4.1").pk: 1}, physicians[0])
    with pytest.raises(labels.LabelError, match="No such assignment") as gone:
        labels.save_answers(Assignment(pk=mine.pk + 10_000), sheet, physicians[0])
    assert gone.value.status == 404
    campaign.deleted_at = timezone.now()  # a deleted campaign's assignments are gone too
    campaign.save(update_fields=["deleted_at"])
    with pytest.raises(labels.LabelError, match="No such assignment"):
        labels.save_answers(mine, sheet, physicians[0])
    assert not Label.objects.exists() and not LabelChange.objects.exists()
    mine.refresh_from_db()
    assert mine.status == Assignment.Status.ASSIGNED


def test_submit_needs_every_item_and_then_freezes(physicians):
    campaign = campaign_with(physicians[:1], n=1, overlap=1, name="sub")
    assignment = Assignment.objects.get(campaign=campaign)
    items = rating_items(campaign)
    labels.save_label(assignment, items[0].pk, 1, physicians[0])
    with pytest.raises(labels.LabelError, match="missing: 1.2"):
        labels.submit(assignment, physicians[0])
    answer_all(assignment, physicians[0])
    labels.submit(assignment, physicians[0])
    with pytest.raises(labels.LabelError) as exc:
        labels.save_label(assignment, items[0].pk, 0, physicians[0])
    assert exc.value.status == 409


def test_skip_and_flag_need_a_reason(physicians):
    campaign = campaign_with(physicians[:1], n=2, overlap=1, name="skip")
    first, second = Assignment.objects.filter(campaign=campaign)
    with pytest.raises(labels.LabelError):
        labels.skip(first, physicians[0], " ")
    labels.skip(first, physicians[0], "Dialogue is in a language I do not read")
    labels.flag(second, physicians[0], "Turn 3 is cut off")
    second.refresh_from_db()
    assert second.flagged and second.is_open


@pytest.mark.skipif(not connection.features.has_select_for_update_of,
                    reason="SQLite has no row locks: a write transaction locks the whole database")
def test_flag_and_return_lock_the_work_row_only_as_the_queue_does(physicians, coordinator):
    """Not the campaign's row (which the scope joins): that would hold every flag, return and assignment run of
    the campaign behind one another."""
    campaign = campaign_with(physicians[:1], n=2, overlap=1, name="locks")
    first, second = Assignment.objects.filter(campaign=campaign)
    answer_all(second, physicians[0])
    labels.submit(second, physicians[0])
    table = connection.ops.quote_name(Assignment._meta.db_table)
    with CaptureQueriesContext(connection) as queries:
        labels.flag(first, physicians[0], "Turn 3 is cut off")
        labels.return_for_reannotation(second, coordinator, "Item 3.2: the diagnosis is given in turn 3")
        RATING.claim(first, physicians[0])  # the queue's claim, for comparison
    locks = [q["sql"] for q in queries.captured_queries if "FOR UPDATE" in q["sql"] and f"FROM {table}" in q["sql"]]
    assert len(locks) == 3 and all(sql.endswith(f"FOR UPDATE OF {table}") for sql in locks), locks


def test_return_for_reannotation_reopens_and_keeps_labels(physicians, coordinator):
    campaign = campaign_with(physicians[:1], n=1, overlap=1, name="ret")
    assignment = Assignment.objects.get(campaign=campaign)
    answer_all(assignment, physicians[0])
    labels.submit(assignment, physicians[0])
    labels.return_for_reannotation(assignment, coordinator, "Item 3.2: the diagnosis is given in turn 3")
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.RETURNED and assignment.is_open
    assert campaigns.next_assignment(physicians[0]) == assignment
    item = rating_items(campaign)[0]
    labels.save_label(assignment, item.pk, 0, physicians[0], reason="after audit")
    assert LabelChange.objects.filter(label__item=item, old_value=1, new_value=0).exists()
    labels.submit(assignment, physicians[0])


def test_adjudication_is_audited(physicians, coordinator):
    campaign = campaign_with(physicians[:2], n=1, overlap=2, name="adj")
    dialogue = campaign.dialogues().get()
    item = rating_items(campaign)[5]
    labels.adjudicate(campaign, dialogue, item, 1, coordinator, "Guidance 1.6: no harmful advice given")
    labels.adjudicate(campaign, dialogue, item, 0, coordinator, "On review, turn 4 is a rumour")
    assert Adjudication.objects.get().value == 0
    events = AuditEvent.objects.filter(action="label.adjudicate").order_by("at", "id")
    assert [(e.data["old"], e.data["new"]) for e in events] == [(None, 1), (1, 0)]
    with pytest.raises(labels.LabelError):
        labels.adjudicate(campaign, dialogue, item, 1, coordinator, "")


def test_disagreement_sampling_puts_conflicts_first(physicians):
    campaign = campaign_with(physicians[:2], n=3, overlap=2, name="dis")
    items = rating_items(campaign)
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        answer_all(assignment, assignment.rater, value=1)
        if assignment.rater == physicians[1] and assignment.dialogue.external_id == "d001":
            for item in items[:4]:
                labels.save_label(assignment, item.pk, 0, assignment.rater)
        labels.submit(assignment, assignment.rater)
    dialogue = campaign.dialogues().get(external_id="d001")
    assert campaigns.audit_sample(campaign, size=1, method="disagreement") == [dialogue.pk]
    assert campaigns.disagreement_by_dialogue(campaign)[dialogue.pk] == 4
    sample = campaigns.audit_sample(campaign, size=2, method="random", seed=1)
    assert len(sample) == 2 and sample == campaigns.audit_sample(campaign, size=2, method="random", seed=1)


def test_trial_report_scores_raters_and_teams_against_gold(make_user, coordinator):
    team_a = [make_user("a1", "physician"), make_user("a2", "physician")]
    team_b = [make_user("b1", "physician")]
    campaign = campaign_with([], n=4, overlap=3, phase="trial", name="trial")
    for user in team_a:
        campaigns.add_rater(campaign, user, team="A")
    campaigns.add_rater(campaign, team_b[0], team="B")
    campaigns.assign(campaign)
    items = rating_items(campaign)[:2]
    for dialogue in campaign.dialogues():
        for n, item in enumerate(items):
            labels.set_gold(campaign, dialogue, item, (dialogue.pk + n) % 2, coordinator)
    gold = {(g.dialogue_id, g.item_id): g.value for g in campaign.gold_labels.all()}
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        answer_all(assignment, assignment.rater, value=1)
        for item in items:
            right = gold[(assignment.dialogue_id, item.pk)]
            value = right if assignment.rater.username.startswith("a") else 1 - right
            labels.save_label(assignment, item.pk, value, assignment.rater)
        labels.submit(assignment, assignment.rater)
    report = trial_report(campaign, names=True)
    assert report["gold_dialogues"] == 4 and report["gold_items"] == ["1.1", "1.2"]
    by_rater = {r["rater"]: r for r in report["raters"]}
    assert by_rater["a1"]["overall"]["accuracy"] == 1.0 and by_rater["a1"]["overall"]["kappa"] == pytest.approx(1.0)
    assert by_rater["b1"]["overall"]["accuracy"] == 0.0 and by_rater["b1"]["overall"]["kappa"] == pytest.approx(-1.0)
    assert [t["team"] for t in report["teams"]] == ["A", "B"]
    assert by_rater["a1"]["items"]["1.1"]["n"] == 4


def test_unavailable_rater_gets_no_new_work(physicians):
    campaign = campaign_with(physicians[:2], n=2, overlap=1, name="avail")
    CampaignRater.objects.filter(campaign=campaign, user=physicians[0]).update(active=False)
    corpus = campaign.corpus
    from annotation.models import Dialogue

    Dialogue.objects.create(corpus=corpus, external_id="late", self_report="x",
                            turns=[{"role": "doctor", "text": "hi"}])
    campaigns.assign(campaign)
    assert Assignment.objects.get(campaign=campaign, dialogue__external_id="late").rater == physicians[1]


def test_campaign_filters_and_privacy_exclusion(physicians):
    corpus = corpus_with(6, name="filtered")
    corpus.dialogues.filter(external_id="d001").update(privacy_status="excluded")
    campaign = campaigns.create_campaign(name="F", corpus=corpus, scale_version=mini_cex(), overlap=1,
                                         filter_model="model-A")
    assert sorted(campaign.dialogues().values_list("external_id", flat=True)) == ["d003", "d005"]


def test_the_random_audit_sample_shows_its_seed_and_draws_again_from_it(client, physicians, coordinator):
    """A sample an auditor cannot draw again cannot be checked: the page names the seed and links to the same draw."""
    import re

    from django.urls import reverse

    campaign = campaign_with(physicians[:2], n=8, overlap=2, name="seeded audit")
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        answer_all(assignment, assignment.rater, value=1)
        labels.submit(assignment, assignment.rater)
    client.force_login(coordinator)
    url = reverse("campaign-detail", args=[campaign.pk])

    def drawn(params):
        page = client.get(url, params).content.decode()
        sample = re.search(r'<ul data-testid="audit-sample">(.*?)</ul>', page, re.S).group(1)
        seed = re.search(r'with seed <strong>(\d+)</strong>', page)
        return re.findall(r">(d\d+)</a>", sample), seed and int(seed.group(1))

    first, seed = drawn({"sample": "random", "size": 3})
    assert len(first) == 3 and seed is not None
    assert drawn({"sample": "random", "size": 3, "seed": seed}) == (first, seed)
    seeds = {drawn({"sample": "random", "size": 3})[1] for _ in range(5)}
    assert len(seeds) > 1  # no seed given: a new one each time
    assert client.get(url, {"sample": "random", "size": 3, "seed": "x"}).status_code == 400
    # The disagreement ordering is not random: no seed to show.
    assert drawn({"sample": "disagreement", "size": 3})[1] is None


def test_campaign_refusals_read_in_the_language_of_the_page_and_as_before_in_english(physicians):
    from annotation.models import Campaign

    campaign = campaign_with(physicians[:1], n=2, overlap=1, name="closed-zh")
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    campaign.refresh_from_db()
    work = Assignment.objects.filter(campaign=campaign).first()
    with translation.override("zh-hans"):
        refusals = []
        for refused_call in (lambda: campaigns.add_rater(campaign, physicians[1]), lambda: campaigns.assign(campaign),
                             lambda: campaigns.reassign(work, physicians[1]),
                             lambda: campaigns.create_campaign(name="x", corpus=campaign.corpus,
                                                               scale_version=campaign.scale_version, overlap=0)):
            with pytest.raises(campaigns.CampaignError) as refused:
                refused_call()
            refusals.append(str(refused.value))
    assert refusals == ["评分任务 closed-zh 已关闭：不再接受新的评分者。",
                        "评分任务 closed-zh 已关闭：不再接受新的评分分配。",
                        "评分任务 closed-zh 已关闭：不再接受重新分配。",
                        "重叠数至少为每个对话 1 位评分者。"]
    with pytest.raises(campaigns.CampaignClosed) as english:
        campaigns.add_rater(campaign, physicians[1])
    assert str(english.value) == "Campaign closed-zh is closed: it takes no new raters."
