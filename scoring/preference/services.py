"""Preference study services: set-up (sources, items, candidates), blinding, assignment with side
randomisation, answers with history, lock and audited unblinding.

Blinding rules (DESIGN.md section 3): raters see "A" and "B" only; which candidate is A is randomised per rater and
task from the study's seed (:func:`side_for`) and stored on the task; the content shown is a snapshot in which
everything that could reveal the source is removed (:func:`blind_text`); source identities appear in no page,
export or API response until the study is locked and then unblinded (an explicit, logged action).
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable
from itertools import combinations

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotation.dialogues import redacted
from annotation.importers import LineError, json_objects
from annotation.models import Corpus, Dialogue, Item, PrivacyStatus
from annotation.queue import AssignResult, Seat, WorkQueue, progress_counts
from annotation.status import WorkStatus
from projects import scoping
from projects.models import AuditEvent
from projects.pseudonyms import pseudonyms
from projects.scoping import runs_in_project
from scoring.judges.models import JudgeResult, JudgeRun
from scoring.preference.errors import PreferenceError
from scoring.preference.models import (
    PreferenceAnswer,
    PreferenceAnswerChange,
    PreferenceCandidate,
    PreferenceCriterion,
    PreferenceItem,
    PreferencePair,
    PreferenceRater,
    PreferenceSource,
    PreferenceStudy,
    PreferenceTask,
)

# Zhang et al., AutoMedEval: section 4.4.1 (responses) and appendix E (the double-blind study of evaluations).
CRITERIA_PRESETS: dict[str, list[tuple[str, str, str]]] = {
    "evaluation": [
        ("knowledge", "Knowledge correctness",
         "The correctness of the medical knowledge applied when analysing the doctor's performance."),
        ("reference", "Reference correctness",
         "No misattribution: the evaluation quotes and attributes what the doctor actually said, and contains no "
         "unpractical information."),
        ("fluency", "Fluency", "The fluency of the language and how easy the evaluation is to understand."),
    ],
    "response": [
        ("relevancy", "Relevancy", "How well the answer addresses the patient's question or case."),
        ("knowledge", "Knowledge correctness", "The accuracy of the medical knowledge in the answer."),
        ("fluency", "Fluency", "The naturalness of the language and how easy the answer is to understand."),
    ],
    "overall": [("overall", "Overall preference", "Which candidate is better overall?")],
}
CHOICES = ("A", "tie", "B")


# ---------------------------------------------------------------------------------------------------------------
# blinding
# ---------------------------------------------------------------------------------------------------------------
MODEL_NAME = re.compile(
    r"(?i)\b(chat\s?gpt[\w.-]*|gpt[- ]?\d[\w.-]*|gpt|o[134]-(?:mini|preview)[\w.-]*|claude[\w.-]*|gemini[\w.-]*|"
    r"bard|llama[\w.-]*|qwen[\w.-]*|mistral[\w.-]*|mixtral[\w.-]*|deepseek[\w.-]*|baichuan[\w.-]*|chatglm[\w.-]*|"
    r"glm-\d[\w.-]*|huatuo\w*|automedeval|ernie[\w.-]*|yi-\d[\w.-]*|internlm[\w.-]*|openai|anthropic)\b")
SELF_REFERENCE = re.compile(
    r"(?i)(as an? (?:ai|artificial intelligence|(?:large )?language model|llm|virtual assistant)"
    r"(?: (?:model|assistant))?(?: (?:developed|created|trained) by [^,.;\n]+)?[,;:]?\s*|"
    r"i(?: am|'m) (?:an? )?(?:ai|artificial intelligence|(?:large )?language model|virtual assistant)"
    r"(?: (?:model|assistant))?(?: (?:developed|created|trained) by [^,.;\n]+)?[.!,]?\s*)")
RUN_ID = re.compile(r"(?i)\b(?:judge\s+)?run\s*(?:#|no\.?|id)?\s*\d+\b|#\d+\b")
MARKDOWN = [
    (re.compile(r"(\*\*|__)(.+?)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"\1"),
    (re.compile(r"`([^`]*)`"), r"\1"),
    (re.compile(r"(?m)^\s{0,3}#{1,6}\s+"), ""),
    (re.compile(r"(?m)^\s*(?:[*•·+–—-]|\d+[.)])\s+"), "- "),
    (re.compile(r"(?m)^\s*>\s?"), ""),
]
REMOVED = "[name removed]"
MIN_BOILERPLATE_CHARS = 12


def normalise_text(text: str) -> str:
    """One formatting for everybody: Unicode NFKC, plain quotes, no Markdown emphasis or headings, one bullet
    style, single spaces, at most one blank line."""
    text = unicodedata.normalize("NFKC", str(text or ""))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.translate(str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"}))
    for pattern, repl in MARKDOWN:
        text = pattern.sub(repl, text)
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def strip_tells(text: str, tells: Iterable[str]) -> str:
    """Remove what names a source: its own tells (label, model, judge name, run id), any known model name,
    self-descriptions ("As an AI language model ...") and run numbers."""
    for tell in sorted({t.strip() for t in tells if t and len(t.strip()) >= 2}, key=len, reverse=True):
        text = re.sub(r"(?i)(?<![\w])" + re.escape(tell) + r"(?![\w])", REMOVED, text)
    text = SELF_REFERENCE.sub("", text)
    text = MODEL_NAME.sub(REMOVED, text)
    text = RUN_ID.sub("", text)
    text = re.sub(r"(?:\[name removed\][\s,/&]*){2,}", REMOVED + " ", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def _segments(text: str) -> list[str]:
    """Lines, and sentences within lines: the units boilerplate is made of."""
    out = []
    for line in text.split("\n"):
        out.extend(s.strip() for s in re.split(r"(?<=[.!?。！？])\s+", line) if s.strip())
    return out


def boilerplate(texts_by_source: dict[int, list[str]], share: float = 0.6) -> dict[int, set[str]]:
    """Per source, the sentences it repeats in at least ``share`` of its candidates (and at least twice), e.g. a
    fixed greeting, disclaimer or signature: formatting tells the blinding removes."""
    result: dict[int, set[str]] = {}
    for source_id, texts in texts_by_source.items():
        counts: Counter = Counter()
        for text in texts:
            counts.update({s.lower() for s in _segments(text) if len(s) >= MIN_BOILERPLATE_CHARS})
        need = max(2, share * len(texts))
        result[source_id] = {s for s, n in counts.items() if n >= need}
    return result


def blind_text(text: str, tells: Iterable[str] = (), boiler: set[str] | None = None) -> str:
    """The text as raters see it: normalised, without source names or the source's boilerplate sentences."""
    text = normalise_text(text)
    if boiler:
        kept_lines = []
        for line in text.split("\n"):
            parts = [s for s in re.split(r"(?<=[.!?。！？])\s+", line) if s.strip().lower() not in boiler]
            kept_lines.append(" ".join(parts))
        candidate = re.sub(r"\n{3,}", "\n\n", "\n".join(kept_lines)).strip()
        text = candidate or text
    return strip_tells(text, tells)


def source_tells(source: PreferenceSource) -> list[str]:
    tells = [source.label, *source.tells]
    run = source.judge_run
    if run is not None:
        snap = run.snapshot or {}
        tells += [str(snap.get("name", "")), str(snap.get("model", "")), str(snap.get("prompt_set_name", ""))]
    return [t for t in tells if t]


def study_tells(study: PreferenceStudy) -> list[str]:
    """Every source's tells: a candidate must not name its own source, nor a competitor."""
    return [t for source in study.sources.select_related("judge_run") for t in source_tells(source)]


# ---------------------------------------------------------------------------------------------------------------
# study set-up
# ---------------------------------------------------------------------------------------------------------------
def parse_criteria(text: str) -> list[tuple[str, str, str]]:
    """Criteria from lines "Name: description" (the code is derived from the name)."""
    result, seen = [], set()
    for raw in (text or "").splitlines():
        if not raw.strip():
            continue
        name, _sep, description = raw.partition(":")
        name = name.strip()
        code = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or f"c{len(result) + 1}"
        if code in seen:
            raise PreferenceError(_('The criterion "%(name)s" appears twice.') % {"name": name})
        seen.add(code)
        result.append((code, name[:200], description.strip()))
    return result


@runs_in_project
@transaction.atomic
def create_study(*, name: str, kind: str, criteria: str | list[tuple[str, str, str]] = "evaluation",
                 overlap: int = 3, seed: int | None = None, instructions: str = "", corpus: Corpus | None = None,
                 group_key: str = "case_id", item_codes: list[str] | None = None, user=None,
                 project=None) -> PreferenceStudy:
    """A draft study with its criteria: a preset name (evaluation, response, overall) or (code, name,
    description) tuples. It belongs to ``project`` (default: the active scope's); names are unique per project."""
    project_id = project
    name = (name or "").strip()
    if not name:
        raise PreferenceError(_("Give the study a name."))
    if corpus is not None and corpus.project_id != project_id:
        raise PreferenceError(_("The corpus belongs to another project."))
    if PreferenceStudy.objects.filter(name=name).exists():
        raise PreferenceError(_('A study called "%(name)s" already exists.') % {"name": name})
    if kind not in PreferenceStudy.Kind.values:
        raise PreferenceError(_("Unknown study kind %(kind)s; use %(kinds)s.")
                              % {"kind": repr(kind), "kinds": ", ".join(PreferenceStudy.Kind.values)})
    if overlap < 1:
        raise PreferenceError(_("Overlap must be at least 1 rater per comparison."))
    if isinstance(criteria, str):
        if criteria not in CRITERIA_PRESETS:
            raise PreferenceError(_("Unknown criteria preset %(preset)s; use %(presets)s.")
                                  % {"preset": repr(criteria), "presets": ", ".join(CRITERIA_PRESETS)})
        criteria = CRITERIA_PRESETS[criteria]
    if not criteria:
        raise PreferenceError(_("A study needs at least one criterion."))
    study = PreferenceStudy.objects.create(
        project_id=project_id, name=name, kind=kind, overlap=overlap,
        seed=random.SystemRandom().randrange(1, 2**31) if seed is None else seed, instructions=instructions,
        corpus=corpus, group_key=group_key.strip(), item_codes=list(item_codes or []), created_by=user)
    PreferenceCriterion.objects.bulk_create([
        PreferenceCriterion(study=study, code=code, name=cname, description=desc, order=i)
        for i, (code, cname, desc) in enumerate(criteria)])
    AuditEvent.record(user, "preference.create", study, kind=kind, overlap=overlap, seed=study.seed,
                      criteria=[c[0] for c in criteria])
    return study


def _ensure_draft(study: PreferenceStudy) -> None:
    study.refresh_from_db(fields=["status", "deleted_at"])  # never trust a stale copy
    if study.is_deleted:
        raise PreferenceError(_("This study was deleted."), status=404)
    if study.status != PreferenceStudy.Status.DRAFT:
        raise PreferenceError(_("The study is open: sources, items and criteria can no longer change."), status=409)


def _add_source(study: PreferenceStudy, label: str, *, judge_run: JudgeRun | None = None,
                tells: list[str] | None = None) -> PreferenceSource:
    label = label.strip()
    if not label:
        raise PreferenceError(_("A source needs a name."))
    existing = PreferenceSource.objects.filter(study=study, label=label).first()
    if existing:
        return existing
    position = PreferenceSource.objects.filter(study=study).count() + 1
    return PreferenceSource.objects.create(study=study, label=label, position=position, judge_run=judge_run,
                                           tells=tells or [])


def _item(study: PreferenceStudy, external_id: str, **fields) -> PreferenceItem:
    item, _created = PreferenceItem.objects.get_or_create(study=study, external_id=str(external_id)[:200],
                                                          defaults=fields)
    return item


def _verdict_text(item: Item, value: int | None) -> str:
    if value is None:
        return "No verdict"
    if item.response_type == Item.ResponseType.BINARY:
        return "Yes" if value == 1 else "No"
    level = next((lv for lv in item.levels.all() if lv.value == value), None)
    return f"{value} {level.text_en}" if level else str(value)


@transaction.atomic
def add_judge_runs(study: PreferenceStudy, runs: list[JudgeRun], user=None) -> dict:
    """Evaluation studies: each judge run is a source; items are the dialogues every run judged; a candidate is
    one run's evaluation of the dialogue (per-item verdicts with rationale). Judge runs of the same
    configuration are told apart by run id (which raters never see)."""
    _ensure_draft(study)
    if study.kind != PreferenceStudy.Kind.EVALUATION:
        raise PreferenceError(_("Judge runs are sources of evaluation studies only."))
    runs = list(runs)
    if len({r.pk for r in runs}) < 2 and not study.sources.exists():
        raise PreferenceError(_("Choose at least two judge runs to compare."))
    if any(r.project_id != study.project_id for r in runs):
        raise PreferenceError(_("Only judge runs of the study's project can be compared."))
    unfinished = [r for r in runs if not r.is_finished]
    if unfinished:
        raise PreferenceError("Only finished judge runs can be compared; unfinished: "
                              + ", ".join(f"run #{r.pk}" for r in unfinished))
    codes = set(study.item_codes or [])
    per_run: dict[int, dict[int, list[JudgeResult]]] = {}
    for run in runs:
        qs = (JudgeResult.objects.filter(run=run).exclude(status=JudgeResult.Status.PENDING)
              .select_related("item").prefetch_related("item__levels").order_by("dialogue_id", "item__order"))
        if codes:
            qs = qs.filter(item__code__in=codes)
        grouped: dict[int, list[JudgeResult]] = defaultdict(list)
        for result in qs:
            grouped[result.dialogue_id].append(result)
        per_run[run.pk] = grouped
    common = set.intersection(*(set(g) for g in per_run.values())) if per_run else set()
    existing_dialogues = set(study.items.alive().exclude(dialogue=None).values_list("dialogue_id", flat=True))
    if existing_dialogues:
        common &= existing_dialogues
    if not common:
        raise PreferenceError(_("These judge runs have no judged dialogue in common."))
    labels = Counter(r.name for r in runs)
    sources = {}
    for run in runs:
        name = run.name
        label = name if labels[name] == 1 else f"{name} (run #{run.pk})"
        sources[run.pk] = _add_source(study, label, judge_run=run, tells=[name, run.snapshot.get("model", "")])
    dialogues = Dialogue.objects.in_bulk(common)
    texts: dict[int, list[str]] = defaultdict(list)
    for run in runs:
        for dialogue_id in common:
            texts[sources[run.pk].pk] += [r.rationale for r in per_run[run.pk][dialogue_id] if r.rationale]
    boiler = boilerplate(texts)
    tells = study_tells(study)
    created = 0
    for dialogue_id in sorted(common):
        dialogue = dialogues[dialogue_id]
        item = _item(study, dialogue.external_id, dialogue=dialogue, prompt=redacted(dialogue)[0])
        for run in runs:
            source = sources[run.pk]
            rows = [{"code": r.item.code, "text": r.item.text_en, "verdict": _verdict_text(r.item, r.value),
                     "rationale": blind_text(r.rationale, tells, boiler[source.pk])
                     if r.rationale else ""}
                    for r in per_run[run.pk][dialogue_id]]
            original = [{"code": r.item.code, "value": r.value, "rationale": r.rationale, "status": r.status,
                         "result": r.pk} for r in per_run[run.pk][dialogue_id]]
            _candidate, made = PreferenceCandidate.objects.update_or_create(
                item=item, source=source, defaults={"content": {"type": "evaluation", "rows": rows},
                                                    "original": {"results": original, "run": run.pk}})
            created += made
    AuditEvent.record(user, "preference.add_sources", study, runs=[r.pk for r in runs], items=len(common),
                      candidates=created)
    return {"sources": len(runs), "items": len(common), "candidates": created}


def dialogue_source(dialogue: Dialogue) -> str:
    return (dialogue.source_model or str((dialogue.meta or {}).get("model", "") or "")).strip()


@transaction.atomic
def add_dialogues(study: PreferenceStudy, corpus: Corpus, *, models: list[str] | None = None,
                  group_key: str | None = None, user=None) -> dict:
    """Dialogue studies: dialogues of different doctor models on the same case, grouped by a metadata key
    (default ``case_id``); the source is the dialogue's model. Cases with fewer than two models are left out
    (and counted); a model with several dialogues on one case contributes its first (by external id)."""
    _ensure_draft(study)
    if study.kind != PreferenceStudy.Kind.DIALOGUE:
        raise PreferenceError(_("Dialogues are candidates of dialogue studies only."))
    if corpus.project_id != study.project_id:
        raise PreferenceError(_("Only corpora of the study's project can be compared."))
    key = (group_key if group_key is not None else study.group_key or "case_id").strip()
    if not key:
        raise PreferenceError(_("Name the metadata key that groups dialogues of the same case (e.g. case_id)."))
    wanted = {m.strip() for m in models or [] if m.strip()}
    groups: dict[str, dict[str, Dialogue]] = defaultdict(dict)
    duplicates = 0
    # why each of the corpus's dialogues is or is not used (the study page says it)
    left_out = {"privacy": corpus.dialogues.alive().filter(privacy_status=PrivacyStatus.EXCLUDED).count(),
                "no_case": 0, "no_model": 0, "other_model": 0, "duplicate": 0, "single_model": 0}
    qs = (corpus.dialogues.alive().exclude(privacy_status=PrivacyStatus.EXCLUDED)
          .prefetch_related("redactions").order_by("external_id"))
    for dialogue in qs:
        case = (dialogue.meta or {}).get(key)
        model = dialogue_source(dialogue)
        reason = ("no_case" if case in (None, "") else "no_model" if not model
                  else "other_model" if wanted and model not in wanted else "")
        if reason:
            left_out[reason] += 1
            continue
        if model in groups[str(case)]:
            duplicates += 1
            left_out["duplicate"] += 1
            continue
        groups[str(case)][model] = dialogue
    usable = {case: by_model for case, by_model in groups.items() if len(by_model) >= 2}
    left_out["single_model"] = sum(len(by_model) for by_model in groups.values() if len(by_model) < 2)
    if not usable:
        raise PreferenceError(_('No case has dialogues of two or more models (grouped by metadata "%(key)s").')
                              % {"key": key})
    all_models = sorted({m for g in usable.values() for m in g})
    study.corpus, study.group_key = corpus, key
    study.save(update_fields=["corpus", "group_key"])
    sources = {m: _add_source(study, m, tells=[m]) for m in all_models}
    texts: dict[int, list[str]] = defaultdict(list)
    for by_model in usable.values():
        for model, dialogue in by_model.items():
            texts[sources[model].pk] += [t["text"] for t in redacted(dialogue)[1] if t["role"] == "doctor"]
    boiler = boilerplate(texts)
    tells = study_tells(study)
    created = 0
    for case in sorted(usable):
        by_model = usable[case]
        first = next(iter(by_model.values()))
        item = _item(study, case, prompt=redacted(first)[0])
        for model, dialogue in by_model.items():
            source = sources[model]
            turns = [{"role": t["role"], "text": blind_text(t["text"], tells,
                                                            boiler[source.pk] if t["role"] == "doctor" else None)}
                     for t in redacted(dialogue)[1]]
            _candidate, made = PreferenceCandidate.objects.update_or_create(
                item=item, source=source, dialogue=dialogue,
                defaults={"content": {"type": "dialogue", "turns": turns}, "original": {"dialogue": dialogue.pk}})
            created += made
    AuditEvent.record(user, "preference.add_dialogues", study, corpus=corpus.pk, key=key, items=len(usable),
                      candidates=created, skipped_cases=len(groups) - len(usable), duplicates=duplicates,
                      corpus_dialogues=corpus.dialogues.alive().count(),
                      used=sum(len(by_model) for by_model in usable.values()), left_out=left_out,
                      models=sorted(wanted))
    return {"items": len(usable), "candidates": created, "sources": len(all_models),
            "skipped_cases": len(groups) - len(usable), "duplicates": duplicates}


def corpus_use(study: PreferenceStudy) -> dict | None:
    """A dialogue study's use of its corpus, as recorded when its dialogues were added: how many of the corpus's
    dialogues it uses, how many the corpus held, and why the others are left out (``left_out``: privacy, no_case,
    no_model, other_model, duplicate, single_model); the items the coordinator left out since, counted live. None
    before dialogues are added (or for another kind of study)."""
    from django.contrib.contenttypes.models import ContentType

    if study.kind != PreferenceStudy.Kind.DIALOGUE:
        return None
    event = (AuditEvent.objects.filter(action="preference.add_dialogues", target_id=str(study.pk),
                                       target_type=ContentType.objects.get_for_model(PreferenceStudy))
             .order_by("-at", "-pk").first())
    if event is None or "left_out" not in event.data:
        return None
    data = event.data
    withdrawn = (PreferenceCandidate.objects.filter(item__study=study, item__deleted_at__isnull=False)
                 .exclude(dialogue=None).values("dialogue").distinct().count())
    return {"used": data["used"] - withdrawn, "total": data["corpus_dialogues"], "key": data["key"],
            "models": data.get("models") or [], "left_out": {**data["left_out"], "withdrawn": withdrawn},
            "corpus": study.corpus.name if study.corpus_id else ""}


class ImportRejected(PreferenceError):
    """Every problem of a refused import, with line numbers; nothing was written."""

    def __init__(self, errors: list[LineError]):
        self.errors = errors
        super().__init__("; ".join(str(e) for e in errors[:20]) + (" ..." if len(errors) > 20 else ""))


ANSWER_FIELDS = ("item", "source", "answer")


def parse_answers(lines: Iterable[str | bytes]) -> tuple[list[dict], list[LineError]]:
    """JSON Lines of free-text answers: ``{"item": "q1", "prompt": "...", "source": "model-x", "answer": "...",
    "reference": "..."}`` (``question`` is accepted for ``prompt``). Every item needs two or more sources."""
    records, errors = [], []
    seen: dict[tuple[str, str], int] = {}
    prompts: dict[str, tuple[str, int]] = {}
    for number, obj in json_objects(lines, errors):
        missing = [f'missing field "{f}"' for f in ANSWER_FIELDS if f not in obj]
        if missing:
            errors.extend(LineError(number, m) for m in missing)
            continue
        problems = []
        for name in ("item", "source"):
            if not isinstance(obj[name], str | int) or not str(obj[name]).strip():
                problems.append(f'"{name}" must be a non-empty string')
        if not isinstance(obj["answer"], str) or not obj["answer"].strip():
            problems.append('"answer" must be non-empty text')
        prompt = obj.get("prompt", obj.get("question", ""))
        if prompt is not None and not isinstance(prompt, str):
            problems.append('"prompt" must be text')
        if obj.get("reference") is not None and not isinstance(obj.get("reference"), str):
            problems.append('"reference" must be text')
        if problems:
            errors.extend(LineError(number, p) for p in problems)
            continue
        item, source = str(obj["item"]).strip(), str(obj["source"]).strip()
        if (item, source) in seen:
            errors.append(LineError(number, f'item "{item}" already has an answer of source "{source}" on line '
                                            f"{seen[(item, source)]}"))
            continue
        seen[(item, source)] = number
        prompt = (prompt or "").strip()
        if prompt and item in prompts and prompts[item][0] and prompts[item][0] != prompt:
            errors.append(LineError(number, f'item "{item}" has a different prompt on line {prompts[item][1]}'))
            continue
        if prompt or item not in prompts:
            prompts[item] = (prompt, number)
        records.append({"line": number, "item": item, "source": source, "answer": obj["answer"],
                        "prompt": prompt, "reference": (obj.get("reference") or "").strip()})
    by_item: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        by_item[record["item"]].append(record)
    for item, rows in by_item.items():
        if len(rows) < 2:
            errors.append(LineError(rows[0]["line"], f'item "{item}" has only one source; a comparison needs two '
                                                     "or more"))
    if not records and not errors:
        errors.append(LineError(0, "the file contains no answers"))
    return records, sorted(errors, key=lambda e: e.line)


@transaction.atomic
def import_answers(study: PreferenceStudy, lines: Iterable[str | bytes], user=None) -> dict:
    """All-or-nothing import of free-text answers into a draft answer study."""
    _ensure_draft(study)
    if study.kind != PreferenceStudy.Kind.ANSWER:
        raise PreferenceError(_("Free-text answers are candidates of answer studies only."))
    records, errors = parse_answers(lines)
    existing = set(PreferenceCandidate.objects.filter(item__study=study).values_list(
        "item__external_id", "source__label"))
    for record in records:
        if (record["item"], record["source"]) in existing:
            errors.append(LineError(record["line"], f'item "{record["item"]}" already has an answer of source '
                                                    f'"{record["source"]}" in this study'))
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))
    sources = {}
    for label in sorted({r["source"] for r in records}):
        sources[label] = _add_source(study, label, tells=[label])
    texts: dict[int, list[str]] = defaultdict(list)
    for record in records:
        texts[sources[record["source"]].pk].append(record["answer"])
    boiler = boilerplate(texts)
    items: dict[str, PreferenceItem] = {}
    for record in records:
        if record["item"] not in items or (record["prompt"] and not items[record["item"]].prompt):
            item = _item(study, record["item"], prompt=record["prompt"], reference=record["reference"])
            if record["prompt"] and not item.prompt:
                item.prompt = record["prompt"]
                item.save(update_fields=["prompt"])
            if record["reference"] and not item.reference:
                item.reference = record["reference"]
                item.save(update_fields=["reference"])
            items[record["item"]] = item
    all_tells = study_tells(study)
    for item in items.values():  # a question must not name the sources either
        cleaned_prompt = strip_tells(normalise_text(item.prompt), all_tells)
        cleaned_ref = strip_tells(normalise_text(item.reference), all_tells)
        if (cleaned_prompt, cleaned_ref) != (item.prompt, item.reference):
            item.prompt, item.reference = cleaned_prompt, cleaned_ref
            item.save(update_fields=["prompt", "reference"])
    PreferenceCandidate.objects.bulk_create([
        PreferenceCandidate(item=items[r["item"]], source=sources[r["source"]],
                            content={"type": "answer", "text": blind_text(r["answer"], all_tells,
                                                                          boiler[sources[r["source"]].pk])},
                            original={"answer": r["answer"], "line": r["line"]})
        for r in records])
    AuditEvent.record(user, "preference.import_answers", study, answers=len(records), items=len(items),
                      sources=len(sources))
    return {"answers": len(records), "items": len(items), "sources": len(sources)}


@transaction.atomic
def delete_item(item: PreferenceItem, user, reason: str) -> None:
    """Leave an item out of a draft study (soft delete with who, when and why)."""
    _ensure_draft(item.study)
    item.soft_delete(user, reason)


@transaction.atomic
def delete_study(study: PreferenceStudy, user, reason: str) -> None:
    if study.status == PreferenceStudy.Status.OPEN:
        raise PreferenceError(_("Lock the study before deleting it; raters are answering."), status=409)
    study.soft_delete(user, reason)


# ---------------------------------------------------------------------------------------------------------------
# raters, pairs, assignment and side randomisation
# ---------------------------------------------------------------------------------------------------------------
@transaction.atomic
def add_rater(study: PreferenceStudy, user, *, capacity: int | None = None, added_by=None) -> PreferenceRater:
    study.refresh_from_db(fields=["status", "deleted_at"])
    if study.is_deleted or study.status in (PreferenceStudy.Status.LOCKED, PreferenceStudy.Status.UNBLINDED):
        raise PreferenceError(_("Raters can be added to draft or open studies only."), status=409)
    if study.project_id not in rater_projects(user):
        raise PreferenceError(_("%(user)s is not a physician in the study's project.") % {"user": user.username})
    rater, created = PreferenceRater.objects.get_or_create(study=study, user=user, defaults={
        "capacity": capacity, "added_by": added_by})
    if not created and (not rater.active or rater.capacity != capacity):
        rater.active, rater.capacity = True, capacity
        rater.save(update_fields=["active", "capacity"])
    AuditEvent.record(added_by, "preference.add_rater", study, rater=user.username, capacity=capacity)
    return rater


def side_for(seed: int, rater_id: int, position: int) -> bool:
    """Whether the task at ``position`` (1-based) of a rater's queue shows the pair's second candidate as A.

    Positions come in blocks of two that hold one of each orientation, in an order drawn from
    (seed, rater, block): reproducible from the recorded seed, and balanced in every rater's queue (any prefix
    has at most one more of one side than of the other)."""
    block, within = divmod(max(1, position) - 1, 2)
    first_swapped = random.Random(f"{seed}:{rater_id}:{block}").random() < 0.5
    return first_swapped if within == 0 else not first_swapped


def build_pairs(study: PreferenceStudy) -> int:
    """Every pair of candidates of each live item, the first from the source listed first."""
    existing = set(PreferencePair.objects.filter(study=study).values_list("item_id", "first_id", "second_id"))
    new = []
    for item in study.items.alive().prefetch_related("candidates__source"):
        candidates = sorted(item.candidates.all(), key=lambda c: (c.source.position, c.pk))
        for first, second in combinations(candidates, 2):
            if (item.pk, first.pk, second.pk) not in existing:
                new.append(PreferencePair(study=study, item=item, first=first, second=second))
    PreferencePair.objects.bulk_create(new)
    return len(new)


class PreferenceQueue(WorkQueue):
    """Preference studies as rating queues: a unit is a pair of candidates; active raters take work; answers are
    taken while the study is open. Each new task gets its side from :func:`side_for`."""

    work = PreferenceTask
    container_field, unit_field = "study", "pair"
    not_a_rater = gettext_lazy("%(rater)s is not a rater of this study; add them first.")
    had_it_already = gettext_lazy("%(rater)s already had this comparison; a rater never gets a comparison twice.")
    work_event, container_event = "preference_task", "preference"
    error = staffing_error = PreferenceError
    not_yours = gettext_lazy("This comparison is not assigned to you.")
    not_open = gettext_lazy("This comparison is %(status)s; answers can no longer change.")
    missing_answers = gettext_lazy("Answer every criterion before submitting; missing: %(missing)s.")
    no_skip_reason = gettext_lazy("Say why you skip this comparison.")

    def seats(self, study: PreferenceStudy) -> list[Seat]:
        return [Seat(r.user_id, r.capacity) for r in study.raters.all() if r.active]

    def is_rater(self, study: PreferenceStudy, user) -> bool:
        return PreferenceRater.objects.filter(study=study, user=user).exists()

    def unit_ids(self, study: PreferenceStudy) -> list[int]:
        return list(PreferencePair.objects.filter(study=study, item__deleted_at__isnull=True).order_by("id")
                    .values_list("id", flat=True))

    def new_work(self, study: PreferenceStudy, unit_id: int, rater_id: int, position: int) -> PreferenceTask:
        return PreferenceTask(study=study, pair_id=unit_id, rater_id=rater_id, position=position,
                              swapped=side_for(study.seed, rater_id, position))

    def check_takes_work(self, study: PreferenceStudy, action: str) -> None:
        if study.status != PreferenceStudy.Status.OPEN:
            raise PreferenceError(_("The study is not open: it takes no new work."), status=409)

    def check_answerable(self, locked: PreferenceTask) -> None:
        if locked.study.status != PreferenceStudy.Status.OPEN:
            raise PreferenceError(_("The study is locked; answers can no longer change."), status=409)

    def open_containers(self) -> Q:
        return Q(study__status=PreferenceStudy.Status.OPEN, study__deleted_at__isnull=True)

    def rater_projects(self, user) -> list[int]:
        return rater_projects(user)

    def missing(self, locked: PreferenceTask) -> list[str]:
        return missing_criteria(locked)

    def submitted(self, locked: PreferenceTask) -> None:
        """Nothing to tell: the study's figures are computed when it is locked and unblinded."""


QUEUE = PreferenceQueue()


def assign(study: PreferenceStudy, *, user=None) -> AssignResult:
    """Give every pair ``overlap`` raters, least-loaded first, never the same pair twice to one rater
    (:meth:`WorkQueue.assign`); re-running tops up."""
    return QUEUE.assign(study, user=user)


@transaction.atomic
def withdraw_rater(study: PreferenceStudy, user, *, by, reason: str) -> tuple[int, AssignResult]:
    """Take a physician off a study (they left, or their answers are not to be used from now on): their
    unanswered comparisons are withdrawn and, in an open study, given to the other raters. Submitted
    comparisons stay in the analysis; answers already given on a withdrawn comparison stay stored, unused.
    Adding the physician again reactivates them (never with a pair they had). Returns the number withdrawn
    and the top-up."""
    reason = (reason or "").strip()
    if not reason:
        raise PreferenceError(_("Say why the rater is withdrawn (kept in the audit trail)."))
    study = PreferenceStudy.objects.select_for_update().get(pk=study.pk)
    if study.is_deleted or study.status not in (PreferenceStudy.Status.DRAFT, PreferenceStudy.Status.OPEN):
        raise PreferenceError(_("Raters can be withdrawn from draft or open studies only."), status=409)
    rater = PreferenceRater.objects.filter(study=study, user=user, active=True).first()
    if rater is None:
        raise PreferenceError(_("%(user)s is not an active rater of this study.") % {"user": user.username},
                              status=404)
    rater.active = False
    rater.save(update_fields=["active"])
    withdrawn = QUEUE.withdraw(study, [user.pk])
    AuditEvent.record(by, "preference.withdraw_rater", study, rater=user.username, withdrawn=withdrawn,
                      reason=reason)
    topped_up = assign(study, user=by) if study.status == PreferenceStudy.Status.OPEN else AssignResult()
    return withdrawn, topped_up


def reblind(study: PreferenceStudy) -> int:
    """Strip every source's tells from every candidate once more (sources added later name competitors too)."""
    tells = study_tells(study)
    changed = 0
    for candidate in PreferenceCandidate.objects.filter(item__study=study):
        content = json.loads(json.dumps(candidate.content))
        if content.get("type") == "answer":
            content["text"] = strip_tells(content["text"], tells)
        for turn in content.get("turns", []):
            turn["text"] = strip_tells(turn["text"], tells)
        for row in content.get("rows", []):
            row["rationale"] = strip_tells(row["rationale"], tells) if row.get("rationale") else ""
        if content != candidate.content:
            candidate.content = content
            candidate.save(update_fields=["content"])
            changed += 1
    return changed


@transaction.atomic
def open_study(study: PreferenceStudy, user=None) -> AssignResult:
    """Freeze the set-up (pairs built) and assign the comparisons to the raters."""
    study = PreferenceStudy.objects.select_for_update().get(pk=study.pk)
    _ensure_draft(study)
    if study.sources.count() < 2:
        raise PreferenceError(_("A study compares at least two sources; add candidates first."))
    if not study.criteria.exists():
        raise PreferenceError(_("A study needs at least one criterion."))
    reblind(study)
    if build_pairs(study) == 0 and not study.pairs.exists():
        raise PreferenceError(_("No item has candidates of two sources."))
    study.status = PreferenceStudy.Status.OPEN
    study.opened_at = timezone.now()
    study.save(update_fields=["status", "opened_at"])
    AuditEvent.record(user, "preference.open", study, pairs=study.pairs.count())
    return assign(study, user=user)


# ---------------------------------------------------------------------------------------------------------------
# answering
# ---------------------------------------------------------------------------------------------------------------
def rater_projects(user) -> list[int]:
    """Ids of the projects whose comparisons a user rates: where they are a physician (administrators: every
    project). Like the rating queue, a physician's comparisons span these projects."""
    from projects.access import projects_of
    from projects.roles import PHYSICIAN, is_admin

    found = projects_of(user) if is_admin(user) else projects_of(user, PHYSICIAN)
    return list(found.values_list("pk", flat=True))


def own_task(user, pk: int) -> PreferenceTask:
    """The user's task in a project where they are a physician (anybody else's is "not found": its existence is
    not revealed)."""
    with scoping.in_project(rater_projects(user)):
        task = (PreferenceTask.objects.select_related("study", "pair__item", "pair__first", "pair__second")
                .filter(pk=pk, rater=user, study__deleted_at__isnull=True).first())
    if task is None:
        raise PreferenceError(_("No such task."), status=404)
    return task


def save_answer(task: PreferenceTask, criterion_id: int, choice: str, user, *, comment: str | None = None,
                client_seq: int = 0, reason: str = "") -> PreferenceAnswer:
    """Store one click at once; same-value retries add no history and an older click arriving late never
    overwrites a newer one (``client_seq``)."""
    if choice not in (*CHOICES, ""):
        raise PreferenceError(_("Choose A, tie or B (got %(choice)s).") % {"choice": repr(choice)})
    if not PreferenceCriterion.objects.filter(pk=criterion_id, study_id=task.study_id).exists():
        raise PreferenceError(_("That criterion is not part of this study."))
    with transaction.atomic():
        locked = QUEUE.claim(task, user)
        now = timezone.now()
        answer = (PreferenceAnswer.objects.select_for_update(of=("self",))
                  .filter(task=locked, criterion_id=criterion_id).order_by("pk").first())
        if answer is None:
            answer = PreferenceAnswer.objects.create(task=locked, criterion_id=criterion_id, choice=choice,
                                                     comment=comment or "", client_seq=client_seq, created_at=now,
                                                     updated_at=now)
            PreferenceAnswerChange.objects.create(answer=answer, changed_by=user, changed_at=now, new_choice=choice,
                                                  new_comment=comment or "", reason=reason)
        elif client_seq and client_seq < answer.client_seq:
            return answer
        else:
            new_comment = answer.comment if comment is None else comment
            if answer.choice != choice or answer.comment != new_comment:
                PreferenceAnswerChange.objects.create(
                    answer=answer, changed_by=user, changed_at=now, old_choice=answer.choice, new_choice=choice,
                    old_comment=answer.comment, new_comment=new_comment, reason=reason)
                answer.choice, answer.comment = choice, new_comment
            answer.client_seq = max(answer.client_seq, client_seq)
            answer.updated_at = now
            answer.save(update_fields=["choice", "comment", "client_seq", "updated_at"])
        QUEUE.start(locked.pk, locked.status, now)
    return answer


def missing_criteria(task: PreferenceTask) -> list[str]:
    answered = set(PreferenceAnswer.objects.filter(task=task).exclude(choice="").values_list("criterion_id",
                                                                                            flat=True))
    return [c.name for c in task.study.criteria.all() if c.pk not in answered]


def submit_task(task: PreferenceTask, user, *, comment: str | None = None) -> PreferenceTask:
    return QUEUE.submit(task, user, comment=comment)


def skip_task(task: PreferenceTask, user, reason: str) -> PreferenceTask:
    return QUEUE.skip(task, user, reason)


def save_task_comment(task: PreferenceTask, user, comment: str) -> PreferenceTask:
    return QUEUE.save_comment(task, user, comment)


def my_tasks(user):
    """The user's comparisons in the active scope (run it in :func:`rater_projects`' scope for every project where
    they are a physician)."""
    return PreferenceTask.objects.filter(rater=user, study__deleted_at__isnull=True)


def open_tasks(user):
    return my_tasks(user).filter(status__in=PreferenceTask.OPEN_STATUSES, study__status=PreferenceStudy.Status.OPEN)


def next_task(user, after: PreferenceTask | None = None) -> PreferenceTask | None:
    """The rater's next open comparison in any project where they rate."""
    projects = rater_projects(user)
    with scoping.in_project(projects):
        return QUEUE.next_for(user, after=after, projects=projects)


def my_studies(user) -> list[dict]:
    """Per study: the rater's done and total comparisons (for the physician's home and list), in every project
    where they rate."""
    with scoping.in_project(rater_projects(user)):
        rows = list(my_tasks(user).exclude(status=PreferenceTask.Status.WITHDRAWN)
                    .values("study_id", "study__name", "study__status", "study__project__name")
                    .annotate(total=Count("id"), done=Count("id", filter=Q(status__in=[WorkStatus.SUBMITTED,
                                                                            WorkStatus.SKIPPED])))
                    .order_by("study__name"))
    return [{**r, "open": r["total"] - r["done"] if r["study__status"] == "open" else 0} for r in rows]


# ---------------------------------------------------------------------------------------------------------------
# what a rater sees (blinded)
# ---------------------------------------------------------------------------------------------------------------
def sides(task: PreferenceTask) -> tuple[PreferenceCandidate, PreferenceCandidate]:
    """(candidate shown as A, candidate shown as B)."""
    pair = task.pair
    return (pair.second, pair.first) if task.swapped else (pair.first, pair.second)


def blinded_task(task: PreferenceTask) -> dict:
    """Everything a rater needs for a task and nothing that names a source, run or candidate id."""
    study = task.study
    item = task.pair.item
    a, b = sides(task)
    answers = {ans.criterion_id: ans for ans in PreferenceAnswer.objects.filter(task=task)}
    criteria = [{"id": c.pk, "code": c.code, "name": c.name, "description": c.description,
                 "choice": answers[c.pk].choice if c.pk in answers else "",
                 "comment": answers[c.pk].comment if c.pk in answers else ""}
                for c in study.criteria.all()]
    context: dict = {"prompt": item.prompt, "reference": item.reference}
    if study.kind == PreferenceStudy.Kind.EVALUATION and item.dialogue_id:
        self_report, turns = redacted(item.dialogue)
        context["dialogue"] = {"self_report": self_report,
                               "turns": [{"role": t["role"], "text": t["text"]} for t in turns]}
        context["prompt"] = ""
    return {"task": task.pk, "study": study.name, "kind": study.kind, "instructions": study.instructions,
            "item": item.external_id if study.kind != PreferenceStudy.Kind.DIALOGUE else "",
            "context": context, "A": a.content, "B": b.content, "criteria": criteria,
            "status": task.status, "comment": task.comment, "editable": task.is_open and study.status == "open"}


# ---------------------------------------------------------------------------------------------------------------
# lock, unblind, progress
# ---------------------------------------------------------------------------------------------------------------
@transaction.atomic
def lock(study: PreferenceStudy, user, reason: str = "") -> PreferenceStudy:
    """Close the study to answers. Identities stay sealed."""
    study = PreferenceStudy.objects.select_for_update().get(pk=study.pk)
    if study.status != PreferenceStudy.Status.OPEN:
        raise PreferenceError(_("Only an open study can be locked (this one is %(status)s).")
                              % {"status": study.get_status_display()}, status=409)
    study.status = PreferenceStudy.Status.LOCKED
    study.locked_at, study.locked_by = timezone.now(), user
    study.save(update_fields=["status", "locked_at", "locked_by"])
    open_count = PreferenceTask.objects.filter(study=study, status__in=PreferenceTask.OPEN_STATUSES).count()
    AuditEvent.record(user, "preference.lock", study, reason=reason, open_tasks=open_count)
    from scoring.preference.figures import refresh_blinded

    refresh_blinded(study)  # the page's figures before unblinding, computed by a worker now
    return study


@transaction.atomic
def unblind(study: PreferenceStudy, user, reason: str) -> PreferenceStudy:
    """Reveal which source was on which side: only after lock, with a reason, recorded in the audit trail."""
    if not (reason or "").strip():
        raise PreferenceError(_("Give the reason for unblinding (it is recorded)."))
    study = PreferenceStudy.objects.select_for_update().get(pk=study.pk)
    if study.status != PreferenceStudy.Status.LOCKED:
        raise PreferenceError(_("Lock the study before unblinding it.") if study.status != "unblinded"
                              else _("The study is already unblinded."), status=409)
    study.status = PreferenceStudy.Status.UNBLINDED
    study.unblinded_at, study.unblinded_by, study.unblind_reason = timezone.now(), user, reason.strip()
    study.save(update_fields=["status", "unblinded_at", "unblinded_by", "unblind_reason"])
    AuditEvent.record(user, "preference.unblind", study, reason=reason.strip())
    from scoring.preference.figures import refresh_results

    refresh_results(study)  # computed now, so the results page shows them at once
    return study


def list_counts(study_ids: list[int]) -> list[dict]:
    """Per study (in the order of ``study_ids``): its items, comparisons and submitted comparisons, each counted by
    the database in one grouped query (a count over the join of items and tasks would read items x tasks rows)."""
    items = dict(PreferenceItem.objects.alive().filter(study_id__in=study_ids).values_list("study_id")
                 .annotate(n=Count("id")).order_by())
    tasks = {row["study_id"]: row for row in PreferenceTask.objects.filter(study_id__in=study_ids)
             .values("study_id").annotate(n=Count("id"), done=Count("id", filter=Q(status=WorkStatus.SUBMITTED)))
             .order_by()}
    return [{"items": items.get(pk, 0), "tasks": tasks.get(pk, {}).get("n", 0),
             "submitted": tasks.get(pk, {}).get("done", 0)} for pk in study_ids]


def progress(study: PreferenceStudy) -> dict:
    """Counts only (per rater and overall): nothing per source, so it is safe before unblinding."""
    counts: dict[int, Counter] = defaultdict(Counter)
    for rater_id, status, n in (PreferenceTask.objects.filter(study=study).values_list("rater_id", "status")
                                .annotate(n=Count("id"))):
        counts[rater_id][status] = n
    profiles = pseudonyms(study.project_id, list(counts) + list(study.raters.values_list("user_id", flat=True)))
    raters = []
    for rater in study.raters.select_related("user").order_by("user__username"):
        raters.append({"user": rater.user, "pseudonym": profiles.get(rater.user_id, ""), "active": rater.active,
                       **progress_counts(counts[rater.user_id])})
    total = sum(r["total"] for r in raters)
    submitted = sum(r["submitted"] for r in raters)
    return {"items": study.items.alive().count(), "sources": study.sources.count(), "pairs": study.pairs.count(),
            "criteria": study.criteria.count(), "tasks": total, "submitted": submitted,
            "percent": round(100 * submitted / total) if total else 0, "raters": raters}
