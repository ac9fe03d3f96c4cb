"""Dialogue generation through real Celery worker processes: a worker killed with SIGKILL mid-job loses no turn,
repeats no stored turn, and the job resumes mid-dialogue; the generate_dialogues command end to end."""

import io
import json
import time
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from scoring.generation import services as generation
from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob, GenerationTurn
from scoring.llm import limiter
from tests.conftest import wait_until
from tests.fake_openai import FakeOpenAI
from tests.generation_fake import Clinic
from tests.test_generation import OSCE, case_set

pytestmark = pytest.mark.integration


def selfs(n: int) -> list[dict]:
    return [{"id": f"s{i}", "self_report": f"I have had a cough for {i + 2} days and a mild fever."} for i in range(n)]


def test_killed_worker_resumes_mid_dialogue_without_repeating_stored_turns(workers, monkeypatch):
    monkeypatch.setenv("LLM_KEY_GEN_WORKER", "sk-test")
    clinic = Clinic(diagnose_at=6)
    with FakeOpenAI(latency=0.25, responder=clinic) as server:
        first = workers(concurrency=4)
        cs = case_set(*selfs(3), OSCE, name=f"kill-{time.time()}")
        job = generation.create_job(case_set=cs, corpus_name=f"killed-{time.time()}", doctor_models=["doc-a"],
                                    patient_model="patient-sim", temperatures=[0.2, 0.8],
                                    doctor_base_url=server.base_url, patient_base_url=server.base_url,
                                    doctor_api_key_env="LLM_KEY_GEN_WORKER", patient_api_key_env="LLM_KEY_GEN_WORKER",
                                    max_turns=8, concurrency=4, timeout_seconds=2, doctor_price_in="0.01")
        limiter.reset(f"gen-{job.pk}")
        generation.start(job)
        wait_until(lambda: GenerationTurn.objects.filter(generated__job=job).count() >= 14, 60,
                   "the first worker made no progress")
        first.kill()
        in_flight_at_kill = server.in_flight
        before = {(t.generated_id, t.index): (t.pk, t.role, t.text)
                  for t in GenerationTurn.objects.filter(generated__job=job)}
        sent_before = len(server.chat_requests)
        assert GenerationJob.objects.get(pk=job.pk).status == "running"
        mid = [gd for gd in GeneratedDialogue.objects.filter(job=job) if gd.status == "running"]
        assert mid, "no dialogue was interrupted mid-way"
        workers(concurrency=4)  # a new worker recovers the job on start
        wait_until(lambda: GenerationJob.objects.get(pk=job.pk).status == "succeeded", 120, "job did not resume")
        # every dialogue is complete: 6 doctor turns alternating with the patient, ending on the diagnosis
        for gd in GeneratedDialogue.objects.filter(job=job):
            rows = list(GenerationTurn.objects.filter(generated=gd).order_by("index"))
            assert [r.index for r in rows] == list(range(11)), gd
            assert [r.role for r in rows] == ["doctor", "patient"] * 5 + ["doctor"]
            assert gd.status == "done" and gd.ended_by == "marker" and gd.dialogue_id
        # stored turns were kept as they were, never asked for again
        for key, (pk, role, text) in before.items():
            assert GenerationTurn.objects.filter(pk=pk, role=role, text=text).exists(), key
        requests = server.chat_requests
        hashes = Counter(r["body_hash"] for r in requests)
        # A request is asked again only if its answer was never stored: either its client hung up (the kill, or a
        # timeout on a loaded machine, then retried) or the killed worker had the answer but not yet the turn, which
        # is at most one per slot of its concurrency (4). Nothing answered and stored is asked for again.
        hung_up = sum(r["status"] == "client_gone" for r in requests)
        answered_again = sum(n - 1 for n in Counter(r["body_hash"] for r in requests if r["status"] == 200).values())
        assert answered_again <= 4, (answered_again, in_flight_at_kill)
        total_steps = 8 * 11 + 2  # 8 dialogues x 11 turns + 2 OSCE moderator verdicts
        assert len(requests) <= total_steps + 4 + hung_up, (len(requests), hung_up)
        assert sent_before < len(requests)
        assert job.corpus.dialogues.count() == 8
        figures = generation.progress(job)
        assert figures["calls"] == len(hashes) and figures["cost"] > 0


def test_generate_dialogues_command_waits_and_a_rerun_makes_zero_calls(workers, monkeypatch, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [*selfs(2), OSCE]) + "\n")
    clinic = Clinic(diagnose_at=3, diagnoses={"doc-b": "Asthma"})
    with FakeOpenAI(latency=0.02, responder=clinic) as server:
        workers(concurrency=4)
        args = dict(cases=str(path), doctor_model="doc-a,doc-b", patient_model="patient-sim",
                    base_url=server.base_url, turns=4, temperatures="0.2,0.8", corpus="cli generated", wait=True)
        out = io.StringIO()
        call_command("generate_dialogues", stdout=out, stderr=io.StringIO(), **args)
        text = out.getvalue()
        assert "finished" in text and "dialogues done: 12  failed: 0" in text
        assert "accuracy doc-a: 2/2 = 100.0%" in text and "accuracy doc-b: 0/2 = 0.0%" in text
        requests = server.chat_requests
        sent = len(requests)
        # every request sent is charged and reported; a call is an answer stored, each asked for once (a request
        # may be sent again only after an attempt that got no answer, e.g. a timeout on a loaded machine)
        answered = Counter(r["body_hash"] for r in requests if r["status"] == 200)
        seen = (Counter(str(r["status"]) for r in requests), text)
        assert max(answered.values()) == 1, seen
        assert f"calls made: {len(answered)} " in text and f"requests sent: {sent} " in text, seen
        out = io.StringIO()
        call_command("generate_dialogues", stdout=out, stderr=io.StringIO(), **args)
        assert "calls made: 0 " in out.getvalue() and len(server.chat_requests) == sent
        assert CaseSet.objects.count() == 1  # the same file is imported once
        server.inject({"status": 401})
        with pytest.raises(CommandError, match="Incorrect API key"):
            call_command("generate_dialogues", stdout=io.StringIO(), stderr=io.StringIO(),
                         **{**args, "doctor_model": "doc-c"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "self_report": "x"}\n{"id": "a", "self_report": "y"}\n')
    with pytest.raises(CommandError, match='line 2: id "a" already appears on line 1'):
        call_command("generate_dialogues", cases=str(bad), doctor_model="m", patient_model="p",
                     base_url="http://127.0.0.1:9/v1", stdout=io.StringIO(), stderr=io.StringIO())
