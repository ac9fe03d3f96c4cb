"""``export_study``: one project's study as one archive (see :mod:`studies.archive` for the format and
docs/users/archive.md for the layout).

Privacy by construction: raters, panellists and whoever changed a label appear only as the project's pseudonyms,
dialogues only as they are shown (every active redaction applied; excluded dialogues without text) with the SHA-256
of the original text, the privacy filter's findings without the text they matched, judges without keys or URL
secrets. The export is refused while a dialogue awaits privacy review, and an audit entry records who exported
what.

The public functions run in their project's scope (:func:`projects.access.in_project_of`), whatever scope their
caller is in: every query below reads that project's rows and no filter repeats it."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
import zipfile
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.utils import timezone

from annotation.dialogues import redacted
from annotation.models import (
    Adjudication,
    Assignment,
    Campaign,
    CampaignRater,
    Corpus,
    Dialogue,
    Dimension,
    GoldLabel,
    Item,
    Label,
    LabelChange,
    PrivacyStatus,
    RandomSample,
    Redaction,
    ScaleVersion,
)
from projects.access import in_project_of
from projects.models import AuditEvent, Project
from projects.pseudonyms import pseudonyms
from studies import figure_rows as study_figures
from studies import other_figures
from studies.archive import (
    CRATE_METADATA,
    DATAPACKAGE,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    RO_CRATE_VERSION,
    ArchiveError,
    Writer,
    datapackage,
    sha256_file,
)

KEY_PACKAGES = ("Django", "numpy", "pandas", "scipy", "statsmodels", "pingouin", "krippendorff", "factor_analyzer",
                "openai", "rocrate")
SNAPSHOT_SECRETS = ("api_key", "api_key_env", "key", "secret", "password", "token", "authorization", "headers")


class PrivacyReviewPending(ArchiveError):
    """Dialogues await privacy review: nothing leaves until a coordinator has reviewed them."""


def version_key(version: ScaleVersion) -> str:
    return f"{version.scale.slug}@v{version.number}"


def version_content_sha256(version: ScaleVersion) -> str:
    """The content of a scale version (dimensions and items with their answers), to tell whether another instance
    holds the same version under the same name."""
    content = {
        "dimensions": list(Dimension.objects.filter(version=version).order_by("pk")
                           .values_list("code", "order", "name_en")),
        "items": [[i.code, i.dimension.code, i.parent.code if i.parent_id else "", i.order, i.response_type,
                   i.value, i.scale_min, i.scale_max, str(i.scale_step) if i.scale_step is not None else "",
                   i.text_en] for i in Item.objects.filter(version=version).select_related("dimension", "parent")
                  .order_by("pk")],
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def original_sha256(dialogue: Dialogue) -> str:
    """SHA-256 of the unredacted self-report and turns (canonical JSON): who holds the original can check it."""
    raw = json.dumps({"self_report": dialogue.self_report, "turns": dialogue.turns}, sort_keys=True,
                     ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def safe_url(url: str) -> str:
    """An endpoint URL without user, password, query or fragment (where API keys and tokens hide)."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else ""


def safe_snapshot(snapshot: dict) -> dict:
    """A judge run's frozen configuration without key variables or secrets; its URL stripped (:func:`safe_url`)."""
    out = {}
    for name, value in (snapshot or {}).items():
        lowered = name.lower()
        if lowered in SNAPSHOT_SECRETS or "secret" in lowered or "password" in lowered or lowered.endswith("_key"):
            continue
        out[name] = safe_url(value) if lowered.endswith("url") and isinstance(value, str) else value
    return out


class Importers:
    """Who imported a judge file, as the project's pseudonym: the snapshot and the report's provenance name the
    account, and no account name leaves in an archive."""

    def __init__(self, project: Project):
        self.project, self.codes = project, {}

    def code(self, username: str) -> str:
        if username not in self.codes:
            from django.contrib.auth import get_user_model

            pk = get_user_model().objects.filter(username=username).values_list("pk", flat=True).first()
            self.codes[username] = pseudonyms(self.project, [pk])[pk] if pk is not None else "(former account)"
        return self.codes[username]

    def scrub(self, value: Any) -> Any:
        """``value`` with every ``imported_by`` name replaced by its pseudonym."""
        if isinstance(value, dict):
            return {k: (self.code(v) if k == "imported_by" and isinstance(v, str) and v else self.scrub(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        return value


def software() -> dict[str, Any]:
    """The software that made the archive: the app's version, its git commit when known, the uv.lock hash, Python
    and the key packages."""
    base = Path(django_settings.BASE_DIR)
    try:
        app = version("minicex-workbench")
    except PackageNotFoundError:  # pragma: no cover - installed in development mode
        app = "unknown"
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=base, capture_output=True, text=True,
                                timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    lock = base / "uv.lock"
    packages = {}
    for name in KEY_PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = "not installed"
    return {"app": "Mini-CEX Workbench", "app_version": app, "git_commit": commit or "unknown",
            "uv_lock_sha256": sha256_file(lock) if lock.exists() else "unknown",
            "python": platform.python_version(), "platform": platform.platform(), "packages": packages}


def archive_name(project: Project) -> str:
    """The archive's file name: study-<project>-<date>.zip."""
    slug = "".join(ch if ch.isalnum() else "-" for ch in project.name.lower()).strip("-") or "study"
    return f"study-{slug}-{timezone.localdate():%Y%m%d}.zip"


@in_project_of("project")
def pending_review(project: Project) -> list[str]:
    """The first dialogues that await privacy review (the export is refused while any does)."""
    return list(Dialogue.objects.alive().filter(corpus__deleted_at__isnull=True,
                                                privacy_status=PrivacyStatus.FLAGGED)
                .order_by("corpus__name", "external_id").values_list("corpus__name", "external_id")[:5])


# --- tables ----------------------------------------------------------------------------------------------------
# JSON cells are declared by what they hold: "object" for a JSON object, "array" for a JSON array (Table Schema).
STR, INT, NUM, BOOL, TIME, OBJ, ARR = "string", "integer", "number", "boolean", "datetime", "object", "array"

SCHEMAS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "data/scale_versions.csv": ("Scale versions used by the study", [
        ("version", STR), ("slug", STR), ("number", INT), ("status", STR), ("name_en", STR), ("name_zh", STR),
        ("description", STR), ("source", STR), ("target", STR), ("language", STR),
        ("show_reference", BOOL), ("note", STR),
        ("judge_keys", OBJ), ("content_sha256", STR)]),
    "data/dimensions.csv": ("Dimensions (primary items) of each scale version", [
        ("version", STR), ("code", STR), ("order", INT), ("name_en", STR), ("name_zh", STR)]),
    "data/items.csv": ("Items of each scale version", [
        ("version", STR), ("code", STR), ("dimension", STR), ("parent", STR), ("order", INT), ("response_type", STR),
        ("value", INT), ("scale_min", INT), ("scale_max", INT), ("scale_step", NUM), ("anchors", OBJ), ("text_en", STR),
        ("text_zh", STR), ("guidance_en", STR), ("guidance_zh", STR)]),
    "data/corpora.csv": ("Corpora", [("corpus", STR), ("kind", STR), ("description", STR), ("is_demo", BOOL),
                                      ("deleted", BOOL)]),
    "data/dialogues.csv": ("Dialogues and answers as shown (redactions applied; excluded ones without text)", [
        ("corpus", STR), ("external_id", STR), ("self_report", STR), ("turns", ARR), ("source_model", STR),
        ("language", STR), ("split", STR), ("meta", OBJ), ("case", STR), ("replicate", INT), ("privacy_status", STR),
        ("privacy_findings", ARR), ("original_sha256", STR), ("deleted", BOOL)]),
    "data/redactions.csv": ("Redacted spans (positions only, never the text)", [
        ("corpus", STR), ("external_id", STR), ("field", STR), ("turn", INT), ("start", INT),
        ("end", INT), ("source", STR),
        ("reason", STR), ("created_at", TIME), ("revoked_at", TIME)]),
    "data/campaigns.csv": ("Annotation campaigns", [
        ("campaign", STR), ("corpus", STR), ("scale_version", STR), ("phase", STR), ("status", STR), ("overlap", INT),
        ("filter_split", STR), ("filter_model", STR), ("filter_language", STR), ("instructions", STR),
        ("deadline", STR),
        ("seed", INT), ("created_at", TIME), ("deleted", BOOL), ("rater_kind", STR)]),
    "data/raters.csv": ("Raters by pseudonym, in the order of their accounts", [
        ("rater", STR), ("external", BOOL), ("physician", BOOL)]),
    "data/campaign_raters.csv": ("Raters on each campaign", [
        ("campaign", STR), ("rater", STR), ("team", STR), ("capacity", INT), ("active", BOOL)]),
    "data/assignments.csv": ("Assignments (one rater, one dialogue of a campaign)", [
        ("campaign", STR), ("external_id", STR), ("rater", STR), ("status", STR), ("position", INT), ("comment", STR),
        ("skip_reason", STR), ("flagged", BOOL), ("flag_note", STR), ("return_note", STR), ("created_at", TIME),
        ("started_at", TIME), ("submitted_at", TIME)]),
    "data/labels.csv": ("Labels (pseudonymised raters)", [
        ("campaign", STR), ("external_id", STR), ("rater", STR), ("item", STR), ("value", NUM), ("comment", STR),
        ("created_at", TIME), ("updated_at", TIME)]),
    "data/label_changes.csv": ("Every change of a label: who (pseudonym), when, from what to what, why", [
        ("campaign", STR), ("external_id", STR), ("rater", STR), ("item", STR), ("changed_by", STR),
        ("changed_at", TIME),
        ("old_value", NUM), ("new_value", NUM), ("old_comment", STR), ("new_comment", STR), ("source", STR),
        ("reason", STR)]),
    "data/gold_labels.csv": ("Gold labels of trial campaigns", [
        ("campaign", STR), ("external_id", STR), ("item", STR), ("value", NUM)]),
    "data/adjudications.csv": ("Adjudicated labels", [
        ("campaign", STR), ("external_id", STR), ("item", STR), ("value", NUM), ("reason", STR), ("decided_at", TIME)]),
    "data/random_samples.csv": ("Random samples with their seeds (dialogues by external id)", [
        ("campaign", STR), ("kind", STR), ("size", INT), ("seed", INT), ("stratified", BOOL), ("population", ARR),
        ("dialogues", ARR), ("strata", OBJ), ("note", STR), ("created_at", TIME), ("probabilities", OBJ),
        ("rule", OBJ)]),
    "data/prompt_sets.csv": ("Judge prompt templates", [
        ("prompt_set", STR), ("name", STR), ("version", INT), ("scale_version", STR), ("system_prompt", STR),
        ("dialogue_template", STR), ("per_dialogue_instruction", STR), ("note", STR)]),
    "data/prompts.csv": ("Judge questions per item", [("prompt_set", STR), ("item", STR), ("question", STR)]),
    "data/judges.csv": ("Judge configurations (endpoint by name; never a key or URL secret)", [
        ("judge", STR), ("endpoint", STR), ("model", STR), ("temperature", NUM), ("max_tokens", INT), ("seed", INT),
        ("mode", STR), ("structured_output", BOOL), ("request_logprobs", BOOL), ("timeout_seconds", NUM),
        ("max_attempts", INT), ("price_input_per_1k", NUM), ("price_output_per_1k", NUM), ("currency", STR),
        ("prompt_set", STR)]),
    "data/judge_runs.csv": ("Judge runs, live and imported, with their frozen configuration and provenance", [
        ("run", STR), ("judge", STR), ("source", STR), ("scale_version", STR), ("corpus", STR), ("filter_split", STR),
        ("filter_model", STR), ("filter_language", STR), ("item_codes", ARR), ("status", STR), ("error", STR),
        ("snapshot", OBJ), ("source_file", STR), ("source_sha256", STR), ("requests_sent", INT), ("created_at", TIME),
        ("started_at", TIME), ("finished_at", TIME), ("config", STR)]),
    "data/judge_results.csv": ("Every answer of every run with its parse", [
        ("run", STR), ("external_id", STR), ("item", STR), ("status", STR), ("value", NUM), ("p_yes", NUM),
        ("rationale", STR), ("from_cache", BOOL), ("attempts", INT), ("error", STR), ("call", STR),
        ("imported_prompt", STR), ("uncertainty", NUM)]),
    "data/llm_calls.csv": ("Every request and raw answer, with tokens, cost and time", [
        ("call", STR), ("endpoint", STR), ("model", STR), ("request", OBJ), ("response", OBJ), ("content", STR),
        ("prompt_tokens", INT), ("completion_tokens", INT), ("cost", NUM), ("latency_ms", INT), ("created_at", TIME)]),
    "figures/figures.csv": ("Every figure of the study: name, printed value, data fingerprint", [
        ("figure", STR), ("kind", STR), ("value", STR), ("fingerprint", STR)]),
}


@in_project_of("project")
def export_counts(project: Project, schemas: dict) -> dict[str, int]:
    """Rows per table as the export would write them (for the methods page without an export)."""
    from scoring.judges.models import JudgeResult, JudgeRun

    counts = {
        "data/corpora.csv": Corpus.objects.count(),
        "data/dialogues.csv": Dialogue.objects.count(),
        "data/campaigns.csv": Campaign.objects.count(),
        "data/labels.csv": Label.objects.count(),
        "data/raters.csv": len(_people(project)),
        "data/scale_versions.csv": Campaign.objects.values("scale_version").distinct().count(),
        "data/random_samples.csv": RandomSample.objects.count(),
        "data/judge_runs.csv": JudgeRun.objects.count(),
        "data/judge_results.csv": JudgeResult.objects.count(),
    }
    return {path: counts.get(path, 0) for path in schemas}


def _tables(project: Project, names: dict[int, str], ext: dict[int, tuple[str, str]]) -> Iterator[tuple[str, Any]]:
    """(path, rows) of every data table."""
    importers = Importers(project)
    campaigns = Campaign.objects.select_related("corpus", "scale_version__scale")
    versions = {c.scale_version for c in campaigns}
    from scoring.judges.models import JudgeResult, JudgeRun, Prompt, PromptSet

    runs = study_figures.run_keys(project)
    prompt_sets = list(PromptSet.objects.select_related("scale_version__scale")
                       .order_by("pk"))
    versions |= {p.scale_version for p in prompt_sets}
    versions |= {r.scale_version for r in runs.values() if r.scale_version_id}
    versions = sorted(versions, key=lambda v: v.pk)

    yield "data/scale_versions.csv", ({
        "version": version_key(v), "slug": v.scale.slug, "number": v.number, "status": v.status,
        "name_en": v.scale.name_en, "name_zh": v.scale.name_zh, "description": v.scale.description,
        "source": v.scale.source, "target": v.scale.target, "language": v.scale.language,
        "show_reference": v.scale.show_reference, "note": v.note, "judge_keys": v.judge_keys,
        "content_sha256": version_content_sha256(v)} for v in versions)
    yield "data/dimensions.csv", ({"version": version_key(v), "code": d.code, "order": d.order,
                                   "name_en": d.name_en, "name_zh": d.name_zh}
                                  for v in versions for d in Dimension.objects.filter(version=v).order_by("pk"))
    yield "data/items.csv", ({
        "version": version_key(v), "code": i.code, "dimension": i.dimension.code,
        "parent": i.parent.code if i.parent_id else "", "order": i.order, "response_type": i.response_type,
        "value": i.value, "scale_min": i.scale_min, "scale_max": i.scale_max, "scale_step": i.scale_step,
        "anchors": i.anchors, "text_en": i.text_en, "text_zh": i.text_zh, "guidance_en": i.guidance_en,
        "guidance_zh": i.guidance_zh}
        for v in versions for i in Item.objects.filter(version=v).select_related("dimension", "parent").order_by("pk"))
    yield "data/corpora.csv", ({"corpus": c.name, "kind": c.kind, "description": c.description,
                                "is_demo": c.is_demo, "deleted": c.is_deleted}
                               for c in Corpus.objects.order_by("pk"))
    yield "data/dialogues.csv", _dialogue_rows(project)
    yield "data/redactions.csv", ({
        "corpus": r.dialogue.corpus.name, "external_id": r.dialogue.external_id, "field": r.field, "turn": r.turn,
        "start": r.start, "end": r.end, "source": r.source, "reason": r.reason, "created_at": r.created_at,
        "revoked_at": r.revoked_at}
        for r in Redaction.objects.select_related("dialogue__corpus")
        .order_by("pk"))
    yield "data/campaigns.csv", ({
        "campaign": c.name, "corpus": c.corpus.name, "scale_version": version_key(c.scale_version),
        "phase": c.phase, "status": c.status, "overlap": c.overlap, "filter_split": c.filter_split,
        "filter_model": c.filter_model, "filter_language": c.filter_language, "instructions": c.instructions,
        "deadline": c.deadline, "seed": c.seed, "created_at": c.created_at, "deleted": c.is_deleted,
        "rater_kind": c.rater_kind}
        for c in campaigns.order_by("pk"))
    from django.contrib.auth import get_user_model

    external = set(get_user_model().objects.filter(pk__in=list(names), rater_profile__is_external=True)
                   .values_list("pk", flat=True))
    from scoring.reports.wording import raters_are_physicians

    yield "data/raters.csv", ({"rater": names[pk], "external": pk in external,
                               "physician": raters_are_physicians([pk])} for pk in sorted(names))
    yield "data/campaign_raters.csv", ({
        "campaign": r.campaign.name, "rater": names[r.user_id], "team": r.team, "capacity": r.capacity,
        "active": r.active} for r in CampaignRater.objects.all()
        .select_related("campaign").order_by("pk"))
    yield "data/assignments.csv", ({
        "campaign": a["campaign__name"], "external_id": ext[a["dialogue_id"]][1], "rater": names[a["rater_id"]],
        "status": a["status"], "position": a["position"], "comment": a["comment"], "skip_reason": a["skip_reason"],
        "flagged": a["flagged"], "flag_note": a["flag_note"], "return_note": a["return_note"],
        "created_at": a["created_at"], "started_at": a["started_at"], "submitted_at": a["submitted_at"]}
        for a in Assignment.objects.order_by("pk").values(
            "campaign__name", "dialogue_id", "rater_id", "status", "position", "comment", "skip_reason", "flagged",
            "flag_note", "return_note", "created_at", "started_at", "submitted_at").iterator(chunk_size=5000))
    yield "data/labels.csv", ({
        "campaign": campaign, "external_id": ext[d][1], "rater": names[r], "item": code,
        "value": value, "comment": comment, "created_at": created, "updated_at": updated}
        for campaign, d, r, code, value, comment, created, updated in
        Label.objects.order_by("pk").values_list(
            "campaign__name", "dialogue_id", "rater_id", "item__code", "value", "comment", "created_at",
            "updated_at").iterator(chunk_size=5000))
    yield "data/label_changes.csv", ({
        "campaign": c.label.campaign.name, "external_id": ext[c.label.dialogue_id][1],
        "rater": names[c.label.rater_id], "item": c.label.item.code,
        "changed_by": names.get(c.changed_by_id, "") if c.changed_by_id else "", "changed_at": c.changed_at,
        "old_value": c.old_value, "new_value": c.new_value, "old_comment": c.old_comment,
        "new_comment": c.new_comment, "source": c.source, "reason": c.reason}
        for c in LabelChange.objects.all()
        .select_related("label__campaign", "label__item").order_by("pk").iterator(chunk_size=5000))
    yield "data/gold_labels.csv", ({"campaign": g.campaign.name, "external_id": ext[g.dialogue_id][1],
                                    "item": g.item.code, "value": g.value}
                                   for g in GoldLabel.objects.all()
                                   .select_related("campaign", "item").order_by("pk"))
    yield "data/adjudications.csv", ({"campaign": a.campaign.name, "external_id": ext[a.dialogue_id][1],
                                      "item": a.item.code, "value": a.value, "reason": a.reason,
                                      "decided_at": a.decided_at}
                                     for a in Adjudication.objects.all()
                                     .select_related("campaign", "item").order_by("pk"))
    yield "data/random_samples.csv", ({
        "campaign": s.campaign.name, "kind": s.kind, "size": s.size, "seed": s.seed, "stratified": s.stratified,
        "population": [[ext[pk][1], model] for pk, model in s.population if pk in ext],
        "dialogues": [ext[pk][1] for pk in s.dialogues if pk in ext], "strata": s.strata, "note": s.note,
        "created_at": s.created_at, **_active_sample_columns(s, ext)}
        for s in RandomSample.objects.select_related("campaign").order_by("pk"))
    set_key = {p.pk: f"{p.name}@v{p.version}" for p in prompt_sets}
    yield "data/prompt_sets.csv", ({
        "prompt_set": set_key[p.pk], "name": p.name, "version": p.version,
        "scale_version": version_key(p.scale_version), "system_prompt": p.system_prompt,
        "dialogue_template": p.dialogue_template, "per_dialogue_instruction": p.per_dialogue_instruction,
        "note": p.note} for p in prompt_sets)
    yield "data/prompts.csv", ({"prompt_set": set_key[p.prompt_set_id], "item": p.item.code, "question": p.question}
                               for p in Prompt.objects.select_related("item")
                               .order_by("pk"))
    from scoring.judges.models import JudgeConfig

    yield "data/judges.csv", ({
        "judge": j.name, "endpoint": j.endpoint.name if j.endpoint_id else safe_url(j.base_url) or "(environment)",
        "model": j.model, "temperature": j.temperature, "max_tokens": j.max_tokens, "seed": j.seed, "mode": j.mode,
        "structured_output": j.structured_output, "request_logprobs": j.request_logprobs,
        "timeout_seconds": j.timeout_seconds, "max_attempts": j.max_attempts,
        "price_input_per_1k": j.price_input_per_1k, "price_output_per_1k": j.price_output_per_1k,
        "currency": j.currency, "prompt_set": set_key.get(j.prompt_set_id, "")}
        for j in JudgeConfig.objects.select_related("endpoint").order_by("pk"))
    yield "data/judge_runs.csv", ({
        "run": key, "judge": run.name, "source": run.source,
        "scale_version": version_key(run.scale_version) if run.scale_version_id else "",
        "corpus": run.corpus.name, "filter_split": run.filter_split, "filter_model": run.filter_model,
        "filter_language": run.filter_language, "item_codes": run.item_codes, "status": run.status,
        "error": run.error, "snapshot": importers.scrub(safe_snapshot(run.snapshot)), "source_file": run.source_file,
        "source_sha256": run.source_sha256, "requests_sent": run.requests_sent, "created_at": run.created_at,
        "started_at": run.started_at, "finished_at": run.finished_at,
        # the configuration's name now (data/judges.csv), which may differ from the one the run recorded ("judge")
        "config": run.config.name if run.config_id else ""} for key, run in runs.items())
    run_key = {run.pk: key for key, run in runs.items()}
    yield "data/judge_results.csv", ({
        "run": run_key[r["run_id"]], "external_id": ext[r["dialogue_id"]][1], "item": r["item__code"],
        "status": r["status"], "value": r["value"], "p_yes": r["p_yes"], "rationale": r["rationale"],
        "from_cache": r["from_cache"], "attempts": r["attempts"], "error": r["error"],
        "call": r["call__key"] or "", "imported_prompt": r["imported_prompt__text"] or "",
        "uncertainty": r["uncertainty"]}
        for r in JudgeResult.objects.order_by("pk").values(
            "run_id", "dialogue_id", "item__code", "status", "value", "p_yes", "rationale", "from_cache",
            "attempts", "error", "call__key", "imported_prompt__text", "uncertainty").iterator(chunk_size=5000))
    from scoring.llm.models import LLMCall

    yield "data/llm_calls.csv", ({
        "call": c.key, "endpoint": safe_url(c.endpoint) if "://" in c.endpoint else c.endpoint, "model": c.model,
        "request": c.request, "response": c.response, "content": c.content, "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens, "cost": c.cost, "latency_ms": c.latency_ms,
        "created_at": c.created_at}
        for c in LLMCall.objects.all()
        .order_by("pk").iterator(chunk_size=2000))
    del JudgeRun


def _dialogue_rows(project: Project) -> Iterator[dict[str, Any]]:
    qs = (Dialogue.objects.select_related("corpus")
          .prefetch_related("redactions").order_by("pk"))
    for d in qs.iterator(chunk_size=2000):
        excluded = d.privacy_status == PrivacyStatus.EXCLUDED
        self_report, turns = ("", []) if excluded else redacted(d)
        findings = [{k: m.get(k) for k in ("kind", "field", "turn", "start", "end")}
                    for m in d.privacy_matches or [] if isinstance(m, dict)]
        yield {"corpus": d.corpus.name, "external_id": d.external_id, "self_report": self_report, "turns": turns,
               "source_model": d.source_model, "language": d.language, "split": d.split, "meta": d.meta,
               "case": d.case, "replicate": d.replicate, "privacy_status": d.privacy_status,
               "privacy_findings": findings, "original_sha256": original_sha256(d), "deleted": d.is_deleted}


def _people(project: Project) -> dict[int, str]:
    """Everyone the tables name (raters, whoever changed a label) -> their pseudonym in the project."""
    ids = set(Assignment.objects.values_list("rater_id", flat=True).distinct())
    ids |= set(CampaignRater.objects.values_list("user_id", flat=True))
    ids |= set(LabelChange.objects.filter(changed_by__isnull=False)
               .order_by().values_list("changed_by_id", flat=True).distinct())  # unordered: 0.04 s, not 0.6 s
    return pseudonyms(project, ids)


def _other_exports(writer: Writer, files: list[other_figures.ArchiveFile]) -> None:
    """Delphi studies and preference studies through their own exporters (pseudonymised as they are), with the
    settings their figures depend on (:func:`studies.other_figures.exports`)."""
    for file in files:
        if isinstance(file.content, str):
            writer.write_text(file.path, file.content, file.description)
        else:
            writer.write_json(file.path, file.content, file.description)


@in_project_of("project")
def export_study(project: Project, out_path: str | Path, actor=None, license_url: str = "") -> dict[str, Any]:
    """Write the project's study to ``out_path`` (a zip); returns a summary (files, rows, figures). ``license_url``:
    the data's licence as the exporter names it (the crate says "not recorded" without it). Raises
    :class:`PrivacyReviewPending` while a dialogue awaits privacy review. Runs in ``project``'s scope."""
    waiting = pending_review(project)
    if waiting:
        named = ", ".join(f"{corpus}/{ext}" for corpus, ext in waiting)
        raise PrivacyReviewPending(f"Dialogues await privacy review ({named}{', ...' if len(waiting) == 5 else ''}): "
                                   "review them (Corpora -> Privacy review) before exporting the study.")
    out_path = Path(out_path)
    names = _people(project)
    ext = dict((pk, (corpus, e)) for pk, corpus, e in
               Dialogue.objects.values_list("pk", "corpus__name", "external_id"))
    settings = study_figures.default_settings(project)
    reports = study_figures.cached_reports(project, settings)
    other_files, other_rows = other_figures.exports(project)
    figure_rows = study_figures.figure_rows(reports) + other_rows
    counts: dict[str, int] = {}
    tmp = out_path.with_name(out_path.name + ".part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        writer = Writer(zf)
        for path, rows in _tables(project, names, ext):
            title, schema = SCHEMAS[path]
            counts[path] = writer.write_table(path, title, schema, rows).rows
        title, schema = SCHEMAS["figures/figures.csv"]
        counts["figures/figures.csv"] = writer.write_table("figures/figures.csv", title, schema, figure_rows).rows
        writer.write_json("settings/reports.json", settings,
                          "Report settings: every report the study shows, with its options, seed and resamples")
        for n, entry in enumerate(reports, 1):
            if not entry.get("missing"):
                report = Importers(project).scrub({k: v for k, v in entry["report"].items() if k != "plots"})
                writer.write_json(f"figures/reports/{n}.json", {"figure": entry["figure"], "kind": entry["kind"],
                                                                "fingerprint": entry["fingerprint"],
                                                                "method": entry["method"], "report": report},
                                  f"Report: {entry['figure']}")
        _other_exports(writer, other_files)
        from studies.methods import methods_docx, methods_markdown, tripod_markdown
        from studies.provenance import study_provenance

        archive_view = {"project": project.name, "reports": reports, "counts": counts, "settings": settings,
                        "provenance": study_provenance(project)}
        writer.write_text("methods/methods.md", methods_markdown(archive_view),
                          "Methods and results (Markdown), each figure pointing at its archive file")
        writer.write_bytes("methods/methods.docx", methods_docx(archive_view), "Methods and results (DOCX)")
        writer.write_text("methods/tripod-llm.md", tripod_markdown(archive_view),
                          "TRIPOD-LLM checklist by item number: reported where, not applicable why, or not recorded")
        exported_at = timezone.now()
        writer.write_json("software.json", software(), "The software that made the archive")
        writer.write_json("study.json", {
            "project": project.name, "description": project.description, "is_demo": project.is_demo,
            "exported_at": exported_at.isoformat(), "format": FORMAT, "format_version": FORMAT_VERSION,
            "tables": counts, "figures": len(figure_rows)}, "The study: project, export time, counts")
        writer.write_json(DATAPACKAGE, datapackage(writer.tables, "minicex-study"),
                          "Frictionless data package: every table's schema")
        writer.write_json(CRATE_METADATA, _crate(project, writer, exported_at, license_url))
        manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "algorithm": "sha256",
                    "files": dict(sorted(writer.hashes.items()))}
        zf.writestr(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
    tmp.replace(out_path)
    archive_sha256 = sha256_file(out_path)
    AuditEvent.record(actor, "study-export", project, file=out_path.name, sha256=archive_sha256,
                      tables={k: v for k, v in counts.items()}, figures=len(figure_rows))
    return {"path": str(out_path), "sha256": archive_sha256, "tables": counts, "figures": len(figure_rows),
            "files": len(writer.hashes) + 1}


def _crate(project: Project, writer: Writer, exported_at, license_url: str = "") -> dict:
    """ro-crate-metadata.json (RO-Crate :data:`~studies.archive.RO_CRATE_VERSION`) describing every file, made with
    the ``rocrate`` package. The root dataset's licence is ``license_url`` when the exporter names one, else a
    contextual entity saying it was not recorded (the app knows no licence of a study's data)."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    crate = ROCrate(version=RO_CRATE_VERSION)
    crate.name = f"Study archive: {project.name}"
    crate.description = ("A Mini-CEX Workbench study: instruments, corpora (redacted), campaigns, pseudonymised "
                         "labels, judge runs and every figure with its method; re-run with manage.py verify_study.")
    crate.datePublished = exported_at.isoformat()
    if license_url:
        licence = ContextEntity(crate, license_url, properties={"@type": "CreativeWork", "name": license_url})
    else:
        licence = ContextEntity(crate, "#license-not-recorded", properties={
            "@type": "CreativeWork", "name": "Licence not recorded",
            "description": "No licence was recorded when the study was exported: ask the study's authors before "
                           "reusing its data."})
    crate.add(licence)
    crate.root_dataset["license"] = licence
    table_paths = {t.path for t in writer.tables}
    for path in sorted(writer.hashes):
        suffix = Path(path).suffix
        media = {".csv": "text/csv", ".json": "application/json", ".md": "text/markdown",
                 ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}.get(suffix)
        properties = {"name": writer.descriptions.get(path, path), "sha256": writer.hashes[path]}
        if media:
            properties["encodingFormat"] = media
        if path in table_paths:
            properties["conformsTo"] = {"@id": "https://specs.frictionlessdata.io/tabular-data-resource/"}
        crate.add_file(dest_path=path, properties=properties)
    crate.add_file(dest_path=MANIFEST, properties={"name": "SHA-256 of every other file",
                                                   "encodingFormat": "application/json"})
    return crate.metadata.generate()


def _active_sample_columns(sample: RandomSample, ext: dict) -> dict:
    """An active sample's inclusion probabilities (by external id) and rule; empty for other samples."""
    return {"probabilities": {ext[int(pk)][1]: p for pk, p in (sample.probabilities or {}).items() if int(pk) in ext},
            "rule": sample.rule or {}}
