"""Finished demo judge runs for ``make run``: one per-item and one per-dialogue run of a synthetic judge on the
finished study's whole corpus (the physicians rated a random sample of it), with stored answers (no endpoint is
called), so the judge-vs-physicians table, the three model estimates (PPI++), the mode comparison and the exports
have content at first login.

Everything here lives in the demo project ("Demo (synthetic)", :func:`projects.services.demo_project`), like the
demo corpus and campaigns it builds on; the fake endpoint is granted to that project.

The demo judges use the *built-in fake endpoint* (scoring/llm/fake.py, started by ``make run``): a newcomer can start
a real run with them, through the workers, without a key; its answers are synthetic."""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.demo import DEMO_FINISHED, DEMO_STUDY_CORPUS, FINISHED_SEED, SYNTHETIC_PHYSICIANS, synthetic_answers
from annotation.models import Campaign, Corpus, ScaleVersion
from projects.models import AuditEvent
from projects.services import demo_project, in_demo_project
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.judges.prompts import default_prompt_set
from scoring.judges.runs import run_dialogues, run_items
from scoring.llm.engine import config_snapshot
from scoring.llm.models import LLMEndpoint

JUDGES = [("Demo judge, per item (synthetic)", JudgeConfig.Mode.PER_ITEM, 11, 0.7),
          ("Demo judge, per dialogue (synthetic)", JudgeConfig.Mode.PER_DIALOGUE, 12, 1.1)]
SYNTHETIC_MODEL = "synthetic-demo-judge"
RATIONALE = "Synthetic demo answer: drawn from a seeded model, no LLM was called."
FAKE_ENDPOINT = "Built-in fake endpoint (synthetic answers)"
OLD_DEMO_URL = "http://synthetic.invalid/v1"


def fake_endpoint(project=None) -> LLMEndpoint:
    """The administrator's endpoint of the built-in fake LLM (``python -m config.run fake-llm``; ``make run`` starts
    it), created once; loopback only, any key accepted. Granted to the demo project (or ``project``); its port
    follows the app's (scoring.llm.fake.default_port)."""
    from scoring.llm.fake import default_port

    port = default_port()
    endpoint, created = LLMEndpoint.objects.get_or_create(name=FAKE_ENDPOINT, defaults={
        "base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": "OPENAI_API_KEY", "concurrency": 8,
        "timeout_seconds": 30, "currency": "USD",
        "note": "Synthetic answers for trying the app without a key (make run starts it; python -m config.run "
                "fake-llm otherwise). Never for study data."})
    url = f"http://127.0.0.1:{port}/v1"
    if not created and endpoint.base_url != url and endpoint.base_url.startswith("http://127.0.0.1:"):
        LLMEndpoint.objects.filter(pk=endpoint.pk).update(base_url=url)  # the app moved to another port
        endpoint.base_url = url
    endpoint.projects.add(project or demo_project())
    return endpoint


def judge_values(latent: dict[tuple[int, str], float], items: list[tuple[str, tuple[int, ...]]], seed: int,
                 noise: float) -> dict[tuple[int, str], int]:
    """A synthetic judge's answers: the dialogues' latent probability on the logit scale plus the judge's own
    noise (more noise, less agreement with the physicians' majority)."""
    rng = np.random.default_rng(seed)
    values = {}
    for (d, code), p in sorted(latent.items()):
        allowed = dict(items)[code]
        logit = np.log(p / (1 - p)) + rng.normal(0.0, noise)
        q = 1 / (1 + np.exp(-logit))
        values[(d, code)] = int(rng.random() < q) if len(allowed) == 2 else \
            allowed[min(len(allowed) - 1, int(q * len(allowed)))]
    return values


@in_demo_project
@transaction.atomic
def load_judge_demo(project=None) -> list[JudgeRun]:
    """The two finished synthetic runs in the demo project (or ``project``), created once; idempotent. Each is a run
    as the engine leaves it: a snapshot of its configuration, status succeeded and one done result per dialogue and
    item."""
    project = project or demo_project()
    corpus = Corpus.objects.filter(name=DEMO_STUDY_CORPUS).first()
    if corpus is None:
        return []
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)  # published: the library
    coordinator = get_user_model().objects.filter(username="coordinator").first()
    prompt_set = default_prompt_set(version, project=project)
    endpoint = fake_endpoint(project)
    runs = []
    latent = None  # the same seeded model for both runs: drawn once
    for name, mode, seed, noise in JUDGES:
        config, _ = JudgeConfig.objects.get_or_create(project=project, name=name, defaults={
            "model": SYNTHETIC_MODEL, "mode": mode, "prompt_set": prompt_set, "seed": 0, "created_by": coordinator,
            "endpoint": endpoint})
        if config.base_url == OLD_DEMO_URL:  # demos loaded before the fake endpoint existed
            config.endpoint = endpoint
            config.save()
        existing = own_run(name, project)
        if existing is not None:
            runs.append(existing)
            continue
        now = timezone.now()
        run = JudgeRun.objects.create(project=project, config=config, corpus=corpus, created_by=coordinator,
                                      snapshot={**config_snapshot(config), "batch": False, "synthetic": True},
                                      status=JudgeRun.Status.SUCCEEDED, started_at=now, finished_at=now)
        items = run_items(run)
        shape = [(i.code, tuple(i.allowed_values())) for i in items]
        dialogues = list(run_dialogues(run).order_by("external_id"))
        if latent is None:
            _, latent = synthetic_answers(len(dialogues), shape, len(SYNTHETIC_PHYSICIANS) + 1, FINISHED_SEED)
        values = judge_values(latent, shape, seed, noise)
        JudgeResult.objects.bulk_create([
            JudgeResult(run=run, dialogue=dialogue, item=item, status=JudgeResult.Status.DONE,
                        value=values[(d, item.code)], rationale=RATIONALE, attempts=1, updated_at=now)
            for d, dialogue in enumerate(dialogues) for item in items])
        AuditEvent.record(coordinator, "judge_run.demo", run, units=len(dialogues) * len(items), synthetic=True)
        runs.append(run)
    return runs


def own_run(name: str, project=None) -> JudgeRun | None:
    """The demo's own synthetic run of a demo judge (not a run a user started later with the same judge)."""
    return (JudgeRun.objects
            .filter(config__name=name, corpus__name=DEMO_STUDY_CORPUS, snapshot__synthetic=True)
            .order_by("created_at", "pk").first())


@in_demo_project
def demo_runs(project=None) -> tuple[Campaign | None, list[JudgeRun]]:
    """The finished demo campaign and the synthetic runs to compare with it (per item first), in the demo project
    (or ``project``)."""
    project = project or demo_project()
    campaign = Campaign.objects.alive().filter(name=DEMO_FINISHED).first()
    runs = [run for name, *_ in JUDGES if (run := own_run(name, project)) is not None]
    return campaign, runs
