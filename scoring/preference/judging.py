"""LLM judges answering a preference study's comparisons, through the same gateway, limits and request cache as
judge runs (the LLM engine, scoring.llm.engine).

Every pair is asked in both orders (``forward``: the pair's first candidate as A; ``reverse``: the second as A),
one request per order answering every criterion as JSON. Combined per criterion: when the two orders name the
same candidate (or both say tie) that is the judge's verdict; when they disagree it is a tie (MT-Bench's
convention for position bias). Position consistency (share of agreeing orders) is reported per judge.
Each (pair, order) is a unit of work on the LLM engine.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone
from django.utils.translation import gettext as _

from core.jobs import precompute
from projects.models import AuditEvent
from scoring.judges.models import JudgeConfig
from scoring.llm import delivery, engine, gateway
from scoring.llm.engine import UnitOutcome, config_snapshot, outcome_of
from scoring.llm.models import LLMCall
from scoring.preference.errors import PreferenceError
from scoring.preference.models import PreferenceJudgeRun, PreferencePair, PreferenceStudy, PreferenceVerdict

SYSTEM_PROMPT = (
    "You are an experienced physician acting as an impartial judge. You compare two candidates (A and B) for the "
    "same case and decide, for each criterion, which one is better or whether they are equally good. Do not let "
    "the order in which the candidates are shown, their length or their style influence you."
)
ROLE_NAMES = {"doctor": "Doctor", "patient": "Patient", "measurement": "Measurement"}


def render_content(content: dict) -> str:
    """A candidate's blinded content as plain text for the judge."""
    kind = content.get("type")
    if kind == "answer":
        return content.get("text", "")
    if kind == "dialogue":
        return "\n".join(f"{ROLE_NAMES.get(t['role'], t['role'])}: {t['text']}" for t in content.get("turns", []))
    if kind == "evaluation":
        lines = []
        for row in content.get("rows", []):
            line = f"Item {row['code']} ({row['text']}): {row['verdict']}"
            if row.get("rationale"):
                line += f". Reason: {row['rationale']}"
            lines.append(line)
        return "\n".join(lines)
    return json.dumps(content, ensure_ascii=False)


def render_context(study: PreferenceStudy, pair: PreferencePair) -> str:
    from annotation.dialogues import redacted

    item = pair.item
    if study.kind == PreferenceStudy.Kind.EVALUATION and item.dialogue_id:
        self_report, turns = redacted(item.dialogue)
        lines = "\n".join(f"{ROLE_NAMES.get(t['role'], t['role'])}: {t['text']}" for t in turns)
        return ("Two evaluations of the doctor in the following consultation, each rating the doctor on the "
                f"items of the LLM-specific Mini-CEX.\n\nThe patient's self-report:\n{self_report}\n\n"
                f"The doctor-patient dialogue:\n{lines}")
    if study.kind == PreferenceStudy.Kind.DIALOGUE:
        return f"Two doctors' consultations with a patient who reported:\n{item.prompt}"
    text = f"Two answers to the following question:\n{item.prompt}" if item.prompt else "Two answers."
    if item.reference:
        text += f"\n\nReference answer:\n{item.reference}"
    return text


def schema(codes: list[str]) -> dict:
    return {"type": "object", "properties": {code: {"type": "string", "enum": ["A", "B", "tie"]} for code in codes},
            "required": codes, "additionalProperties": False}


def build_payload(config: dict, study: PreferenceStudy, pair: PreferencePair, order: str,
                  criteria: list[tuple[str, str, str]]) -> dict:
    a, b = (pair.first, pair.second) if order == PreferenceVerdict.Order.FORWARD else (pair.second, pair.first)
    listing = "\n".join(f"- {code}: {name}. {desc}".rstrip() for code, name, desc in criteria)
    user = (f"{render_context(study, pair)}\n\n[Candidate A]\n{render_content(a.content)}\n[End of candidate A]\n\n"
            f"[Candidate B]\n{render_content(b.content)}\n[End of candidate B]\n\n"
            f"Criteria:\n{listing}\n\nFor every criterion answer \"A\" if A is better, \"B\" if B is better, or "
            "\"tie\". Return one JSON object whose keys are the criterion codes.")
    payload = {"model": config["model"], "temperature": config["temperature"], "max_tokens": config["max_tokens"],
               "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]}
    if config.get("seed") is not None:
        payload["seed"] = config["seed"]
    if config.get("structured_output", True):
        payload["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "preference", "strict": True, "schema": schema([c[0] for c in criteria])}}
    return payload


_CHOICE = {"a": "A", "b": "B", "tie": "tie", "equal": "tie", "same": "tie", "both": "tie", "none": "tie"}


def parse_choices(content: str, codes: list[str]) -> dict[str, str] | None:
    """The JSON answer with one of A / B / tie for every criterion code; None when anything is missing."""
    text = (content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    result = {}
    for code in codes:
        value = _CHOICE.get(str(data.get(code, "")).strip().lower())
        if value is None:
            return None
        result[code] = value
    return result


# ---------------------------------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------------------------------
@transaction.atomic
def create_run(study: PreferenceStudy, config: JudgeConfig, user=None, *, cost_cap: Decimal | None = None,
               token_cap: int | None = None) -> PreferenceJudgeRun:
    """One pending verdict per pair and order."""
    study.refresh_from_db(fields=["status", "deleted_at"])
    if study.is_deleted or study.status == PreferenceStudy.Status.DRAFT:
        raise PreferenceError(_("Open the study first: a judge answers the same comparisons as the raters."),
                              status=409)
    if config.project_id != study.project_id:
        raise PreferenceError(_("Choose a judge of the study's project."))
    if study.sources.filter(judge_run__config=config).exists():
        raise PreferenceError(_("This judge configuration is one of the sources compared; choose another judge."))
    gateway.usable_endpoint(config.base_url, config.api_key_env)
    pairs = list(study.pairs.filter(item__deleted_at__isnull=True).values_list("id", flat=True))
    if not pairs:
        raise PreferenceError(_("The study has no comparisons."))
    run = PreferenceJudgeRun.objects.create(project_id=study.project_id, study=study, config=config,
                                            snapshot=config_snapshot(config), created_by=user, cost_cap=cost_cap,
                                            token_cap=token_cap)
    PreferenceVerdict.objects.bulk_create([PreferenceVerdict(run=run, pair_id=p, order=o) for p in pairs
                                           for o in PreferenceVerdict.Order.values])
    AuditEvent.record(user, "preference.judge_run", study, run=run.pk, config=config.pk, units=2 * len(pairs))
    return run


def start(run: PreferenceJudgeRun, user=None) -> int:
    """Start the run, or resume it after a pause (a refused key, a spending cap, a pause by a coordinator)."""
    if not engine.resume(HANDLER, run, user, action="preference.judge"):
        return 0
    return PreferenceVerdict.objects.filter(run=run, status=PreferenceVerdict.Status.PENDING).count()


def set_status(run: PreferenceJudgeRun, status: str, user=None, reason: str = "") -> PreferenceJudgeRun:
    """Pause or cancel the run (requests in flight are stored; nothing more is sent)."""
    return engine.pause_or_cancel(run, status, user, reason, noun="judge run", action="preference.judge",
                                  error=lambda message: PreferenceError(message, status=409))


def cancel(run: PreferenceJudgeRun, user=None) -> PreferenceJudgeRun:
    return set_status(run, PreferenceJudgeRun.Status.CANCELLED, user)


def retry_failed(run: PreferenceJudgeRun, user=None) -> int:
    """Ask failed and unscored comparisons again (a fresh allowance of requests for them) and resume the run."""
    if run.status == PreferenceJudgeRun.Status.CANCELLED:
        raise PreferenceError(_("A cancelled judge run cannot be retried."), status=409)
    problems = PreferenceVerdict.objects.filter(run=run, status__in=[PreferenceVerdict.Status.FAILED,
                                                                      PreferenceVerdict.Status.UNSCORED])
    count = problems.update(status=PreferenceVerdict.Status.PENDING, attempts=0, error="", claimed_by="",
                            claimed_until=None, not_before=None, updated_at=timezone.now())
    engine.reopened(HANDLER, run, count, user, action="preference.judge", verdicts=count)
    return count


def maybe_finish(run_id: int) -> bool:
    return HANDLER.maybe_finish(run_id)


def _criteria(study: PreferenceStudy) -> list[tuple[str, str, str]]:
    return list(study.criteria.values_list("code", "name", "description"))


class PreferenceJudgeHandler(engine.Handler):
    """Each (pair, order) is a unit: one request answering every criterion as JSON."""

    kind = "preference"
    job_model = PreferenceJudgeRun
    unit_model = PreferenceVerdict
    job_field = "run"

    def finished(self, job: PreferenceJudgeRun) -> None:
        """The study's stored results get the judge's verdicts (once the study is unblinded)."""
        precompute.changed(precompute.PREFERENCE_JUDGE_RUN, study=job.study)

    def load(self, ids: list[int]) -> list[PreferenceVerdict]:
        return list(PreferenceVerdict.objects.filter(pk__in=ids).select_related(
            "pair__item__dialogue", "pair__first", "pair__second").prefetch_related(
            "pair__item__dialogue__redactions").order_by("pk"))

    def prepare(self, run: PreferenceJudgeRun, units: list[PreferenceVerdict]) -> list[engine.Request]:
        config = run.snapshot
        endpoint = gateway.resolve_endpoint(config["base_url"], config["api_key_env"])
        criteria = _criteria(run.study)
        limit = engine.endpoint_limit(endpoint, config)  # shared with every job sending to this endpoint
        prices = (Decimal(config["price_input_per_1k"]), Decimal(config["price_output_per_1k"]))
        requests = []
        for verdict in units:
            payload = build_payload(config, run.study, verdict.pair, verdict.order, criteria)
            requests.append(engine.Request(
                units=[verdict.pk], endpoint=endpoint, payload=payload,
                key=gateway.request_key(endpoint.base_url, payload, project=run.project_id), limit=limit,
                timeout=float(config["timeout_seconds"]), prices=prices, attempts=verdict.attempts,
                max_attempts=int(config["max_attempts"]), data=[c[0] for c in criteria]))
        return requests

    def apply(self, run: PreferenceJudgeRun, requests: list[engine.Request], open_ids: set[int]) -> None:
        now = timezone.now()
        for r in requests:
            if r.units[0] not in open_ids:
                continue
            choices = parse_choices(r.call.content, r.data)
            PreferenceVerdict.objects.filter(pk=r.units[0]).update(
                choices=choices or {}, rationale=(r.call.content or "")[:4000], call=r.call,
                from_cache=r.from_cache,
                status=PreferenceVerdict.Status.DONE if choices else PreferenceVerdict.Status.UNSCORED,
                error="" if choices else "The answer is not JSON with A, B or tie for every criterion.",
                claimed_by="", claimed_until=None, not_before=None, updated_at=now)


HANDLER = engine.register(PreferenceJudgeHandler())


def process_verdict(verdict_id: int) -> UnitOutcome:
    """Ask the judge one pair in one order now, in this process (tests): the engine's synchronous path."""
    run_id = PreferenceVerdict.objects.filter(pk=verdict_id).values_list("run_id", flat=True).first()
    if run_id is None:
        return UnitOutcome("skipped")
    return outcome_of(engine.process(HANDLER.kind, run_id, [verdict_id], now=True), HANDLER, [verdict_id])


# ---------------------------------------------------------------------------------------------------------------
# combining the two orders
# ---------------------------------------------------------------------------------------------------------------
def to_outcome(side_choice: str, a_is_first: bool) -> str | None:
    """A side choice (A / tie / B) as an outcome for the pair: first, tie or second."""
    if side_choice == "tie":
        return "tie"
    if side_choice not in ("A", "B"):
        return None
    return "first" if (side_choice == "A") == a_is_first else "second"


def combined(run: PreferenceJudgeRun) -> dict:
    """:func:`combine` of a run's finished verdicts."""
    return combine(verdict_choices(run), [c[0] for c in _criteria(run.study)])


def verdict_choices(run: PreferenceJudgeRun) -> dict[int, dict[str, dict[str, str]]]:
    """A run's finished verdicts: pair id -> order (forward / reverse) -> side choice by criterion code."""
    by_pair: dict[int, dict[str, dict[str, str]]] = {}
    for verdict in PreferenceVerdict.objects.filter(run=run, status=PreferenceVerdict.Status.DONE):
        by_pair.setdefault(verdict.pair_id, {})[verdict.order] = verdict.choices or {}
    return by_pair


def combine(by_pair: dict[Any, dict[str, dict[str, str]]], codes: list[str]) -> dict:
    """Per (pair, criterion code): the forward and reverse outcomes and the combined verdict (disagreement
    between the orders is a tie; a missing order leaves the verdict missing), plus per-criterion position
    consistency and the judge's share of "A" choices. ``by_pair``: pair -> order (forward / reverse) -> the
    finished verdict's side choices by criterion code."""
    verdicts: dict[tuple[Any, str], dict] = {}
    consistency: dict[str, Counter] = {code: Counter() for code in codes}
    side_choices: list[str] = []
    for pair_id, orders in by_pair.items():
        for code in codes:
            fwd = orders.get("forward")
            rev = orders.get("reverse")
            f = to_outcome(fwd.get(code, ""), True) if fwd is not None else None
            r = to_outcome(rev.get(code, ""), False) if rev is not None else None
            for v in (fwd, rev):
                if v is not None and v.get(code):
                    side_choices.append(v[code])
            final = None
            if f is not None and r is not None:
                final = f if f == r else "tie"
                consistency[code]["n"] += 1
                consistency[code]["consistent"] += f == r
            verdicts[(pair_id, code)] = {"forward": f, "reverse": r, "final": final}
    per_criterion = {code: {"n": c["n"], "consistent": c["consistent"],
                            "value": (c["consistent"] / c["n"]) if c["n"] else None}
                     for code, c in consistency.items()}
    total_n = sum(c["n"] for c in consistency.values())
    total_ok = sum(c["consistent"] for c in consistency.values())
    return {"verdicts": verdicts, "consistency": per_criterion,
            "consistency_overall": {"n": total_n, "consistent": total_ok,
                                    "value": total_ok / total_n if total_n else None},
            "side_choices": side_choices}


def progress(run: PreferenceJudgeRun) -> dict:
    counts = dict(PreferenceVerdict.objects.filter(run=run).values_list("status").annotate(n=Count("id"))
                  .order_by())
    total = sum(counts.values())
    pending = counts.get("pending", 0)
    done, unscored, failed = counts.get("done", 0), counts.get("unscored", 0), counts.get("failed", 0)
    calls = (LLMCall.objects.filter(pk__in=PreferenceVerdict.objects.filter(run=run, from_cache=False)
                                    .exclude(call=None).values("call_id")).aggregate(n=Count("id")))
    spend = engine.spend(HANDLER, run)
    work = engine.open_work(run, pending, None)
    return {"total": total, "done": done, "unscored": unscored, "failed": failed, "pending": work["remaining"],
            "not_done": work["not_done"], "ended": work["ended"],
            "percent": round(100 * (total - pending) / total) if total else 0,
            "segments": engine.segments(total, done, unscored, failed, ended=work["ended"], done_label="answered"),
            "calls": calls["n"] or 0,
            "cost": spend["cost"], "currency": spend["currency"], "spend": spend, "status": run.status,
            "status_label": run.get_status_display(), "error": run.error,
            "causes": engine.top_causes(HANDLER, run.pk) if failed or unscored else [],
            "delivery": delivery.state(HANDLER, run, remaining=pending)}

