"""LLM judges answer preference comparisons in both orders through the gateway, limiter and request cache;
inconsistent orders become ties; position consistency is reported. One test runs through a real Celery worker."""

from __future__ import annotations

import re
import time

import pytest

from annotation.models import ScaleVersion
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig
from scoring.llm import limiter
from scoring.llm.models import LLMCall
from scoring.preference import analysis as preference_analysis
from scoring.preference import judging as preference_judging
from scoring.preference import services as preference
from scoring.preference.models import PreferenceJudgeRun, PreferenceStudy, PreferenceTask, PreferenceVerdict
from tests.fake_openai import FakeOpenAI
from tests.test_preference import answers_jsonl, open_with


def criteria_codes(body: dict) -> list[str]:
    return body["response_format"]["json_schema"]["schema"]["required"]


def always_a(body: dict) -> dict:
    """A judge with total position bias: A wins whatever is shown."""
    return {code: "A" for code in criteria_codes(body)}


def content_judge(body: dict) -> dict:
    """A consistent judge: prefers the answer of variant 0, else variant 1, whatever its side."""
    text = body["messages"][-1]["content"]
    a = re.search(r"\[Candidate A\]\n(.*?)\n\[End of candidate A\]", text, re.S).group(1)
    b = re.search(r"\[Candidate B\]\n(.*?)\n\[End of candidate B\]", text, re.S).group(1)

    def rank(t):
        return 0 if "variant 0" in t else 1 if "variant 1" in t else 2

    choice = "A" if rank(a) < rank(b) else "B" if rank(b) < rank(a) else "tie"
    return {code: choice for code in criteria_codes(body)}


def make_config(server, name="PairJudge") -> JudgeConfig:
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    config = JudgeConfig.objects.create(name=name, base_url=server.base_url, model="fake-judge",
                                        prompt_set=judging.default_prompt_set(version), timeout_seconds=3,
                                        max_attempts=3, concurrency=4)
    limiter.reset(f"judge-{config.pk}")
    return config


def study_with_raters(coordinator, raters, name="Judged answers") -> PreferenceStudy:
    study = preference.create_study(name=name, kind="answer", criteria="response", overlap=1, seed=4,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(3), coordinator)
    open_with(study, raters, coordinator)
    return study


def drain(run: PreferenceJudgeRun, rounds: int = 10) -> list[str]:
    states = []
    for _ in range(rounds):
        pending = list(PreferenceVerdict.objects.filter(run=run, status="pending").values_list("id", flat=True))
        if not pending:
            break
        states += [preference_judging.process_verdict(v).state for v in pending]
    run.refresh_from_db()
    return states


@pytest.fixture
def raters(make_user):
    return [make_user(f"jdoc{i}", "physician") for i in range(2)]


def test_each_pair_is_asked_in_both_orders_and_inconsistency_is_a_tie(instrument, coordinator, raters):
    study = study_with_raters(coordinator, raters)
    with FakeOpenAI(responder=always_a) as server:
        run = preference_judging.create_run(study, make_config(server), coordinator)
        preference_judging.start(run)
        drain(run)
        assert run.status == "succeeded"
        n_pairs = study.pairs.count()
        assert len(server.chat_requests) == 2 * n_pairs
        bodies = [r["json"] for r in server.chat_requests]
        texts = [b["messages"][-1]["content"] for b in bodies]
        for label in study.sources.values_list("label", flat=True):
            assert all(label not in t for t in texts)  # the judge is blinded too
    combo = preference_judging.combined(run)
    assert {v["final"] for v in combo["verdicts"].values()} == {"tie"}
    assert {(v["forward"], v["reverse"]) for v in combo["verdicts"].values()} == {("first", "second")}
    assert combo["consistency_overall"]["value"] == 0.0
    assert all(c["value"] == 0.0 for c in combo["consistency"].values())


def test_a_consistent_judge_keeps_its_verdicts_and_the_cache_is_reused(instrument, coordinator, raters):
    study = study_with_raters(coordinator, raters)
    with FakeOpenAI(responder=content_judge) as server:
        config = make_config(server)
        run = preference_judging.create_run(study, config, coordinator)
        preference_judging.start(run)
        drain(run)
        first_calls = len(server.chat_requests)
        combo = preference_judging.combined(run)
        assert combo["consistency_overall"]["value"] == 1.0
        assert "tie" not in {v["final"] for v in combo["verdicts"].values()}
        # the same requests again: answered from LLMCall, nothing paid twice
        again = preference_judging.create_run(study, config, coordinator)
        preference_judging.start(again)
        drain(again)
        assert len(server.chat_requests) == first_calls
        assert PreferenceVerdict.objects.filter(run=again, from_cache=True).count() == 2 * study.pairs.count()
    assert LLMCall.objects.count() == first_calls
    # physicians agree with the judge on everything: MT-Bench agreement 1 after unblinding
    for task in PreferenceTask.objects.filter(study=study).select_related("pair__first", "pair__second"):
        a, b = preference.sides(task)
        ra, rb = (0 if "variant 0" in a.content["text"] else 1 if "variant 1" in a.content["text"] else 2,
                  0 if "variant 0" in b.content["text"] else 1 if "variant 1" in b.content["text"] else 2)
        for criterion in study.criteria.all():
            preference.save_answer(task, criterion.pk, "A" if ra < rb else "B", task.rater)
        preference.submit_task(task, task.rater)
    preference.lock(study, coordinator)
    preference.unblind(study, coordinator, "analysis")
    report = preference_analysis.analysis(study, n_resamples=100)
    judge = report["judges"][0]
    assert judge["position_consistency_overall"]["value"] == 1.0
    for entry in judge["criteria"].values():
        assert entry["agreement_with_humans"]["with_ties"]["value"] == 1.0
        assert entry["agreement_with_humans"]["cohen_kappa"]["value"] == pytest.approx(1.0)


def test_unparseable_answers_are_unscored_and_a_refused_key_pauses_the_run(instrument, coordinator, raters):
    study = study_with_raters(coordinator, raters)
    with FakeOpenAI(responder=lambda body: "I like both.") as server:
        run = preference_judging.create_run(study, make_config(server), coordinator)
        preference_judging.start(run)
        drain(run)
        assert PreferenceVerdict.objects.filter(run=run, status="unscored").count() == 2 * study.pairs.count()
        assert preference_judging.combined(run)["verdicts"] == {}
        run.refresh_from_db()
        assert run.status == "failed" and "No answer could be used" in run.error
    with FakeOpenAI(responder=always_a, fail_next=[{"status": 401}]) as server:
        run = preference_judging.create_run(study, make_config(server, "Refused"), coordinator)
        preference_judging.start(run)
        drain(run)
        assert run.status == "paused" and "401" in run.error and "OPENAI_API_KEY" in run.error
        assert len(server.chat_requests) == 1


def test_a_draft_cannot_be_judged(instrument, coordinator):
    draft = preference.create_study(name="Draft", kind="answer", criteria="overall", user=coordinator)
    with FakeOpenAI(responder=always_a) as server, pytest.raises(preference.PreferenceError, match="Open the study"):
        preference_judging.create_run(draft, make_config(server), coordinator)


@pytest.mark.integration
def test_judge_answers_through_a_celery_worker(celery_worker, coordinator, make_user):
    raters = [make_user("wdoc", "physician")]
    study = study_with_raters(coordinator, raters, name="Worker study")
    with FakeOpenAI(responder=always_a, latency=0.05, fail_next=[{"status": 429, "retry_after": 1}]) as server:
        run = preference_judging.create_run(study, make_config(server), coordinator)
        preference_judging.start(run)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.status == "succeeded":
                break
            time.sleep(0.3)
        assert run.status == "succeeded", preference_judging.progress(run)
        assert len(server.chat_requests) == 2 * study.pairs.count() + 1  # one 429, retried by countdown
    assert preference_judging.combined(run)["consistency_overall"]["value"] == 0.0
