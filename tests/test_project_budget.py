"""A project's monthly LLM budget, beside each job's caps: a job that would cross it pauses with a message naming
the budget and nothing is sent past it; the jobs of one project share it; another project is not affected; the
coordinators see the month's spend per endpoint on the judges page. In process (the engine's synchronous path), in
whichever mode the suite runs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.models import Corpus, Dialogue, ScaleVersion
from projects import scoping
from projects.services import create_project
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import budget, engine, limiter
from scoring.llm.models import MonthlySpend, ProjectBudget

KIND = judging.HANDLER.kind


def judge_and_corpus(base_url: str, name: str, model: str = "fake-judge") -> tuple[JudgeConfig, Corpus]:
    """A priced judge and a corpus of 3 dialogues in the active project (2 items: 6 requests a run)."""
    corpus = Corpus.objects.create(name=f"budget {name}")
    Dialogue.objects.bulk_create([Dialogue(corpus=corpus, external_id=f"b{i}", self_report=f"Cough ({i}).",
                                           turns=[{"role": "doctor", "text": f"Since when ({i})?"}])
                                  for i in range(3)])
    config = JudgeConfig.objects.create(
        name=f"budget judge {name}", base_url=base_url, api_key_env="LLM_KEY_MINICEX_TEST", model=model,
        prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)),
        timeout_seconds=5, max_attempts=2, concurrency=8, price_input_per_1k="0.5", price_output_per_1k="1.5")
    limiter.reset(f"judge-{config.pk}")
    return config, corpus


def run_of(config: JudgeConfig, corpus: Corpus) -> JudgeRun:
    run = judging.create_run(config, corpus, item_codes=["1.1", "2.1"])
    judging.start(run)
    engine.run_until_idle(KIND, run.pk, timeout=20)
    run.refresh_from_db()
    return run


@pytest.fixture
def judged(db, fake_llm, monkeypatch, _project_scope):
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    return judge_and_corpus(fake_llm.base_url, "here")


def test_jobs_of_a_project_share_its_monthly_request_budget_and_pause_at_it(judged, fake_llm, _project_scope,
                                                                            coordinator, client):
    ProjectBudget.objects.create(project=_project_scope, month_requests=8)
    config, corpus = judged
    first = run_of(config, corpus)
    assert first.status == "succeeded" and len(fake_llm.chat_requests) == 6
    second = run_of(config, corpus)  # the same requests are in the cache: answered without a request
    assert second.status == "succeeded" and len(fake_llm.chat_requests) == 6
    other_config, _ = judge_and_corpus(fake_llm.base_url, "second", model="fake-judge-2")
    third = run_of(other_config, corpus)  # another model: new requests, 2 of them left this month
    assert third.status == "paused" and len(fake_llm.chat_requests) == 8
    assert "monthly LLM budget of 8 requests is reached (8 sent in" in third.error
    assert "administrator raises the budget" in third.error
    assert JudgeResult.objects.filter(run=third, status="done").count() == 2
    assert JudgeResult.objects.filter(run=third, status="pending").count() == 4  # waiting, not failed
    # Resumed under the same budget, it pauses again without sending.
    judging.start(third)
    engine.run_until_idle(KIND, third.pk, timeout=5)
    third.refresh_from_db()
    assert third.status == "paused" and len(fake_llm.chat_requests) == 8
    # The coordinators see the month per endpoint, against the budget.
    client.force_login(coordinator)
    page = client.get("/judges/").content.decode()
    assert "LLM spend in" in page and "8 of 8 requests (100%)" in page
    summary = budget.summary(_project_scope.pk)
    assert [(r["requests"], r["answers"]) for r in summary["rows"]] == [(8, 8)]
    assert summary["cost"] == sum(r.spent_cost for r in JudgeRun.objects.filter(pk__in=[first.pk, third.pk]))
    # An administrator raises the budget: resumed, the run finishes.
    ProjectBudget.objects.filter(project=_project_scope).update(month_requests=100)
    judging.start(third)
    engine.run_until_idle(KIND, third.pk, timeout=20)
    third.refresh_from_db()
    assert third.status == "succeeded" and len(fake_llm.chat_requests) == 12


def test_a_cost_budget_stops_what_could_cost_more_than_is_left_and_spares_other_projects(judged, fake_llm,
                                                                                       _project_scope):
    config, corpus = judged
    # At 0.50 and 1.50 USD per 1,000 tokens each request may cost up to about 0.50 USD (its prompt and 256 answer
    # tokens): three fit into 1.50 USD.
    ProjectBudget.objects.create(project=_project_scope, month_cost=Decimal("1.50"))
    run = run_of(config, corpus)
    sent = len(fake_llm.chat_requests)
    assert run.status == "paused" and "monthly LLM budget of 1.50 USD is reached" in run.error
    assert sent == 3
    assert 0 < MonthlySpend.objects.get(project=_project_scope).cost == run.spent_cost <= Decimal("1.50")
    other = create_project("Budget elsewhere")
    with scoping.in_project(other):
        config, corpus = judge_and_corpus(fake_llm.base_url, "elsewhere")
        theirs = run_of(config, corpus)
        assert theirs.status == "succeeded" and len(fake_llm.chat_requests) == sent + 6
        assert budget.summary(other.pk)["requests"] == 6 and budget.summary(other.pk)["budget"] is None
    assert budget.summary(_project_scope.pk)["requests"] == sent


def test_administrators_set_a_projects_budget_in_the_admin(db, admin_user, client, _project_scope):
    client.force_login(admin_user)
    assert client.get("/admin/scoring/projectbudget/add/").status_code == 200
    response = client.post("/admin/scoring/projectbudget/add/", {
        "project": _project_scope.pk, "month_requests": "1000", "month_cost": "25.00", "currency": "USD"})
    assert response.status_code == 302, response.content.decode()[:2000]
    saved = ProjectBudget.objects.get(project=_project_scope)
    assert (saved.month_requests, saved.month_cost, saved.updated_by) == (1000, Decimal("25.00"), admin_user)
    assert client.get("/admin/scoring/monthlyspend/").status_code == 200
    assert "1000" in client.get("/admin/scoring/projectbudget/").content.decode()
