"""Coordinator pages for LLM judges."""

import re

import pytest
from django.urls import reverse

from annotation import labels
from annotation.models import Assignment, Corpus, Dialogue, ScaleVersion
from core.jobs.models import Job
from projects.scoping import active_project_id
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeRun
from scoring.llm.models import LLMEndpoint
from tests.test_judge import drain
from tests.test_report_pages import run_pending


@pytest.fixture
def server(fake_llm):
    return fake_llm


@pytest.fixture
def corpus(db):
    corpus = Corpus.objects.create(name="pages-judged")
    for i in range(2):
        Dialogue.objects.create(corpus=corpus, external_id=f"p{i}", self_report="Rash.",
                                turns=[{"role": "doctor", "text": f"Hello {i}"}, {"role": "patient", "text": "Hi"}])
    return corpus


def test_without_endpoint_the_pages_say_how_to_configure(client, coordinator, settings):
    settings.OPENAI_BASE_URL = ""
    client.force_login(coordinator)
    html = client.get(reverse("judge-list")).content.decode()
    assert 'data-testid="endpoint-help"' in html and "OPENAI_BASE_URL" in html and "Ollama" in html


def test_a_new_projects_coordinator_runs_a_judge_on_the_fake_endpoint_without_an_administrator(
        client, coordinator, analyst, corpus, server, monkeypatch):
    """No endpoint granted: the Judges page offers the built-in fake endpoint to coordinators (not analysts); one
    click grants it to this project (audited), and a judge runs on it. Its port follows the app's."""
    from projects.models import AuditEvent
    from scoring.judges.demo import FAKE_ENDPOINT

    monkeypatch.delenv("FAKE_LLM_PORT", raising=False)
    monkeypatch.setenv("PORT", str(server.port - 1))  # the fake endpoint listens on the app's port + 1
    client.force_login(analyst)
    assert 'data-testid="grant-fake"' not in client.get(reverse("judge-list")).content.decode()
    assert client.post(reverse("judge-fake-endpoint")).status_code == 403
    client.force_login(coordinator)
    page = client.get(reverse("judge-list")).content.decode()
    assert 'data-testid="endpoint-help"' in page and 'data-testid="grant-fake"' in page
    response = client.post(reverse("judge-fake-endpoint"), {"next": reverse("judge-new")})
    assert response.status_code == 302 and response.url == reverse("judge-new")
    endpoint = LLMEndpoint.objects.get(name=FAKE_ENDPOINT, projects=active_project_id())
    assert endpoint.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert AuditEvent.objects.filter(action="llm.endpoint.grant_fake", actor=coordinator).exists()
    assert 'data-testid="endpoint-help"' not in client.get(reverse("judge-list")).content.decode()
    prompt_set = judging.default_prompt_set(ScaleVersion.objects.get(number=1))
    client.post(reverse("judge-new"), {"name": "Tried", "endpoint": endpoint.pk, "model": "fake", "mode": "per-item",
                                       "temperature": 0, "max_tokens": 64, "max_attempts": 3,
                                       "price_input_per_1k": "0", "price_output_per_1k": "0",
                                       "prompt_set": prompt_set.pk})
    config = JudgeConfig.objects.get(name="Tried")
    client.post(reverse("judge-run-new"), {"config": config.pk, "corpus": corpus.pk, "items": "1.1",
                                           "confirmed": "True"})
    run = JudgeRun.objects.get(config=config)
    drain(run)
    run.refresh_from_db()
    assert run.status == "succeeded" and len(server.chat_requests) == 2


def test_coordinator_configures_a_judge_and_runs_it(client, coordinator, corpus, server, monkeypatch):
    monkeypatch.setenv("LLM_KEY_PAGES", "sk-test")
    endpoint = LLMEndpoint.objects.create(name="Fake", base_url=server.base_url, api_key_env="LLM_KEY_PAGES",
                                          concurrency=4, timeout_seconds=5)
    endpoint.projects.add(active_project_id())  # an administrator granted it to the project
    client.force_login(coordinator)
    form = client.get(reverse("judge-new")).content.decode()
    assert "Mini-CEX judge (default)" in form and "Fake" in form
    # coordinators choose an endpoint; they cannot type a URL or a key variable
    assert 'name="base_url"' not in form and 'name="api_key_env"' not in form
    prompt_set = judging.default_prompt_set(ScaleVersion.objects.get(number=1))
    data = {"name": "GPT judge", "endpoint": endpoint.pk, "model": "fake", "mode": "per-item", "temperature": 0,
            "max_tokens": 64, "max_attempts": 3, "price_input_per_1k": "0.1", "price_output_per_1k": "0.2",
            "prompt_set": prompt_set.pk, "request_logprobs": "on"}
    client.post(reverse("judge-new"), {**data, "base_url": "http://127.0.0.1:9/v1", "api_key_env": "SECRET_KEY"})
    config = JudgeConfig.objects.get(name="GPT judge")
    assert (config.endpoint, config.base_url, config.api_key_env) == (endpoint, server.base_url, "LLM_KEY_PAGES")
    assert (config.concurrency, config.timeout_seconds) == (4, 5)
    preview = client.post(reverse("judge-run-new"), {"config": config.pk, "corpus": corpus.pk, "items": "1.1, 4"})
    html = preview.content.decode()
    assert not JudgeRun.objects.exists() and len(server.chat_requests) == 0  # nothing created or sent yet
    assert "Calls to make</th><td><strong>4</strong>" in html and "Estimated cost" in html
    assert 'name="confirmed" value="True"' in html
    response = client.post(reverse("judge-run-new"), {"config": config.pk, "corpus": corpus.pk, "items": "1.1, 4",
                                                      "confirmed": "True"})
    run = JudgeRun.objects.get()
    assert response.url == reverse("judge-run", args=[run.pk]) and run.status == "running"
    page = client.get(reverse("judge-run", args=[run.pk])).content.decode()
    assert 'hx-trigger="every 2s"' in page and "sk-test" not in page
    drain(run)
    partial = client.get(reverse("judge-run-progress", args=[run.pk])).content.decode()
    assert 'data-status="succeeded"' in partial and "every 2s" not in partial and "4 of 4" in partial
    bad = client.post(reverse("judge-run-new"), {"config": config.pk, "corpus": corpus.pk, "items": "9.9"})
    assert "Unknown item code" in bad.content.decode()


def test_run_actions(client, coordinator, corpus, server, monkeypatch):
    monkeypatch.setenv("LLM_KEY_PAGES", "sk-test")
    config = JudgeConfig.objects.create(name="j", base_url=server.base_url, api_key_env="LLM_KEY_PAGES", model="fake",
                                        prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
    run = judging.create_run(config, corpus, item_codes=["1.1"])
    judging.start(run)
    client.force_login(coordinator)
    client.post(reverse("judge-run-action", args=[run.pk]), {"action": "pause"})
    run.refresh_from_db()
    assert run.status == "paused"
    client.post(reverse("judge-run-action", args=[run.pk]), {"action": "resume"})
    run.refresh_from_db()
    assert run.status == "running"
    server.inject({"malformed": True})
    drain(run)
    page = client.get(reverse("judge-run", args=[run.pk])).content.decode()
    assert 'data-testid="problems"' in page and "Retry failed and unscored (1)" in page
    client.post(reverse("judge-run-action", args=[run.pk]), {"action": "retry"})
    drain(run)
    assert run.status == "succeeded"
    client.post(reverse("judge-run-action", args=[run.pk]), {"action": "cancel"}, follow=True)
    run.refresh_from_db()
    assert run.status == "succeeded"


def test_physician_cannot_see_judges(client, physician):
    client.force_login(physician)
    assert client.get(reverse("judge-list")).status_code == 403


def test_judge_vs_physicians_page(client, coordinator, make_user, server, monkeypatch):
    from annotation.models import Assignment
    from tests.factories import campaign_with
    from tests.test_reports import rate_everything

    raters = [make_user(f"jp{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=4, overlap=3, name="JvP")
    import random

    rate_everything(campaign, random.Random(4))
    assert Assignment.objects.filter(campaign=campaign, status="submitted").count() == 12
    monkeypatch.setenv("LLM_KEY_PAGES", "sk-test")
    config = JudgeConfig.objects.create(name="jvp", base_url=server.base_url, api_key_env="LLM_KEY_PAGES", model="fake",
                                        prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(number=1)))
    run = judging.create_run(config, campaign.corpus, item_codes=["1.1", "2.1", "4"])
    judging.start(run)
    drain(run)
    client.force_login(coordinator)
    page = client.get(reverse("judge-run", args=[run.pk])).content.decode()
    assert f"?campaign={campaign.pk}" in page
    url = reverse("judge-run-report", args=[run.pk])
    assert "Computing the report" in client.get(url, {"campaign": campaign.pk}).content.decode()
    run_pending("judge_report")
    html = client.get(url, {"campaign": campaign.pk}).content.decode()
    assert 'data-testid="judge-items"' in html and ("judge can replace physicians" in html or "keep physicians" in html)
    assert 'data-testid="judge-models"' in html
    # in Chinese: the page's own words, and the report's words and verdicts (stored in English) translated
    zh = client.get(url, {"campaign": campaign.pk}, headers={"accept-language": "zh-CN"}).content.decode()
    assert '<html lang="zh-hans">' in zh and "逐条目判定" in zh and "医师间一致性" in zh
    assert "评审模型可替代医师" in zh or "保留医师" in zh
    # no English verdict badge (the stored sentences, e.g. the rule behind the verdicts, are English still)
    assert not re.search(r">\s*(judge can replace physicians|keep physicians)\s*<", zh)
    assert "更多列" in zh and 'data-optional data-col="precision"' in zh  # the column chooser, a hidden column
    from scoring.reports.exports import label_rows

    rows = list(label_rows(campaign.corpus, campaign))
    assert {r["rater_kind"] for r in rows} == {"human", "judge"}
    assert all(r["judge_run"] == str(run.pk) for r in rows if r["rater_kind"] == "judge")


def test_runs_that_differ_only_in_mode_are_compared(client, coordinator, make_user, server, monkeypatch):
    import random

    from tests.factories import campaign_with
    from tests.test_reports import rate_everything

    raters = [make_user(f"mc{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=3, overlap=2, name="Modes")
    rate_everything(campaign, random.Random(5))
    monkeypatch.setenv("LLM_KEY_PAGES", "sk-test")
    prompt_set = judging.default_prompt_set(ScaleVersion.objects.get(number=1))
    runs = []
    for mode in ("per-item", "per-dialogue"):
        config = JudgeConfig.objects.create(name=f"judge {mode}", base_url=server.base_url, api_key_env="LLM_KEY_PAGES",
                                            model="fake", mode=mode, prompt_set=prompt_set)
        run = judging.create_run(config, campaign.corpus)
        judging.start(run)
        drain(run)
        runs.append(run)
    client.force_login(coordinator)
    page = client.get(reverse("judge-run", args=[runs[0].pk])).content.decode()
    compare_url = reverse("judge-run-compare", args=[runs[0].pk, runs[1].pk])
    assert compare_url in page
    # The runs' end queued their comparison, both ways: computed by a worker, not when someone looks.
    queued = Job.objects.filter(kind=Job.Kind.JUDGE_COMPARE, status=Job.Status.QUEUED)
    pairs = {(job.params["run"], job.params["other"]) for job in queued}
    assert pairs == {(runs[0].pk, runs[1].pk), (runs[1].pk, runs[0].pk)}
    html = client.get(compare_url, {"campaign": campaign.pk}).content.decode()
    assert 'data-testid="figures-computing"' in html and 'data-testid="mode-compare"' not in html
    run_pending("judge_report", "judge_compare")
    from scoring.judges import report

    def not_per_view(*args, **kwargs):
        raise AssertionError("the page computed the comparison")

    monkeypatch.setattr(report, "compare_modes", not_per_view)
    for _ in range(2):
        html = client.get(compare_url, {"campaign": campaign.pk}).content.decode()
        assert 'data-testid="mode-compare"' in html and html.count("<tr>") >= 25
        assert 'data-testid="figures-computing"' not in html and 'data-testid="figures-updating"' not in html
    # New labels: the stored comparison is shown "updating" while the worker computes the new one.
    assignment = Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SUBMITTED).first()
    labels.return_for_reannotation(assignment, coordinator, "check")
    html = client.get(compare_url, {"campaign": campaign.pk}).content.decode()
    assert 'data-testid="mode-compare"' in html and 'data-testid="figures-updating"' in html


def test_start_run_is_disabled_with_the_reason_when_no_judge_can_send(client, coordinator, corpus, settings):
    settings.OPENAI_BASE_URL = ""
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    JudgeConfig.objects.create(name="gone", base_url="http://synthetic.invalid/v1", model="m",
                               prompt_set=judging.default_prompt_set(version))
    JudgeConfig.objects.create(name="nowhere", base_url="", model="m", prompt_set=judging.default_prompt_set(version))
    client.force_login(coordinator)
    html = client.get(reverse("judge-run-new")).content.decode()
    assert 'data-testid="no-usable-judge"' in html
    assert "gone: host synthetic.invalid does not resolve" in html and "nowhere: No LLM endpoint is configured" in html
    assert html.count("disabled") >= 1 and "gone (cannot be used: host synthetic.invalid does not resolve" in html
    gone = JudgeConfig.objects.get(name="gone")
    response = client.post(reverse("judge-run-new"), {"config": gone.pk, "corpus": corpus.pk, "confirmed": "True"})
    assert "Judge gone cannot be used now: host synthetic.invalid does not resolve" in response.content.decode()
    assert not JudgeRun.objects.exists()


def test_costs_name_their_currency_or_say_they_are_unknown(client, coordinator, corpus, server, monkeypatch):
    monkeypatch.setenv("LLM_KEY_PAGES", "sk-test")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    unpriced = JudgeConfig.objects.create(name="unpriced", base_url=server.base_url, api_key_env="LLM_KEY_PAGES",
                                          model="m", prompt_set=judging.default_prompt_set(version))
    endpoint = LLMEndpoint.objects.create(name="Euro", base_url=server.base_url, api_key_env="LLM_KEY_PAGES",
                                          currency="EUR")
    endpoint.projects.add(active_project_id())
    priced = JudgeConfig.objects.create(name="priced", endpoint=endpoint, model="m", price_input_per_1k="0.5",
                                        price_output_per_1k="1.5", prompt_set=judging.default_prompt_set(version))
    assert priced.currency == "EUR"
    client.force_login(coordinator)
    html = client.post(reverse("judge-run-new"), {"config": unpriced.pk, "corpus": corpus.pk, "items": "1.1"}
                       ).content.decode()
    assert "no prices set for judge unpriced: cost unknown" in html and "0.0000" not in html
    html = client.post(reverse("judge-run-new"), {"config": priced.pk, "corpus": corpus.pk, "items": "1.1"}
                       ).content.decode()
    assert " EUR</strong>" in html
    for config in (unpriced, priced):
        run = judging.create_run(config, corpus, item_codes=["1.1"], cost_cap="5")
        judging.start(run)
        drain(run)
        page = client.get(reverse("judge-run", args=[run.pk])).content.decode()
        assert 'data-testid="outcome-bar"' in page and "2 scored" in page
        if config is unpriced:
            assert "cost unknown: no prices set for this judge" in page and "0.0000" not in page
        else:
            assert " EUR" in page and "cap 5.0000 EUR" in page
    # the coordinator changes the cap on the run page (recorded)
    client.post(reverse("judge-run-action", args=[run.pk]), {"action": "caps", "cost_cap": "7.5", "token_cap": ""})
    run.refresh_from_db()
    assert run.cost_cap == 7.5 and run.token_cap is None
    response = client.post(reverse("judge-run-action", args=[run.pk]), {"action": "caps", "cost_cap": "-1"},
                           follow=True)
    assert "Spending cap: " in response.content.decode() and run.cost_cap == 7.5


def test_the_api_reports_a_runs_state_reason_and_spending(client, coordinator, corpus, server, monkeypatch):
    monkeypatch.setenv("LLM_KEY_PAGES", "sk-test")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    config = JudgeConfig.objects.create(name="api", base_url=server.base_url, api_key_env="LLM_KEY_PAGES",
                                        model="m", prompt_set=judging.default_prompt_set(version))
    run = judging.create_run(config, corpus, item_codes=["1.1"])
    judging.start(run)
    server.inject({"status": 401})
    drain(run)
    client.force_login(coordinator)
    listing = client.get("/api/judge-runs/").json()
    assert listing["results"][0]["status"] == "paused" and "progress" not in listing["results"][0] or \
        listing["results"][0]["progress"] is None
    detail = client.get(f"/api/judge-runs/{run.pk}/").json()
    assert detail["status"] == "paused" and "LLM_KEY_PAGES" in detail["error"]
    assert detail["requests_sent"] <= 2 and detail["currency"] == "USD"
    assert detail["progress"]["spend"]["cost_text"].startswith("cost unknown")
    assert client.get("/api/judge-runs/999999/").status_code == 404
