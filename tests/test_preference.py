"""Preference studies: set-up, import, blinding on every page and endpoint, side randomisation, answers with
history, lock / unblind, analysis and exports."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import pytest
from django.urls import reverse

from annotation.models import Corpus, Dialogue, ScaleVersion
from projects.models import AuditEvent
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.preference import analysis as preference_analysis
from scoring.preference import rows as preference_rows
from scoring.preference import services as preference
from scoring.preference.errors import PreferenceError
from scoring.preference.models import PreferenceAnswer, PreferenceAnswerChange, PreferenceStudy, PreferenceTask
from scoring.preference.services import side_for

SOURCES = ["ZephyrMed-7B", "OrcaDoc-13B", "PelicanCare"]


def answers_jsonl(n_items: int = 4, sources=SOURCES) -> list[str]:
    lines = []
    for i in range(n_items):
        for k, source in enumerate(sources):
            answer = (f"Answer {i} variant {k}. Rest and fluids help; see a doctor if it gets worse.\n"
                      f"I am {source}, your assistant. Best wishes from the {source} team!")
            lines.append(json.dumps({"item": f"q{i}", "prompt": f"Question {i}: I have a cough.", "source": source,
                                     "answer": answer}))
    return lines


@pytest.fixture
def answer_study(db, coordinator):
    study = preference.create_study(name="Answers", kind="answer", criteria="response", overlap=2, seed=11,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(), coordinator)
    return study


@pytest.fixture
def raters(make_user):
    return [make_user(f"doc{i}", "physician", password="a-long-password-1") for i in range(3)]


def open_with(study, raters, coordinator):
    for user in raters:
        preference.add_rater(study, user, added_by=coordinator)
    return preference.open_study(study, coordinator)


def answer_all(study, pick):
    """Every rater answers every task; ``pick(task, criterion, a_source, b_source)`` returns A / tie / B."""
    for task in PreferenceTask.objects.filter(study=study).select_related(
            "pair__first__source", "pair__second__source", "rater"):
        a, b = preference.sides(task)
        for criterion in study.criteria.all():
            preference.save_answer(task, criterion.pk, pick(task, criterion, a.source.label, b.source.label),
                                   task.rater)
        preference.submit_task(task, task.rater)


# ---------------------------------------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------------------------------------
def test_import_creates_items_sources_and_blinded_candidates(answer_study):
    assert answer_study.items.count() == 4
    assert list(answer_study.sources.values_list("label", flat=True)) == sorted(SOURCES)
    for candidate in preference.PreferenceCandidate.objects.filter(item__study=answer_study):
        text = candidate.content["text"]
        assert all(s.lower() not in text.lower() for s in SOURCES), text
        assert "Answer" in text  # the substance stays
        assert "best wishes" not in text.lower()  # the source's repeated sign-off is boilerplate


def test_import_is_all_or_nothing_with_line_numbers(db, coordinator):
    study = preference.create_study(name="Bad", kind="answer", criteria="overall", user=coordinator)
    lines = answers_jsonl(2)
    lines[1] = "{not json"
    lines[3] = json.dumps({"item": "q1", "source": "X"})
    lines.append(json.dumps({"item": "lonely", "source": "ZephyrMed-7B", "answer": "only one"}))
    with pytest.raises(preference.ImportRejected) as info:
        preference.import_answers(study, lines, coordinator)
    text = str(info.value)
    assert "line 2: invalid JSON" in text
    assert 'line 4: missing field "answer"' in text
    assert 'line 7: item "lonely" has only one source' in text
    assert study.items.count() == 0 and study.sources.count() == 0


def test_blind_text_strips_names_run_ids_self_references_and_formatting():
    text = ("**Verdict**: As an AI language model developed by OpenAI, I think GPT-4o did well.\n"
            "* point one\n• point two\n\n\n\nJudge run #12 says Claude-3 agrees. MyModel rocks.")
    out = preference.blind_text(text, tells=["MyModel"])
    for tell in ("GPT-4o", "OpenAI", "Claude", "#12", "MyModel", "As an AI", "**"):
        assert tell.lower() not in out.lower(), (tell, out)
    assert "- point one\n- point two" in out
    assert "\n\n\n" not in out


# ---------------------------------------------------------------------------------------------------------------
# assignment and side randomisation
# ---------------------------------------------------------------------------------------------------------------
def test_assignment_gives_each_pair_overlap_raters_and_balances_load(answer_study, raters, coordinator):
    result = open_with(answer_study, raters, coordinator)
    n_pairs = answer_study.pairs.count()
    assert n_pairs == 4 * 3  # 3 sources: 3 pairs per item
    assert result.created == n_pairs * 2 and not result.short
    per_pair = Counter(PreferenceTask.objects.filter(study=answer_study).values_list("pair_id", flat=True))
    assert set(per_pair.values()) == {2}
    load = Counter(PreferenceTask.objects.filter(study=answer_study).values_list("rater_id", flat=True))
    assert max(load.values()) - min(load.values()) <= 1
    assert preference.assign(answer_study).created == 0  # re-running tops up only


def test_sides_are_balanced_per_rater_and_reproducible_from_the_seed(answer_study, raters, coordinator):
    open_with(answer_study, raters, coordinator)
    for user in raters:
        tasks = list(PreferenceTask.objects.filter(study=answer_study, rater=user).order_by("position"))
        swapped = [t.swapped for t in tasks]
        for prefix in range(1, len(swapped) + 1):  # every prefix of the queue is balanced within one
            assert abs(2 * sum(swapped[:prefix]) - prefix) <= 1
        assert swapped == [side_for(answer_study.seed, user.pk, t.position) for t in tasks]
    # the plan differs between raters and between seeds, but is the same when recomputed
    plans = {seed: [side_for(seed, 7, p) for p in range(1, 41)] for seed in (1, 2)}
    assert plans[1] != plans[2]
    assert plans[1] == [side_for(1, 7, p) for p in range(1, 41)]
    assert sum(plans[1]) == 20
    overall = Counter(PreferenceTask.objects.filter(study=answer_study).values_list("swapped", flat=True))
    assert abs(overall[True] - overall[False]) <= len(raters)


def test_withdrawn_rater_loses_open_comparisons_to_the_others_and_keeps_submitted_ones(answer_study, raters,
                                                                                      coordinator, make_user):
    leaver, stayer, other = raters
    open_with(answer_study, [leaver, stayer], coordinator)
    mine = list(PreferenceTask.objects.filter(study=answer_study, rater=leaver).order_by("position"))
    done, started = mine[0], mine[1]
    for criterion in answer_study.criteria.all():
        preference.save_answer(done, criterion.pk, "A", leaver)
    preference.submit_task(done, leaver)
    preference.save_answer(started, answer_study.criteria.first().pk, "B", leaver)
    with pytest.raises(PreferenceError, match="Say why"):
        preference.withdraw_rater(answer_study, leaver, by=coordinator, reason=" ")
    preference.add_rater(answer_study, other, added_by=coordinator)  # someone to take the comparisons over
    withdrawn, topped_up = preference.withdraw_rater(answer_study, leaver, by=coordinator, reason="left the study")
    assert withdrawn == len(mine) - 1
    statuses = Counter(PreferenceTask.objects.filter(study=answer_study, rater=leaver).values_list("status", flat=True))
    assert statuses == {"submitted": 1, "withdrawn": len(mine) - 1}
    # every pair is back at the overlap with active raters, and nobody got a pair twice
    counted = Counter(PreferenceTask.objects.filter(study=answer_study, status__in=PreferenceTask.COUNTED_STATUSES)
                      .values_list("pair_id", flat=True))
    assert set(counted.values()) == {2} and topped_up.created == withdrawn and not topped_up.short
    # the answer given on a withdrawn comparison is kept, but it can no longer change
    assert PreferenceAnswer.objects.filter(task=started).exists()
    with pytest.raises(PreferenceError) as info:
        preference.save_answer(started, answer_study.criteria.first().pk, "A", leaver)
    assert info.value.status == 409
    event = AuditEvent.objects.get(action="preference.withdraw_rater")
    assert event.reason == "left the study" and event.data["withdrawn"] == withdrawn
    with pytest.raises(PreferenceError, match="not an active rater"):
        preference.withdraw_rater(answer_study, leaver, by=coordinator, reason="again")


def test_coordinator_withdraws_a_rater_from_the_study_page(client, answer_study, raters, coordinator):
    open_with(answer_study, raters, coordinator)
    client.force_login(coordinator)
    page = client.get(reverse("preference-detail", args=[answer_study.pk])).content.decode()
    assert "Withdraw and reassign open comparisons" in page
    url = reverse("preference-action", args=[answer_study.pk])
    response = client.post(url, {"action": "withdraw-rater", "rater": raters[0].pk, "reason": ""}, follow=True)
    assert "Say why" in response.content.decode()
    response = client.post(url, {"action": "withdraw-rater", "rater": raters[0].pk, "reason": "on leave"},
                           follow=True)
    assert "doc0 withdrawn" in response.content.decode() and "(withdrawn)" in response.content.decode()
    assert not PreferenceTask.objects.filter(study=answer_study, rater=raters[0],
                                             status__in=PreferenceTask.OPEN_STATUSES).exists()


# ---------------------------------------------------------------------------------------------------------------
# answering
# ---------------------------------------------------------------------------------------------------------------
def test_answers_keep_history_and_refuse_bad_input(answer_study, raters, coordinator):
    open_with(answer_study, raters, coordinator)
    task = PreferenceTask.objects.filter(study=answer_study, rater=raters[0]).first()
    criterion = answer_study.criteria.first()
    preference.save_answer(task, criterion.pk, "A", raters[0], client_seq=5)
    preference.save_answer(task, criterion.pk, "A", raters[0], client_seq=6)  # same value: no new history
    preference.save_answer(task, criterion.pk, "B", raters[0], comment="clearer", client_seq=7)
    preference.save_answer(task, criterion.pk, "tie", raters[0], client_seq=3)  # late, older click: ignored
    answer = PreferenceAnswer.objects.get(task=task, criterion=criterion)
    assert (answer.choice, answer.comment) == ("B", "clearer")
    assert list(PreferenceAnswerChange.objects.filter(answer=answer).values_list("old_choice", "new_choice")) == [
        ("", "A"), ("A", "B")]
    with pytest.raises(PreferenceError, match="Choose A, tie or B"):
        preference.save_answer(task, criterion.pk, "C", raters[0])
    with pytest.raises(PreferenceError) as info:
        preference.save_answer(task, criterion.pk, "A", raters[1])
    assert info.value.status == 403
    with pytest.raises(PreferenceError, match="missing"):
        preference.submit_task(task, raters[0])


# ---------------------------------------------------------------------------------------------------------------
# blinding on every page and endpoint
# ---------------------------------------------------------------------------------------------------------------
def _judge_runs_study(coordinator, raters):
    """Two judges' evaluations of the same dialogues, with their names and run ids in the rationales."""
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    corpus = Corpus.objects.create(name="judged")
    dialogues = [Dialogue.objects.create(corpus=corpus, external_id=f"d{i}", self_report=f"Cough {i}",
                                         source_model="doctor-model",
                                         turns=[{"role": "doctor", "text": "Hello, what brings you here?"},
                                                {"role": "patient", "text": "A cough."}]) for i in range(3)]
    items = list(version.rating_items().filter(code__in=["1.1", "2.1"]))
    runs = []
    for name in ("SealedJudgeAlpha", "SealedJudgeBeta"):
        config = JudgeConfig.objects.create(name=name, model=f"{name.lower()}-model", base_url="http://127.0.0.1:9",
                                            prompt_set=judging.default_prompt_set(version))
        run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=judging.config_snapshot(config),
                                      status=JudgeRun.Status.SUCCEEDED)
        for d in dialogues:
            for item in items:
                JudgeResult.objects.create(run=run, dialogue=d, item=item, status="done", value=1,
                                           rationale=f"{name} (run #{run.pk}) finds that the doctor asks well. "
                                                     f"Evaluated by {name.lower()}-model.")
        runs.append(run)
    study = preference.create_study(name="Two judges", kind="evaluation", criteria="evaluation", overlap=2,
                                    seed=3, user=coordinator)
    preference.add_judge_runs(study, runs, coordinator)
    open_with(study, raters, coordinator)
    return study, runs


def _tells(study, runs=()):
    tells = list(study.sources.values_list("label", flat=True))
    for run in runs:
        tells += [run.config.name, run.config.model, f"run #{run.pk}", f"Run #{run.pk}"]
    return [t.lower() for t in tells]


def _assert_blind(body: str, tells: list[str], where: str):
    low = body.lower()
    for tell in tells:
        assert tell not in low, f"{where} reveals {tell!r}"


@pytest.mark.parametrize("kind", ["answer", "evaluation"])
def test_no_page_export_or_api_reveals_sources_before_unblinding(kind, client, coordinator, analyst, raters, instrument,
                                                                 answer_study):
    if kind == "answer":
        study, runs = answer_study, []
        open_with(study, raters, coordinator)
    else:
        study, runs = _judge_runs_study(coordinator, raters)
    tells = _tells(study, runs)
    phys = raters[0]
    task = PreferenceTask.objects.filter(study=study, rater=phys).first()

    def scan(user, urls, expect_ok=True):
        client.force_login(user)
        for url in urls:
            response = client.get(url, follow=True)
            if expect_ok:
                assert response.status_code == 200, (url, response.status_code)
            _assert_blind(response.content.decode(), tells, url)

    physician_urls = [reverse("compare-next"), reverse("compare-task", args=[task.pk]), "/",
                      "/api/preference-tasks/", f"/api/preference-tasks/{task.pk}/"]
    staff_urls = [reverse("preference-list"), reverse("preference-detail", args=[study.pk]),
                  reverse("preference-export", args=[study.pk]), "/api/preference-studies/",
                  f"/api/preference-studies/{study.pk}/", f"/api/preference-studies/{study.pk}/export/"]
    for state in ("open", "locked"):
        scan(phys, physician_urls)
        scan(coordinator, staff_urls)
        scan(analyst, staff_urls)
        client.force_login(analyst)
        assert client.get(reverse("preference-results", args=[study.pk])).status_code == 409
        response = client.get(f"/api/preference-studies/{study.pk}/results/")
        assert response.status_code == 409 and "sealed" in response.json()["detail"]
        _assert_blind(response.content.decode(), tells, "results API")
        if state == "open":
            answer_all(study, lambda *args: "A")
            preference.lock(study, coordinator)
    with pytest.raises(PreferenceError):
        preference_analysis.analysis(study)
    # after unblinding the sources appear
    preference.unblind(study, coordinator, "analysis planned")
    from tests.test_report_pages import run_pending

    run_pending()  # the results unblinding queued (a worker's job)
    client.force_login(analyst)
    body = client.get(reverse("preference-results", args=[study.pk])).content.decode().lower()
    assert all(label.lower() in body for label in study.sources.values_list("label", flat=True))
    export = client.get(reverse("preference-export", args=[study.pk])).content.decode()
    assert "source_a" in export.splitlines()[0]


def test_physician_cannot_see_other_raters_tasks(client, answer_study, raters, coordinator):
    open_with(answer_study, raters, coordinator)
    other = PreferenceTask.objects.filter(study=answer_study, rater=raters[1]).first()
    client.force_login(raters[0])
    assert client.get(reverse("compare-task", args=[other.pk])).status_code == 404
    assert client.get(f"/api/preference-tasks/{other.pk}/").status_code == 404
    response = client.post(reverse("compare-answer", args=[other.pk]), {"criterion": 1, "choice": "A"})
    assert response.status_code == 404
    assert client.get(reverse("preference-detail", args=[answer_study.pk])).status_code == 403
    assert client.get("/api/preference-studies/").status_code == 403


# ---------------------------------------------------------------------------------------------------------------
# lock and unblind
# ---------------------------------------------------------------------------------------------------------------
def test_unblinding_needs_lock_and_reason_and_is_logged(answer_study, raters, coordinator, client):
    open_with(answer_study, raters, coordinator)
    with pytest.raises(PreferenceError, match="Lock the study"):
        preference.unblind(answer_study, coordinator, "why not")
    preference.lock(answer_study, coordinator)
    # the seed recomputes every side, so it is sealed with the sources
    client.force_login(coordinator)
    assert client.get(f"/api/preference-studies/{answer_study.pk}/").json()["seed"] is None
    detail = client.get(reverse("preference-detail", args=[answer_study.pk])).content.decode()
    assert "<dt>Seed</dt><dd>11" not in detail
    with pytest.raises(PreferenceError, match="reason"):
        preference.unblind(answer_study, coordinator, "  ")
    task = PreferenceTask.objects.filter(study=answer_study).first()
    with pytest.raises(PreferenceError, match="locked") as info:
        preference.save_answer(task, answer_study.criteria.first().pk, "A", task.rater)
    assert info.value.status == 409
    client.force_login(coordinator)
    response = client.post(f"/api/preference-studies/{answer_study.pk}/unblind/", {"reason": "planned analysis"})
    assert response.status_code == 200 and response.json()["sources"] == sorted(SOURCES)
    assert response.json()["seed"] == 11
    event = AuditEvent.objects.get(action="preference.unblind")
    assert event.actor == coordinator and event.reason == "planned analysis"
    answer_study.refresh_from_db()
    assert answer_study.unblinded_by == coordinator and answer_study.unblinded_at is not None
    response = client.post(f"/api/preference-studies/{answer_study.pk}/unblind/", {"reason": "again"})
    assert response.status_code == 409 and "already" in response.json()["detail"]


def test_api_answers_with_4xx_messages(client, answer_study, raters, coordinator, analyst):
    open_with(answer_study, raters, coordinator)
    task = PreferenceTask.objects.filter(study=answer_study, rater=raters[0]).first()
    client.force_login(raters[0])
    url = f"/api/preference-tasks/{task.pk}/answer/"
    assert client.post(url, {"criterion": "x", "choice": "A"}).status_code == 400
    response = client.post(url, {"criterion": 999999, "choice": "A"})
    assert response.status_code == 400 and "criterion" in response.json()["detail"]
    response = client.post(f"/api/preference-tasks/{task.pk}/submit/")
    assert response.status_code == 400 and "missing" in response.json()["detail"]
    criterion = answer_study.criteria.first()
    response = client.post(url, {"criterion": criterion.pk, "choice": "tie"}, content_type="application/json")
    assert response.status_code == 200
    assert [c["choice"] for c in response.json()["criteria"] if c["id"] == criterion.pk] == ["tie"]
    client.force_login(analyst)
    response = client.post(f"/api/preference-studies/{answer_study.pk}/lock/", {})
    assert response.status_code == 403
    response = client.get(f"/api/preference-studies/{answer_study.pk}/results/?resamples=abc")
    assert response.status_code in (400, 409)


# ---------------------------------------------------------------------------------------------------------------
# analysis and export
# ---------------------------------------------------------------------------------------------------------------
def test_analysis_after_unblinding(answer_study, raters, coordinator):
    open_with(answer_study, raters, coordinator)
    rank = {"OrcaDoc-13B": 3, "ZephyrMed-7B": 2, "PelicanCare": 1}  # first, second, second: variation

    def pick(task, criterion, a, b):
        if criterion.code == "fluency" and task.rater == raters[2]:
            return "tie"
        return "A" if rank[a] > rank[b] else "B"

    answer_all(answer_study, pick)
    preference.lock(answer_study, coordinator)
    preference.unblind(answer_study, coordinator, "done")
    report = preference_analysis.analysis(answer_study, n_resamples=200)
    knowledge = next(c for c in report["criteria"] if c["code"] == "knowledge")
    row = next(r for r in knowledge["win_tie_loss"] if {r["a"], r["b"]} == {"ZephyrMed-7B", "OrcaDoc-13B"})
    winner_share = row["first"] if row["a"] == "OrcaDoc-13B" else row["second"]
    assert winner_share["value"] == 1.0 and winner_share["ci_low"] < 1.0
    # Perfectly consistent wins: the Bradley-Terry MLE does not exist and says why.
    assert knowledge["bradley_terry"]["strength"] is None
    assert "never beats" in " ".join(knowledge["bradley_terry"]["warnings"])
    assert knowledge["agreement"]["fleiss_kappa"]["value"] == pytest.approx(1.0)
    fluency = next(c for c in report["criteria"] if c["code"] == "fluency")
    bt = fluency["bradley_terry"]  # ties make every source beat or tie every other: a finite MLE
    assert bt["strength"]["OrcaDoc-13B"] > bt["strength"]["ZephyrMed-7B"] > bt["strength"]["PelicanCare"]
    ci = bt["ci"]["OrcaDoc-13B"]["strength"]
    assert ci["ci_low"] <= bt["strength"]["OrcaDoc-13B"] <= ci["ci_high"]
    assert fluency["agreement"]["fleiss_kappa"]["value"] < 1.0
    bias = report["position_bias"]
    assert bias["n"] == bias["a"] + bias["b"] + bias["tie"]


def test_export_long_format_hides_sources_until_unblinding(answer_study, raters, coordinator):
    open_with(answer_study, raters, coordinator)
    answer_all(answer_study, lambda task, c, a, b: "A")
    rows = list(csv.DictReader(io.StringIO(preference_rows.export_csv(answer_study))))
    assert len(rows) == PreferenceTask.objects.filter(study=answer_study).count() * 3
    assert set(rows[0]) == set(preference_rows.EXPORT_COLUMNS)
    assert {r["choice"] for r in rows} == {"A"}
    assert all(r["rater"].startswith("R") for r in rows)  # pseudonyms
    preference.lock(answer_study, coordinator)
    preference.unblind(answer_study, coordinator, "done")
    rows = list(csv.DictReader(io.StringIO(preference_rows.export_csv(answer_study))))
    assert all(r["preferred_source"] == r["source_a"] for r in rows)
    assert {r["source_a"] for r in rows} | {r["source_b"] for r in rows} == set(SOURCES)


def test_export_neutralises_a_comment_that_a_spreadsheet_would_run(answer_study, raters, coordinator, client):
    open_with(answer_study, raters, coordinator)
    task = PreferenceTask.objects.filter(study=answer_study).select_related("rater").first()
    criteria = list(answer_study.criteria.all())
    preference.save_answer(task, criteria[0].pk, "A", task.rater, comment='=HYPERLINK("http://x","click")')
    preference.save_answer(task, criteria[1].pk, "B", task.rater, comment="-1")
    preference.save_answer(task, criteria[2].pk, "tie", task.rater, comment="\t@cmd")
    preference.submit_task(task, task.rater)
    client.force_login(coordinator)
    body = client.get(reverse("preference-export", args=[answer_study.pk])).content.decode()
    for text in (preference_rows.export_csv(answer_study), body):
        comments = {r["comment"] for r in csv.DictReader(io.StringIO(text))}
        assert comments == {"'=HYPERLINK(\"http://x\",\"click\")", "-1", "'\t@cmd"}


def test_soft_delete_keeps_the_study(answer_study, coordinator):
    with pytest.raises(Exception, match="reason"):
        preference.delete_study(answer_study, coordinator, " ")
    preference.delete_study(answer_study, coordinator, "duplicate")
    assert PreferenceStudy.objects.filter(pk=answer_study.pk).exists()
    assert not PreferenceStudy.objects.alive().filter(pk=answer_study.pk).exists()


def test_coordinator_sets_up_a_study_in_the_browser_pages(client, coordinator, raters):
    client.force_login(coordinator)
    response = client.post(reverse("preference-new"), {
        "name": "Via pages", "kind": "answer", "criteria_preset": "overall", "overlap": 1})
    study = PreferenceStudy.objects.get(name="Via pages")
    assert response.status_code == 302
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("a.jsonl", "\n".join(answers_jsonl(2)).encode())
    client.post(reverse("preference-sources", args=[study.pk]), {"file": upload})
    assert study.items.count() == 2
    client.post(reverse("preference-raters", args=[study.pk]), {"users": [r.pk for r in raters[:2]]})
    client.post(reverse("preference-action", args=[study.pk]), {"action": "open"})
    study.refresh_from_db()
    assert study.status == "open" and study.tasks.count() == study.pairs.count()
    client.post(reverse("preference-action", args=[study.pk]), {"action": "lock"})
    client.post(reverse("preference-action", args=[study.pk]), {"action": "unblind", "reason": ""})
    study.refresh_from_db()
    assert study.status == "locked"  # a reason is required
    client.post(reverse("preference-action", args=[study.pk]), {"action": "unblind", "reason": "all answered"})
    study.refresh_from_db()
    assert study.status == "unblinded"


def test_dialogue_study_groups_by_case(db, coordinator):
    corpus = Corpus.objects.create(name="cases")
    for case in ("c1", "c2", "c3"):
        for model in ("DocModelOne", "DocModelTwo"):
            if case == "c3" and model == "DocModelTwo":
                continue
            Dialogue.objects.create(corpus=corpus, external_id=f"{case}-{model}", self_report=f"Case {case}",
                                    source_model=model, meta={"case_id": case},
                                    turns=[{"role": "doctor", "text": f"Hello, I am DocModelOne's rival {model}."},
                                           {"role": "patient", "text": "Hi"}])
    study = preference.create_study(name="Dialogues", kind="dialogue", criteria="overall", user=coordinator)
    result = preference.add_dialogues(study, corpus, user=coordinator)
    assert result == {"items": 2, "candidates": 4, "sources": 2, "skipped_cases": 1, "duplicates": 0}
    for candidate in preference.PreferenceCandidate.objects.filter(item__study=study):
        assert "DocModel" not in json.dumps(candidate.content)


def test_demo_study_loads_once(instrument):
    from annotation.demo import load_demo
    from projects.scoping import in_project
    from projects.services import demo_project
    from scoring.preference.demo import load_preference_demo

    load_demo()
    first = load_preference_demo()
    assert first["created"] and first["tasks"] == 4 * 3
    assert load_preference_demo() == {"study": first["study"], "created": False}
    with in_project(demo_project()):  # the demo's own project
        study = PreferenceStudy.objects.get(pk=first["study"])
        assert study.status == "open" and study.sources.count() == 3


@pytest.mark.django_db
def test_pending_comparisons_are_on_the_physicians_home_page(client, coordinator, make_user, instrument):
    """A physician with comparisons to answer (and no campaign) finds them on the home page, with where to go."""
    doctor = make_user("comparing-doc", "physician")
    study = preference.create_study(name="Which answer", kind="answer", criteria="evaluation", overlap=1, seed=3,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(1), coordinator)
    preference.add_rater(study, doctor, added_by=coordinator)
    preference.open_study(study, coordinator)
    client.force_login(doctor)
    html = client.get(reverse("home")).content.decode()
    # one work table: the comparisons are a row of it, as a campaign's dialogues are, with the same counts
    work = html.split('data-testid="physician-work"')[1].split("</section>")[0]
    row = work.split('data-testid="pending-comparisons"')[1].split("</tr>")[0]
    assert "Which answer" in row and "3 of 3 comparisons to answer" in row
    assert '<td data-label="Submitted">0 / 3</td><td data-label="Open">3</td>' in row
    assert f'href="{reverse("compare-next")}"' in work and "No dialogues are assigned to you yet" not in work
    # beside a campaign's pending ratings, in the same table
    from tests.factories import campaign_with

    campaign_with([doctor], n=2, overlap=1, name="Home campaign")
    work = client.get(reverse("home")).content.decode().split('data-testid="physician-work"')[1].split("</section>")[0]
    table = work.split("<table")[1].split("</table>")[0]
    assert "Home campaign" in table and "Which answer" in table
    assert f'href="{reverse("rate-next")}"' in work and f'href="{reverse("compare-next")}"' in work


def test_a_dialogue_study_says_how_many_of_its_corpus_dialogues_it_uses_and_why(client, coordinator):
    """20 dialogues, 10 used: the study page says so and why the other 10 are left out (before, it used 10 of 20
    without a word)."""
    from annotation.models import PrivacyStatus

    corpus = Corpus.objects.create(name="twenty")

    def add(external_id, model, **meta):
        return Dialogue.objects.create(corpus=corpus, external_id=external_id, self_report="Cough", source_model=model,
                                       meta=meta, turns=[{"role": "doctor", "text": "Hello."}])

    for case in range(5):  # 5 cases x 2 chosen models: the 10 used
        for model in ("ModelA", "ModelB"):
            add(f"c{case}-{model}", model, case_id=f"c{case}")
    for case in range(5, 8):  # 3 cases with one chosen model only
        add(f"c{case}-ModelA", "ModelA", case_id=f"c{case}")
    for n in range(4):  # 4 without the case key
        add(f"nokey-{n}", "ModelA")
    add("c0-ModelC", "ModelC", case_id="c0")  # a model not chosen
    add("c0-ModelA-2", "ModelA", case_id="c0")  # a second dialogue of ModelA on c0
    add("flagged", "ModelB", case_id="c1").__class__.objects.filter(external_id="flagged").update(
        privacy_status=PrivacyStatus.EXCLUDED)
    assert corpus.dialogues.count() == 20
    study = preference.create_study(name="Dialogues used", kind="dialogue", criteria="overall", user=coordinator)
    client.force_login(coordinator)
    response = client.post(reverse("preference-sources", args=[study.pk]),
                           {"corpus": corpus.pk, "group_key": "case_id", "models": "ModelA, ModelB"}, follow=True)
    html = response.content.decode()
    assert "the study uses 10 of the corpus&#x27;s 20 dialogues" in html  # the message after adding
    use = preference.corpus_use(study)
    assert use["used"] == 10 and use["total"] == 20
    assert use["left_out"] == {"privacy": 1, "no_case": 4, "no_model": 0, "other_model": 1, "duplicate": 1,
                               "single_model": 3, "withdrawn": 0}
    assert sum(use["left_out"].values()) + use["used"] == use["total"]
    page = client.get(reverse("preference-detail", args=[study.pk])).content.decode()
    assert "This study uses 10 of the 20 dialogues of the corpus twenty." in page
    for sentence in ("3 dialogues are the only model's on their case", '4 dialogues have no "case_id"',
                     "1 dialogue is of a model not chosen (chosen: ModelA, ModelB)",
                     "1 dialogue is a second dialogue of the same model", "1 dialogue is excluded by the privacy"):
        assert sentence in page, sentence
    # an item left out by the coordinator counts too, live
    item = study.items.alive().order_by("external_id").first()
    client.post(reverse("preference-item-delete", args=[study.pk, item.pk]), {"reason": "off topic"})
    use = preference.corpus_use(study)
    assert use["used"] == 8 and use["left_out"]["withdrawn"] == 2
    # other kinds of study say nothing of a corpus
    other = preference.create_study(name="Answers only", kind="answer", criteria="overall", user=coordinator)
    assert preference.corpus_use(other) is None


def test_results_name_the_models_and_keep_a_and_b_for_the_sides_shown(client, answer_study, raters, coordinator,
                                                                     analyst):
    """"A" on the results page is the side shown to the physicians, never the first model: each win / tie / loss
    row names its two models, and the position bias speaks of sides."""
    from tests.test_report_pages import run_pending

    open_with(answer_study, raters, coordinator)
    answer_all(answer_study, lambda task, criterion, a, b: "A" if a == "ZephyrMed-7B" else "tie")
    preference.lock(answer_study, coordinator)
    preference.unblind(answer_study, coordinator, "analysis")
    run_pending()
    client.force_login(analyst)
    html = client.get(reverse("preference-results", args=[answer_study.pk])).content.decode()
    assert "Source 1" not in html and "Source 2" not in html
    table = html.split('data-testid="win-tie-loss"')[1].split("</table>")[0]
    pair = next(p for p in ("ZephyrMed-7B vs OrcaDoc-13B", "OrcaDoc-13B vs ZephyrMed-7B") if p in table)
    row = table.split(pair)[1].split("</tr>")[0]
    # ZephyrMed won every decisive answer, whichever side it was shown on; each share names its model
    assert '<span class="source">ZephyrMed-7B</span> 0.' in row
    assert '<span class="source">OrcaDoc-13B</span> 0.000' in row
    bias = html.split('data-testid="position-bias"')[1].split("</p>")[0]
    assert "whichever model was shown there" in bias and 'shown on the left, as "A"' in bias
