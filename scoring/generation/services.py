"""Dialogue generation: a doctor model under test talks with a patient simulator (Shi et al., LLM-Mini-CEX,
sec. 4.3-4.4; Schmidgall et al., AgentClinic), producing an annotation corpus.

A job expands into GeneratedDialogue rows (case x doctor model x temperature x doctor bias x patient bias x
repeat). One unit of work is one *step* of one dialogue: the next doctor, patient or measurement turn, or the
moderator's verdict. A step claims its dialogue with a lease, rebuilds the request from the stored turns, answers
it from the request cache (LLMCall) or sends it through the gateway within the shared limits, and stores the new
turn at once. A killed worker therefore resumes at the next turn: stored turns are never asked for again, and a
request answered but not yet stored is answered from the cache. Retries are scheduled by the caller (Celery
countdown), never slept here.

The correct diagnosis never reaches the patient simulator (its prompt or the test results it sees) unless the job
sets ``reveal_diagnosis``; a patient turn that still names it verbatim (before the doctor did) is masked.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from statistics import mean, median
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext, gettext_lazy

from annotation.importers import privacy_fields
from annotation.models import Corpus, Dialogue
from projects.access import in_project_of
from projects.models import AuditEvent
from scoring.generation import prompts
from scoring.generation.models import (
    CaseSet,
    GeneratedDialogue,
    GenerationCall,
    GenerationJob,
    GenerationTurn,
    PatientCase,
)
from scoring.llm import delivery, engine, gateway
from scoring.llm.models import LLMCall

MAX_DIALOGUES = 20000
DOCTOR, AGENT = "doctor", "agent"  # the two endpoints: the doctor under test; patient/measurement/moderator
YES = re.compile(r"^\W*(yes|是)\b", re.IGNORECASE)
NO = re.compile(r"^\W*(no|否)\b", re.IGNORECASE)


class GenerationError(ValueError):
    """A job that cannot be created or changed; the message says why."""


# ---------------------------------------------------------------------------------------------------------------
# jobs
# ---------------------------------------------------------------------------------------------------------------
#: The edited prompts by their key, as the form names them.
PROMPT_NAMES = {"doctor_prompt": gettext_lazy("Doctor prompt"), "patient_prompt": gettext_lazy("Patient prompt"),
                "measurement_prompt": gettext_lazy("Measurement prompt"),
                "moderator_prompt": gettext_lazy("Moderator prompt")}


def _floats(values) -> list[float]:
    out = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise GenerationError(gettext("Temperature %(value)s is not a number.") % {"value": repr(value)}) from None
        if not 0 <= number <= 2:
            raise GenerationError(gettext("Temperature %(value)s is outside 0-2.") % {"value": f"{number:g}"})
        if number not in out:
            out.append(number)
    return out


def parse_list(text: str) -> list[str]:
    """Comma- or whitespace-separated values ("0.2, 0.8" -> ["0.2", "0.8"])."""
    return [part for part in re.split(r"[,\s]+", text or "") if part]


def _biases(values, side: str) -> list[str]:
    known = prompts.PATIENT_BIASES if side == "patient" else prompts.DOCTOR_BIASES
    out = []
    for value in values or [prompts.NO_BIAS]:
        value = (value or prompts.NO_BIAS).strip()
        if value != prompts.NO_BIAS and value not in known:
            unknown = (gettext("Unknown patient bias %(value)s; choose from none, %(known)s.") if side == "patient"
                       else gettext("Unknown doctor bias %(value)s; choose from none, %(known)s."))
            raise GenerationError(unknown % {"value": repr(value), "known": ", ".join(known)})
        if value not in out:
            out.append(value)
    return out


@transaction.atomic
@in_project_of("case_set")
def create_job(*, case_set: CaseSet, corpus_name: str, doctor_models: list[str], patient_model: str,
               temperatures: list, name: str = "", doctor_base_url: str = "",
               doctor_api_key_env: str = "OPENAI_API_KEY", patient_base_url: str = "",
               patient_api_key_env: str = "OPENAI_API_KEY", measurement_model: str = "", moderator_model: str = "",
               doctor_biases: list[str] | None = None, patient_biases: list[str] | None = None, repeats: int = 1,
               max_turns: int = 10, end_marker: str = prompts.END_MARKER, reveal_diagnosis: bool = False,
               prompt_texts: dict[str, str] | None = None, patient_temperature: float = 0.2,
               max_tokens: int = 300, concurrency: int = 4, requests_per_minute: int | None = None,
               tokens_per_minute: int | None = None, timeout_seconds: float = 60.0, max_attempts: int = 6,
               doctor_price_in: Decimal | str = "0", doctor_price_out: Decimal | str = "0",
               patient_price_in: Decimal | str = "0", patient_price_out: Decimal | str = "0", split: str = "",
               currency: str = "USD", cost_cap: Decimal | None = None, token_cap: int | None = None,
               user=None) -> GenerationJob:
    """Create a job with one pending GeneratedDialogue per case and condition; ``start`` enqueues the work."""
    gateway.usable_endpoint(doctor_base_url, doctor_api_key_env)  # NotConfigured says why nothing can be sent
    gateway.usable_endpoint(patient_base_url, patient_api_key_env)
    doctor_models = [m.strip() for m in doctor_models if m and m.strip()]
    if not doctor_models:
        raise GenerationError(gettext("Give at least one doctor model."))
    if not (patient_model or "").strip():
        raise GenerationError(gettext("Give the patient simulator's model."))
    temps = _floats(temperatures)
    if not temps:
        raise GenerationError(gettext("Give at least one temperature."))
    d_biases, p_biases = _biases(doctor_biases, "doctor"), _biases(patient_biases, "patient")
    if not 1 <= int(max_turns) <= 100:
        raise GenerationError(gettext("The turn limit must be between 1 and 100."))
    if not 1 <= int(repeats) <= 100:
        raise GenerationError(gettext("Repeats must be between 1 and 100."))
    if not (end_marker or "").strip():
        raise GenerationError(gettext("The end marker cannot be empty."))
    texts = {**prompts.defaults(), **{k: v for k, v in (prompt_texts or {}).items() if v and v.strip()}}
    for key, text in texts.items():
        problem = prompts.check_prompt(key, text)
        if problem:
            raise GenerationError(gettext("%(prompt)s: %(problem)s") % {
                "prompt": PROMPT_NAMES.get(key, key.replace("_", " ").capitalize()), "problem": problem})
    cases = list(case_set.cases.alive().order_by("line", "external_id"))
    if not cases:
        raise GenerationError(gettext("Case set %(name)s has no cases.") % {"name": repr(case_set.name)})
    total = len(cases) * len(doctor_models) * len(temps) * len(d_biases) * len(p_biases) * int(repeats)
    if total > MAX_DIALOGUES:
        raise GenerationError(gettext("That is %(total)s dialogues; the limit per job is %(limit)s.")
                              % {"total": total, "limit": MAX_DIALOGUES})
    corpus_name = (corpus_name or "").strip() or f"Generated from {case_set.name}"
    project = case_set.project_id  # the job, its corpus and its dialogues belong to the case set's project
    corpus = Corpus.objects.filter(name=corpus_name).first()
    if corpus is not None and corpus.is_deleted:
        raise GenerationError(gettext("Corpus %(name)s was deleted; choose another name.")
                              % {"name": repr(corpus_name)})
    if corpus is None:
        corpus = Corpus.objects.create(project_id=project, name=corpus_name[:200], created_by=user,
                                       description=f"Dialogues generated from case set {case_set.name}.")
        AuditEvent.record(user, "corpus.create", corpus, source="generation")
    snapshot = {
        "doctor_base_url": doctor_base_url, "doctor_api_key_env": doctor_api_key_env or "OPENAI_API_KEY",
        "patient_base_url": patient_base_url, "patient_api_key_env": patient_api_key_env or "OPENAI_API_KEY",
        "doctor_models": doctor_models, "patient_model": patient_model.strip(),
        "measurement_model": (measurement_model or "").strip() or patient_model.strip(),
        "moderator_model": (moderator_model or "").strip() or patient_model.strip(),
        "temperatures": temps, "doctor_biases": d_biases, "patient_biases": p_biases, "repeats": int(repeats),
        "max_turns": int(max_turns), "end_marker": end_marker.strip(), "reveal_diagnosis": bool(reveal_diagnosis),
        "patient_temperature": float(patient_temperature), "max_tokens": int(max_tokens),
        "concurrency": max(1, int(concurrency)), "requests_per_minute": requests_per_minute,
        "tokens_per_minute": tokens_per_minute, "timeout_seconds": float(timeout_seconds),
        "max_attempts": max(1, int(max_attempts)),
        "prices": {DOCTOR: [str(Decimal(str(doctor_price_in))), str(Decimal(str(doctor_price_out)))],
                   AGENT: [str(Decimal(str(patient_price_in))), str(Decimal(str(patient_price_out)))]},
        "currency": (currency or "USD").strip()[:8], "split": split, "prompts": texts,
    }
    job = GenerationJob.objects.create(
        project_id=project, name=(name or f"{', '.join(doctor_models)} vs {patient_model}")[:200], case_set=case_set,
        corpus=corpus,
        doctor_base_url=doctor_base_url, doctor_api_key_env=snapshot["doctor_api_key_env"],
        doctor_models=doctor_models, patient_base_url=patient_base_url,
        patient_api_key_env=snapshot["patient_api_key_env"], patient_model=snapshot["patient_model"],
        measurement_model=snapshot["measurement_model"], moderator_model=snapshot["moderator_model"],
        temperatures=temps, doctor_biases=d_biases, patient_biases=p_biases, repeats=int(repeats),
        max_turns=int(max_turns), end_marker=snapshot["end_marker"], reveal_diagnosis=bool(reveal_diagnosis),
        snapshot=snapshot, created_by=user, cost_cap=cost_cap, token_cap=token_cap)
    GeneratedDialogue.objects.bulk_create([
        GeneratedDialogue(job=job, case=case, doctor_model=model, temperature=temp, doctor_bias=db,
                          patient_bias=pb, repeat=r)
        for case in cases for model in doctor_models for temp in temps for db in d_biases for pb in p_biases
        for r in range(int(repeats))], batch_size=2000)
    AuditEvent.record(user, "generation_job.create", job, dialogues=total, corpus=corpus.name)
    return job


def start(job: GenerationJob, user=None) -> int:
    """Mark the job running and wake the workers (also resumes a paused job). Returns the open dialogues."""
    if not engine.resume(HANDLER, job, user, action="generation_job"):
        return 0
    return GeneratedDialogue.objects.filter(job=job, status__in=GeneratedDialogue.OPEN).count()


def set_status(job: GenerationJob, status: str, user=None, reason: str = "") -> GenerationJob:
    return engine.pause_or_cancel(job, status, user, reason, noun="job", action="generation_job",
                                  error=GenerationError)


def retry_failed(job: GenerationJob, user=None) -> int:
    """Put failed dialogues back to open (their stored turns are kept) and resume the job."""
    if job.status == GenerationJob.Status.CANCELLED:
        raise GenerationError(gettext("A cancelled job cannot be retried."))
    # A fresh retry round asks the endpoint again instead of reusing an answer that failed.
    count = GeneratedDialogue.objects.filter(job=job, status=GeneratedDialogue.Status.FAILED).update(
        status=GeneratedDialogue.Status.PENDING, attempts=0, error="", claimed_by="", claimed_until=None,
        not_before=None, retry_round=F("retry_round") + 1, updated_at=timezone.now())
    engine.reopened(HANDLER, job, count * HANDLER.steps_per_dialogue(job), user, action="generation_job",
                    dialogues=count)
    return count


def maybe_finish(job_id: int) -> bool:
    """Finish the job from database state once no dialogue is open."""
    return HANDLER.maybe_finish(job_id)


def fail_job(job_id: int, message: str) -> None:
    HANDLER.fail_job(job_id, message)


# ---------------------------------------------------------------------------------------------------------------
# requests: what each agent sees
# ---------------------------------------------------------------------------------------------------------------
def marker_index(text: str, marker: str) -> int:
    """Where the end marker starts in a doctor turn (case-insensitive, the colon optional), or -1."""
    core = marker.strip().rstrip(":").strip().lower()
    return text.lower().find(core) if core else -1


def diagnosis_after_marker(text: str, marker: str) -> str:
    at = marker_index(text, marker)
    if at < 0:
        return ""
    rest = text[at + len(marker.strip().rstrip(":").strip()):]
    return rest.lstrip(" :").strip()


def requests_test(text: str) -> bool:
    return prompts.TEST_MARKER.rstrip(":").lower() in text.lower()


def doctor_information(case: PatientCase) -> str:
    return case.doctor_info if case.kind == PatientCase.Kind.OSCE else prompts.SELF_REPORT_DOCTOR_INFO


def patient_information(case: PatientCase, reveal: bool) -> str:
    """The facts the patient simulator knows: never the diagnosis unless ``reveal``."""
    if case.kind == PatientCase.Kind.OSCE:
        lines = [prompts.describe(case.patient_info)]
    else:
        lines = [f"Your self-report, already sent to the doctor: {case.self_report}"]
        if case.patient_info:
            lines.append(prompts.describe(case.patient_info))
    if reveal and case.diagnosis:
        lines.append(prompts.fill(prompts.DIAGNOSIS_REVEALED, diagnosis=case.diagnosis))
    return "\n".join(line for line in lines if line)


def measurement_information(case: PatientCase) -> str:
    return prompts.describe({"Physical_Examination_Findings": case.examination or {},
                             "Test_Results": case.test_results or {}})


def _conversation(turns: list[dict], me: str, first_user: str | None, hidden: dict[str, str] | None = None
                  ) -> list[dict]:
    """The turns as chat messages from one agent's side: its own turns are the assistant's, every other turn is
    gathered into the user message that follows. ``hidden`` replaces the text of turns of a role."""
    messages: list[dict] = []
    pending: list[str] = [first_user] if first_user else []
    for turn in turns:
        if turn["role"] == me:
            if pending:
                messages.append({"role": "user", "content": "\n\n".join(pending)})
                pending = []
            messages.append({"role": "assistant", "content": turn["text"]})
        else:
            pending.append((hidden or {}).get(turn["role"], turn["text"]))
    if pending:
        messages.append({"role": "user", "content": "\n\n".join(pending)})
    return messages


def build_request(action: str, config: dict, gd: GeneratedDialogue, case: PatientCase, turns: list[dict]
                  ) -> tuple[str, dict]:
    """(endpoint side, chat-completion payload) of the next step."""
    texts = config["prompts"]
    if action == "doctor":
        system = prompts.fill(texts["doctor_prompt"], max_turns=config["max_turns"], end_marker=config["end_marker"],
                              tests=prompts.DOCTOR_TESTS if case.has_tests else "",
                              bias=prompts.bias_text("doctor", gd.doctor_bias),
                              information=doctor_information(case))
        opening = case.self_report if case.kind == PatientCase.Kind.SELF_REPORT else prompts.OSCE_OPENING
        messages = _conversation(turns, "doctor", opening)
        if sum(t["role"] == "doctor" for t in turns) + 1 >= config["max_turns"]:
            notice = prompts.fill(prompts.FINAL_TURN_NOTICE, end_marker=config["end_marker"])
            messages[-1] = {"role": "user", "content": f"{messages[-1]['content']}\n\n{notice}"}
        return DOCTOR, {"model": gd.doctor_model, "temperature": gd.temperature, "max_tokens": config["max_tokens"],
                        "messages": [{"role": "system", "content": system}, *messages]}
    if action == "patient":
        system = prompts.fill(texts["patient_prompt"], bias=prompts.bias_text("patient", gd.patient_bias),
                              information=patient_information(case, config["reveal_diagnosis"]))
        # Test results go to the doctor only: they may name the diagnosis.
        messages = _conversation(turns, "patient", None, hidden={"measurement": prompts.TEST_HIDDEN_FROM_PATIENT})
        return AGENT, {"model": config["patient_model"], "temperature": config["patient_temperature"],
                       "max_tokens": config["max_tokens"],
                       "messages": [{"role": "system", "content": system}, *messages]}
    if action == "measurement":
        system = prompts.fill(texts["measurement_prompt"], information=measurement_information(case))
        return AGENT, {"model": config["measurement_model"], "temperature": 0.0, "max_tokens": config["max_tokens"],
                       "messages": [{"role": "system", "content": system},
                                    {"role": "user", "content": f"The doctor's request: {turns[-1]['text']}"}]}
    if action == "moderator":
        question = prompts.fill(prompts.MODERATOR_QUESTION, diagnosis=case.diagnosis, doctor=turns[-1]["text"])
        return AGENT, {"model": config["moderator_model"], "temperature": 0.0, "max_tokens": 20,
                       "messages": [{"role": "system", "content": texts["moderator_prompt"]},
                                    {"role": "user", "content": question}]}
    raise ValueError(f"unknown action {action!r}")


def next_action(config: dict, gd: GeneratedDialogue, case: PatientCase, turns: list[dict]) -> tuple[str, str]:
    """(action, ending): action is doctor, patient, measurement, moderator or finish; ending is set when the
    dialogue is over (marker or turn_limit)."""
    if not turns:
        return "doctor", ""
    last = turns[-1]
    if last["role"] != "doctor":
        return "doctor", ""
    doctor_turns = sum(t["role"] == "doctor" for t in turns)
    if marker_index(last["text"], config["end_marker"]) >= 0:
        if case.diagnosis and gd.moderator_call_id is None:
            return "moderator", GeneratedDialogue.Ending.MARKER
        return "finish", GeneratedDialogue.Ending.MARKER
    if doctor_turns >= config["max_turns"]:
        return "finish", GeneratedDialogue.Ending.TURN_LIMIT
    if case.has_tests and requests_test(last["text"]):
        return "measurement", ""
    return "patient", ""


def mask_diagnosis(text: str, case: PatientCase, turns: list[dict]) -> tuple[str, bool]:
    """Mask the diagnosis in a patient turn unless the doctor said it first (then the patient may echo it)."""
    if not case.diagnosis:
        return text, False
    names = {case.diagnosis.strip(), case.diagnosis.split("(")[0].strip()}
    doctor_said = " ".join(t["text"] for t in turns if t["role"] == "doctor").lower()
    masked = False
    for name in sorted((n for n in names if len(n) >= 4), key=len, reverse=True):
        if name.lower() in text.lower() and name.lower() not in doctor_said:
            text = re.sub(re.escape(name), prompts.MASK, text, flags=re.IGNORECASE)
            masked = True
    return text, masked


def parse_verdict(content: str) -> bool | None:
    first = (content or "").strip().splitlines()[0] if (content or "").strip() else ""
    if YES.match(first):
        return True
    if NO.match(first):
        return False
    return None


# ---------------------------------------------------------------------------------------------------------------
# one step of a dialogue on the engine
# ---------------------------------------------------------------------------------------------------------------
def request_key(endpoint: str, payload: dict, gd: GeneratedDialogue) -> str:
    """The cache key: repeats of a condition and explicit retries get answers of their own."""
    extra = {}
    if gd.repeat:
        extra["_repeat"] = gd.repeat
    if gd.retry_round:
        extra["_retry_round"] = gd.retry_round
    return gateway.request_key(endpoint, {**payload, **extra}, project=gd.job.project_id)


@dataclass
class Step:
    """What one request of a dialogue is for."""

    gd: GeneratedDialogue
    action: str
    turns: list[dict]


class GenerationHandler(engine.Handler):
    """A generated dialogue is a unit: each claim takes its next step (a turn, or the moderator's verdict); the
    answer is stored as a turn and the dialogue is released for its following step."""

    kind = "generation"
    job_model = GenerationJob
    unit_model = GeneratedDialogue
    job_field = "job"
    open_statuses = GeneratedDialogue.OPEN
    active_statuses = GenerationJob.ACTIVE
    problem_statuses = (GeneratedDialogue.Status.FAILED,)

    def steps_per_dialogue(self, job: GenerationJob) -> int:
        """The most answered requests one dialogue takes: a doctor turn and a patient (or measurement) turn per
        round, and the moderator's verdict."""
        return 2 * int(job.snapshot["max_turns"]) + 1

    def request_units(self, job: GenerationJob) -> int:
        return self.open_units(job.pk).count() * self.steps_per_dialogue(job)

    def load(self, ids: list[int]) -> list[GeneratedDialogue]:
        return list(GeneratedDialogue.objects.filter(pk__in=ids).select_related("case").order_by("pk"))

    def prepare(self, job: GenerationJob, units: list[GeneratedDialogue]) -> list[engine.Request]:
        config = job.snapshot
        turns_of: dict[int, list[dict]] = defaultdict(list)
        for row in GenerationTurn.objects.filter(generated__in=units).order_by("generated_id", "index").values(
                "generated_id", "index", "role", "text"):
            turns_of[row["generated_id"]].append(row)
        endpoints = {side: gateway.resolve_endpoint(config[f"{name}_base_url"], config[f"{name}_api_key_env"])
                     for side, name in ((DOCTOR, "doctor"), (AGENT, "patient"))}
        requests = []
        for gd in units:
            turns = turns_of[gd.pk]
            action, ending = next_action(config, gd, gd.case, turns)
            if action == "finish":
                finalize(gd, turns, ending)
                continue
            side, payload = build_request(action, config, gd, gd.case, turns)
            endpoint = endpoints[side]
            prices = config["prices"][side]
            requests.append(engine.Request(
                units=[gd.pk], endpoint=endpoint, payload=payload, key=request_key(endpoint.base_url, payload, gd),
                limit=engine.endpoint_limit(endpoint, config),
                timeout=float(config["timeout_seconds"]), prices=(Decimal(prices[0]), Decimal(prices[1])),
                attempts=gd.attempts, max_attempts=int(config["max_attempts"]), data=Step(gd, action, turns)))
        return requests

    def record_call(self, job: GenerationJob, request: engine.Request, call: LLMCall) -> None:
        GenerationCall.objects.bulk_create([GenerationCall(job_id=job.pk, call=call, generated_id=request.units[0],
                                                           role=request.data.action)], ignore_conflicts=True)

    def apply(self, job: GenerationJob, requests: list[engine.Request], open_ids: set[int]) -> None:
        config = job.snapshot
        for r in requests:
            if r.units[0] in open_ids:
                _store_step(config, r.data, r.call, r.from_cache)


def _store_step(config: dict, step: Step, call: LLMCall, from_cache: bool) -> None:
    gd, action, turns = step.gd, step.action, step.turns
    now = timezone.now()
    released = {"claimed_by": "", "claimed_until": None, "not_before": None, "updated_at": now}
    content = (call.content or "").strip()
    if action == "moderator":
        GeneratedDialogue.objects.filter(pk=gd.pk).update(
            moderator_call=call, moderator_answer=content[:2000], moderator_from_cache=from_cache,
            correct=parse_verdict(content), attempts=0, error="", **released)
        return
    if not content:
        # An empty answer is not a turn: ask again in a fresh retry round (the empty one stays paid and cached).
        attempts = gd.attempts + 1
        if attempts >= int(config["max_attempts"]):
            GeneratedDialogue.objects.filter(pk=gd.pk).update(
                status=GeneratedDialogue.Status.FAILED, attempts=attempts,
                error=f"the {action} model gave {attempts} empty answers", **released)
            return
        GeneratedDialogue.objects.filter(pk=gd.pk).update(
            attempts=attempts, retry_round=gd.retry_round + 1, error=f"empty answer from the {action} model",
            **{**released, "not_before": now + timedelta(seconds=engine.backoff(attempts))})
        return
    masked = False
    if action == "patient" and not config["reveal_diagnosis"]:
        content, masked = mask_diagnosis(content, gd.case, turns)
    try:
        with transaction.atomic():
            GenerationTurn.objects.create(generated=gd, index=len(turns), role=action, text=content, call=call,
                                          from_cache=from_cache)
    except IntegrityError:  # another engine stored this position meanwhile (an expired claim): keep theirs
        GeneratedDialogue.objects.filter(pk=gd.pk).update(**released)
        return
    GeneratedDialogue.objects.filter(pk=gd.pk).update(
        status=GeneratedDialogue.Status.RUNNING, attempts=0, error="",
        turns_used=sum(t["role"] == "doctor" for t in turns) + (action == "doctor"), masked=gd.masked + masked,
        **released)


HANDLER = engine.register(GenerationHandler())


StepOutcome = engine.UnitOutcome  # states: stored, cached, finished, skipped, busy, retry, failed, fatal


def process_step(gd_id: int) -> StepOutcome:
    """Take the next step of one dialogue now, in this process (tests): the engine's synchronous path."""
    gd = GeneratedDialogue.objects.filter(pk=gd_id).values("job_id", "status").first()
    if gd is None:
        return StepOutcome("skipped")
    state = engine.process(HANDLER.kind, gd["job_id"], [gd_id], now=True).get(gd_id, "skipped")
    status = GeneratedDialogue.objects.filter(pk=gd_id).values_list("status", flat=True).first()
    if state == "done" and status == GeneratedDialogue.Status.DONE:
        HANDLER.maybe_finish(gd["job_id"])
        return StepOutcome("finished")
    names = {"done": "stored", "cached": "cached"}
    retry_in = engine.retry_in(HANDLER, [gd_id]) if state in ("retry", "busy") else None
    return StepOutcome(names.get(state, state), retry_in=retry_in,
                       next=state in ("done", "cached") and status in GeneratedDialogue.OPEN)


def external_id(gd: GeneratedDialogue) -> str:
    """The corpus id of a generated dialogue: "gen<job>-<opaque>-<case>". The opaque part is a keyed hash of
    the generated dialogue, so sorting by id neither groups nor orders dialogues by model or temperature
    (sequential ids follow the case x model x temperature order of the job)."""
    token = salted_hmac("minicex.generated-dialogue", f"{gd.job_id}:{gd.pk}").hexdigest()[:10]
    return f"gen{gd.job_id}-{token}-{gd.case.external_id}"[:200]


def replicate_fields(config: dict, case_id: str, repeat: int) -> dict:
    """A generated dialogue's case and replicate: the case it plays and, when the job repeats one condition (one
    temperature, one doctor and one patient bias), its repetition (1, 2, ...). Repeats of a job that sweeps
    conditions are not replicates of one model's answer, so they carry the case only."""
    single = all(len(config.get(key) or [None]) == 1 for key in ("temperatures", "doctor_biases", "patient_biases"))
    repeated = int(config.get("repeats") or 1) > 1 and single
    return {"case": str(case_id)[:200], "replicate": repeat + 1 if repeated else None}


@transaction.atomic
def finalize(gd: GeneratedDialogue, turns: list[dict], ending: str) -> Dialogue:
    """The finished dialogue becomes an annotation Dialogue in the job's corpus, run through the privacy filter."""
    gd.refresh_from_db()
    job, case = gd.job, gd.case
    config = job.snapshot
    final = diagnosis_after_marker(turns[-1]["text"], config["end_marker"]) if ending == "marker" else ""
    correct = gd.correct
    if case.diagnosis and ending == GeneratedDialogue.Ending.TURN_LIMIT:
        correct = False  # no diagnosis given within the turn limit (AgentClinic counts it as wrong)
    turn_list = [{"role": t["role"], "text": t["text"]} for t in turns]
    meta = {
        "generated": True, "generation_job": job.pk, "generated_dialogue": gd.pk, "model": gd.doctor_model,
        "temperature": gd.temperature, "case_id": case.external_id, "case_set": job.case_set.name,
        "case_kind": case.kind, "doctor_bias": gd.doctor_bias, "patient_bias": gd.patient_bias,
        "repeat": gd.repeat, "patient_model": config["patient_model"], "turns_used": gd.turns_used,
        "ended_by": ending, "final_diagnosis": final, "diagnosis_correct": correct,
    }
    fields = {"self_report": case.self_report, "turns": turn_list, "source_model": gd.doctor_model,
              "language": case.language, "split": config.get("split", ""), "meta": meta,
              **replicate_fields(config, case.external_id, gd.repeat), **privacy_fields(case.self_report, turn_list)}
    dialogue, _ = Dialogue.objects.get_or_create(corpus=job.corpus, external_id=external_id(gd), defaults=fields)
    GeneratedDialogue.objects.filter(pk=gd.pk).update(
        status=GeneratedDialogue.Status.DONE, ended_by=ending, final_diagnosis=final[:5000], correct=correct,
        dialogue=dialogue, error="", updated_at=timezone.now(), turns_used=sum(t["role"] == "doctor" for t in turns))
    return dialogue


# ---------------------------------------------------------------------------------------------------------------
# progress and report
# ---------------------------------------------------------------------------------------------------------------
def progress(job: GenerationJob) -> dict:
    """Counts, calls, tokens, cost, rate and ETA for the job page and the CLI."""
    counts = dict(GeneratedDialogue.objects.filter(job=job).values_list("status").annotate(n=Count("id"))
                  .order_by())
    total = sum(counts.values())
    done, failed = counts.get("done", 0), counts.get("failed", 0)
    remaining = counts.get("pending", 0) + counts.get("running", 0)
    turns = GenerationTurn.objects.filter(generated__job=job).aggregate(
        n=Count("id"), cached=Count("id", filter=Q(from_cache=True)))
    calls = LLMCall.objects.filter(pk__in=GenerationCall.objects.filter(job=job).values("call_id")).aggregate(
        n=Count("id"), pt=Sum("prompt_tokens"), ct=Sum("completion_tokens"))
    elapsed = rate = eta = None
    if job.started_at:
        end = job.finished_at or timezone.now()
        elapsed = max(0.001, (end - job.started_at).total_seconds())
        rate = (calls["n"] or 0) / elapsed
        finished = done + failed
        eta = remaining / (finished / elapsed) if finished and remaining else (0 if not remaining else None)
    spend = engine.spend(HANDLER, job)
    work = engine.open_work(job, remaining, eta)
    return {
        "total": total, "done": done, "failed": failed, **work,
        "in_progress": 0 if work["ended"] else counts.get("running", 0),
        "percent": round(100 * (total - remaining) / total, 1) if total else 0.0,
        "segments": engine.segments(total, done, 0, failed, ended=work["ended"], done_label="done"),
        "turns": turns["n"] or 0, "cached_turns": turns["cached"] or 0,
        "calls": calls["n"] or 0, "prompt_tokens": calls["pt"] or 0, "completion_tokens": calls["ct"] or 0,
        "cost": spend["cost"], "currency": spend["currency"], "spend": spend,
        "elapsed_seconds": elapsed, "calls_per_second": rate,
        "status": job.status, "status_label": job.get_status_display(), "error": job.error,
        "causes": engine.top_causes(HANDLER, job.pk) if failed else [],
        "delivery": delivery.state(HANDLER, job, remaining=remaining),
    }


def accuracy_table(records: list[dict], by: list[str], confidence: float = 0.95) -> list[dict]:
    """Diagnostic accuracy per group (pure): each record has the ``by`` keys, ``correct`` (True/False/None =
    not judged) and ``turns_used``. Accuracy is over judged dialogues, with a Wilson interval."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for record in records:
        groups[tuple(record[k] for k in by)].append(record)
    rows = []
    for key in sorted(groups, key=lambda k: tuple(str(v) for v in k)):
        members = groups[key]
        judged = [r for r in members if r["correct"] is not None]
        right = sum(1 for r in judged if r["correct"])
        from core.stats import wilson_ci  # pandas and scipy load only when a table is built

        ci = wilson_ci(right, len(judged), confidence=confidence)
        used = [int(r["turns_used"]) for r in members]
        rows.append({**dict(zip(by, key, strict=True)), "dialogues": len(members), "judged": len(judged),
                     "correct": right, "accuracy": ci["value"], "ci_low": ci["ci_low"], "ci_high": ci["ci_high"],
                     "turns_mean": mean(used) if used else None, "turns_median": median(used) if used else None,
                     "turns_max": max(used) if used else None})
    return rows


def report(job: GenerationJob) -> dict:
    """Diagnostic accuracy per doctor model and condition (cases with a known diagnosis) and turns used."""
    finished = list(GeneratedDialogue.objects.filter(job=job, status=GeneratedDialogue.Status.DONE)
                    .select_related("case").values("doctor_model", "temperature", "doctor_bias", "patient_bias",
                                                   "correct", "turns_used", "ended_by", "case__diagnosis"))
    with_dx = [r for r in finished if r["case__diagnosis"]]
    condition = ["doctor_model", "temperature", "doctor_bias", "patient_bias"]
    endings = defaultdict(lambda: {"marker": 0, "turn_limit": 0})
    for r in finished:
        endings[r["doctor_model"]][r["ended_by"] or "turn_limit"] += 1
    return {
        "by_model": accuracy_table(with_dx, ["doctor_model"]),
        "by_condition": accuracy_table(with_dx, condition),
        "turns_by_condition": accuracy_table(finished, condition),
        "endings": dict(endings), "finished": len(finished), "with_diagnosis": len(with_dx),
        "ci_method": "Wilson score interval, 95%",
    }


def transcript(gd: GeneratedDialogue) -> list[dict[str, Any]]:
    return list(GenerationTurn.objects.filter(generated=gd).order_by("index").values("index", "role", "text",
                                                                                         "from_cache"))
