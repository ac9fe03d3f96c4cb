"""``import_study``: an archive loaded into a new project, all or nothing. Every hash is checked against the
manifest first (:func:`studies.archive.open_archive`); a row that cannot be loaded stops the load naming its file
and line, and nothing is kept.

Raters come back as external accounts (they cannot log in) carrying the archive's pseudonyms; library scale
versions are reused when this instance holds the same content under the same name, else the version is recreated in
the new project. Dialogues are loaded as the archive shows them (redacted): the redaction table stays in the
archive. LLM calls stay in the archive too (their keys are instance-wide); the answers and their parses are
loaded."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

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
    RandomSample,
    RaterProfile,
    Scale,
    ScaleVersion,
)
from projects import scoping
from projects.models import AuditEvent, Project, Pseudonym
from projects.roles import PHYSICIAN, assign_role
from projects.services import ProjectError, create_project
from studies.archive import Archive, ArchiveError, open_archive
from studies.export import version_content_sha256

BATCH = 5000


def _text(row: dict, name: str) -> str:
    return row.get(name) or ""


def _int(row: dict, name: str) -> int | None:
    raw = row.get(name) or ""
    return int(raw) if raw != "" else None


def _num(row: dict, name: str) -> Decimal | None:
    raw = row.get(name) or ""
    return Decimal(raw) if raw != "" else None


def _float(row: dict, name: str) -> float | None:
    raw = row.get(name) or ""
    return float(raw) if raw != "" else None


def _bool(row: dict, name: str) -> bool:
    return (row.get(name) or "") == "true"


def _json(row: dict, name: str, default: Any) -> Any:
    raw = row.get(name) or ""
    return json.loads(raw) if raw else default


def _when(row: dict, name: str):
    raw = row.get(name) or ""
    return parse_datetime(raw) if raw else None


@dataclass
class Loaded:
    """What a load made: the project and the archive's names mapped to the new rows."""

    project: Project
    versions: dict[str, ScaleVersion] = field(default_factory=dict)
    items: dict[tuple[str, str], int] = field(default_factory=dict)
    corpora: dict[str, Corpus] = field(default_factory=dict)
    dialogues: dict[tuple[str, str], int] = field(default_factory=dict)
    raters: dict[str, int] = field(default_factory=dict)
    campaigns: dict[str, Campaign] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


class _Rows:
    """Reads a table, turning any error into an ArchiveError naming the file and line."""

    def __init__(self, archive: Archive, path: str):
        self.archive, self.path, self.line = archive, path, 0

    def __iter__(self):
        for line, row in self.archive.rows(self.path):
            self.line = line
            yield row

    def fail(self, exc: Exception) -> ArchiveError:
        where = f"{self.path}, line {self.line}" if self.line else self.path
        return ArchiveError(f"{where}: {exc}")


def _table(archive: Archive, path: str, load) -> int:
    rows = _Rows(archive, path)
    count = 0
    try:
        for row in rows:
            load(row)
            count += 1
    except ArchiveError:
        raise
    except (KeyError, ValueError, TypeError, ArithmeticError) as exc:
        missing = f"unknown {exc}" if isinstance(exc, KeyError) else str(exc)
        raise rows.fail(ValueError(missing)) from None
    return count


def _load_versions(archive: Archive, out: Loaded) -> None:
    dims: dict[str, list[dict]] = {}
    for _, row in archive.rows("data/dimensions.csv"):
        dims.setdefault(row["version"], []).append(row)
    items: dict[str, list[dict]] = {}
    for _, row in archive.rows("data/items.csv"):
        items.setdefault(row["version"], []).append(row)

    def load(row: dict) -> None:
        key = row["version"]
        existing = (ScaleVersion.objects.filter(scale__slug=row["slug"], number=int(row["number"]))
                    .exclude(status=ScaleVersion.Status.DRAFT).select_related("scale").first())
        if existing is not None and version_content_sha256(existing) == row["content_sha256"]:
            out.versions[key] = existing
        else:
            out.versions[key] = _recreate_version(row, dims.get(key, []), items.get(key, []), out.project)
        for code, pk in Item.objects.filter(version=out.versions[key]).values_list("code", "pk"):
            out.items[(key, code)] = pk

    out.counts["scale versions"] = _table(archive, "data/scale_versions.csv", load)


def _recreate_version(row: dict, dims: list[dict], items: list[dict], project: Project) -> ScaleVersion:
    slug = f"{row['slug'][:40]}-{uuid.uuid4().hex[:8]}"  # slugs are instance-wide; the archive's may be taken
    scale = Scale.objects.create(project=project, slug=slug, name_en=row["name_en"], name_zh=_text(row, "name_zh"),
                                 description=_text(row, "description"), source=_text(row, "source"),
                                 target=row["target"], language=row["language"],
                                 show_reference=_bool(row, "show_reference"))
    version = ScaleVersion.objects.create(project=project, scale=scale, number=int(row["number"]),
                                          note=_text(row, "note"), judge_keys=_json(row, "judge_keys", {}))
    dimension = {d["code"]: Dimension.objects.create(version=version, code=d["code"], order=int(d["order"]),
                                                     name_en=d["name_en"], name_zh=_text(d, "name_zh"))
                 for d in dims}
    made: dict[str, Item] = {}
    for i in items:
        made[i["code"]] = Item.objects.create(
            version=version, dimension=dimension[i["dimension"]], parent=made.get(i["parent"]) if i["parent"] else None,
            code=i["code"], order=int(i["order"]), response_type=i["response_type"], value=_int(i, "value"),
            scale_min=_int(i, "scale_min"), scale_max=_int(i, "scale_max"), scale_step=_num(i, "scale_step"),
            anchors=_json(i, "anchors", {}), text_en=i["text_en"], text_zh=_text(i, "text_zh"),
            guidance_en=_text(i, "guidance_en"), guidance_zh=_text(i, "guidance_zh"))
    status = row["status"] if row["status"] != ScaleVersion.Status.DRAFT else ScaleVersion.Status.PUBLISHED
    now = timezone.now()
    ScaleVersion.objects.filter(pk=version.pk).update(status=status, published_at=now, locked_at=now,
                                                      locked_reason="loaded from a study archive")
    version.refresh_from_db()
    return version


def _load_corpora(archive: Archive, out: Loaded) -> None:
    now = timezone.now()

    def corpus(row: dict) -> None:
        c = Corpus.objects.create(project=out.project, name=row["corpus"], kind=row["kind"],
                                  description=_text(row, "description"), is_demo=_bool(row, "is_demo"))
        if _bool(row, "deleted"):
            Corpus.objects.filter(pk=c.pk).update(deleted_at=now, delete_reason="deleted before the export")
        out.corpora[row["corpus"]] = c

    out.counts["corpora"] = _table(archive, "data/corpora.csv", corpus)
    batch: list[Dialogue] = []

    def flush() -> None:
        Dialogue.objects.bulk_create(batch)
        for d in batch:
            out.dialogues[(d.corpus.name, d.external_id)] = d.pk
        batch.clear()

    def dialogue(row: dict) -> None:
        batch.append(Dialogue(
            corpus=out.corpora[row["corpus"]], external_id=row["external_id"], self_report=row["self_report"],
            turns=_json(row, "turns", []), source_model=_text(row, "source_model"), language=row["language"],
            split=_text(row, "split"), meta=_json(row, "meta", {}), case=_text(row, "case"),
            replicate=_int(row, "replicate"), privacy_status=row["privacy_status"],
            privacy_matches=_json(row, "privacy_findings", []),
            deleted_at=now if _bool(row, "deleted") else None,
            delete_reason="deleted before the export" if _bool(row, "deleted") else ""))
        if len(batch) >= BATCH:
            flush()

    out.counts["dialogues"] = _table(archive, "data/dialogues.csv", dialogue)
    flush()


def _load_raters(archive: Archive, out: Loaded) -> None:
    User = get_user_model()

    def rater(row: dict) -> None:
        code = row["rater"]
        user = User(username=f"archived-{out.project.pk}-{code}"[:150], is_active=True)
        user.set_unusable_password()
        user.save()
        RaterProfile.objects.create(user=user, is_external=True)
        Pseudonym.objects.create(project=out.project, user=user, code=code)
        if _bool(row, "physician"):  # the reports' wording ("physicians" or "raters") follows the archive
            assign_role(user, PHYSICIAN, out.project)
        out.raters[code] = user.pk

    out.counts["raters"] = _table(archive, "data/raters.csv", rater)


def _load_campaigns(archive: Archive, out: Loaded) -> None:
    now = timezone.now()

    def campaign(row: dict) -> None:
        deadline = parse_date(row["deadline"]) if row.get("deadline") else None
        c = Campaign.objects.create(
            project=out.project, name=row["campaign"], corpus=out.corpora[row["corpus"]],
            scale_version=out.versions[row["scale_version"]], phase=row["phase"], status=row["status"],
            overlap=int(row["overlap"]), filter_split=_text(row, "filter_split"),
            filter_model=_text(row, "filter_model"), filter_language=_text(row, "filter_language"),
            instructions=_text(row, "instructions"), deadline=deadline, seed=int(row["seed"] or 0),
            created_at=_when(row, "created_at") or now,
            # who gave imported labels (archives before this column: not recorded)
            rater_kind=_text(row, "rater_kind") if _text(row, "rater_kind") in Campaign.RaterKind.values else "")
        if _bool(row, "deleted"):
            Campaign.objects.filter(pk=c.pk).update(deleted_at=now, delete_reason="deleted before the export")
        out.campaigns[row["campaign"]] = c

    out.counts["campaigns"] = _table(archive, "data/campaigns.csv", campaign)

    def rater(row: dict) -> None:
        CampaignRater.objects.create(campaign=out.campaigns[row["campaign"]], user_id=out.raters[row["rater"]],
                                     team=_text(row, "team"), capacity=_int(row, "capacity"),
                                     active=_bool(row, "active"))

    out.counts["campaign raters"] = _table(archive, "data/campaign_raters.csv", rater)


def _dialogue_of(out: Loaded, campaign: Campaign, external_id: str) -> int:
    return out.dialogues[(campaign.corpus.name, external_id)]


def _load_work(archive: Archive, out: Loaded) -> None:
    assignments: dict[tuple[str, str, str], int] = {}
    batch: list[Assignment] = []
    keys: list[tuple[str, str, str]] = []

    def flush_assignments() -> None:
        Assignment.objects.bulk_create(batch)
        assignments.update({k: a.pk for k, a in zip(keys, batch, strict=True)})
        batch.clear()
        keys.clear()

    def assignment(row: dict) -> None:
        campaign = out.campaigns[row["campaign"]]
        batch.append(Assignment(
            campaign=campaign, dialogue_id=_dialogue_of(out, campaign, row["external_id"]),
            rater_id=out.raters[row["rater"]], status=row["status"], position=int(row["position"]),
            comment=_text(row, "comment"), skip_reason=_text(row, "skip_reason"), flagged=_bool(row, "flagged"),
            flag_note=_text(row, "flag_note"), return_note=_text(row, "return_note"),
            created_at=_when(row, "created_at") or timezone.now(), started_at=_when(row, "started_at"),
            submitted_at=_when(row, "submitted_at")))
        keys.append((row["campaign"], row["external_id"], row["rater"]))
        if len(batch) >= BATCH:
            flush_assignments()

    out.counts["assignments"] = _table(archive, "data/assignments.csv", assignment)
    flush_assignments()
    labels: list[Label] = []

    def label(row: dict) -> None:
        campaign = out.campaigns[row["campaign"]]
        version = _version_key(out, campaign)
        labels.append(Label(
            assignment_id=assignments[(row["campaign"], row["external_id"], row["rater"])], campaign=campaign,
            dialogue_id=_dialogue_of(out, campaign, row["external_id"]), rater_id=out.raters[row["rater"]],
            item_id=out.items[(version, row["item"])], value=_num(row, "value"), comment=_text(row, "comment"),
            created_at=_when(row, "created_at") or timezone.now(),
            updated_at=_when(row, "updated_at") or timezone.now()))
        if len(labels) >= BATCH:
            Label.objects.bulk_create(labels)
            labels.clear()

    out.counts["labels"] = _table(archive, "data/labels.csv", label)
    Label.objects.bulk_create(labels)
    changes = list(archive.rows("data/label_changes.csv"))
    if changes:
        label_ids = {(a, i): pk for pk, a, i in Label.objects.filter(campaign__project=out.project)
                     .values_list("pk", "assignment_id", "item_id")}

        history: list[LabelChange] = []

        def change(row: dict) -> None:
            campaign = out.campaigns[row["campaign"]]
            key = (assignments[(row["campaign"], row["external_id"], row["rater"])],
                   out.items[(_version_key(out, campaign), row["item"])])
            history.append(LabelChange(
                label_id=label_ids[key], changed_by_id=out.raters.get(row["changed_by"]),
                changed_at=_when(row, "changed_at") or timezone.now(), old_value=_num(row, "old_value"),
                new_value=_num(row, "new_value"), old_comment=_text(row, "old_comment"),
                new_comment=_text(row, "new_comment"), source=row["source"], reason=_text(row, "reason")))
            if len(history) >= BATCH:
                LabelChange.objects.bulk_create(history)
                history.clear()

        out.counts["label changes"] = _table(archive, "data/label_changes.csv", change)
        LabelChange.objects.bulk_create(history)

    def gold(row: dict) -> None:
        campaign = out.campaigns[row["campaign"]]
        GoldLabel.objects.create(campaign=campaign, dialogue_id=_dialogue_of(out, campaign, row["external_id"]),
                                 item_id=out.items[(_version_key(out, campaign), row["item"])],
                                 value=_num(row, "value"))

    out.counts["gold labels"] = _table(archive, "data/gold_labels.csv", gold)

    def adjudication(row: dict) -> None:
        campaign = out.campaigns[row["campaign"]]
        Adjudication.objects.create(
            campaign=campaign, dialogue_id=_dialogue_of(out, campaign, row["external_id"]),
            item_id=out.items[(_version_key(out, campaign), row["item"])], value=_num(row, "value"),
            reason=_text(row, "reason"), decided_at=_when(row, "decided_at") or timezone.now())

    out.counts["adjudications"] = _table(archive, "data/adjudications.csv", adjudication)

    def sample(row: dict) -> None:
        campaign = out.campaigns[row["campaign"]]
        corpus = campaign.corpus.name
        RandomSample.objects.create(
            campaign=campaign, kind=row["kind"], size=int(row["size"]), seed=_int(row, "seed"),
            stratified=_bool(row, "stratified"),
            population=[[out.dialogues[(corpus, ext)], model] for ext, model in _json(row, "population", [])],
            dialogues=sorted(out.dialogues[(corpus, ext)] for ext in _json(row, "dialogues", [])),
            strata=_json(row, "strata", {}), note=_text(row, "note"),
            created_at=_when(row, "created_at") or timezone.now(),
            probabilities={str(out.dialogues[(corpus, ext)]): p for ext, p in _json(row, "probabilities", {}).items()},
            rule=_json(row, "rule", {}))

    out.counts["random samples"] = _table(archive, "data/random_samples.csv", sample)


def _version_key(out: Loaded, campaign: Campaign) -> str:
    return next(k for k, v in out.versions.items() if v.pk == campaign.scale_version_id)


def _load_judges(archive: Archive, out: Loaded) -> None:
    from scoring.judges.models import ImportedPrompt, JudgeConfig, JudgeResult, JudgeRun, Prompt, PromptSet

    prompt_sets: dict[str, PromptSet] = {}

    def prompt_set(row: dict) -> None:
        prompt_sets[row["prompt_set"]] = PromptSet.objects.create(
            project=out.project, name=row["name"], version=int(row["version"]),
            scale_version=out.versions[row["scale_version"]], system_prompt=row["system_prompt"],
            dialogue_template=row["dialogue_template"], per_dialogue_instruction=row["per_dialogue_instruction"],
            note=_text(row, "note"))

    out.counts["prompt sets"] = _table(archive, "data/prompt_sets.csv", prompt_set)

    def prompt(row: dict) -> None:
        ps = prompt_sets[row["prompt_set"]]
        key = next(k for k, v in out.versions.items() if v.pk == ps.scale_version_id)
        Prompt.objects.create(prompt_set=ps, item_id=out.items[(key, row["item"])], question=row["question"])

    out.counts["prompts"] = _table(archive, "data/prompts.csv", prompt)
    configs: dict[str, JudgeConfig] = {}

    def judge(row: dict) -> None:
        configs[row["judge"]] = JudgeConfig.objects.create(
            project=out.project, name=row["judge"], model=row["model"], temperature=float(row["temperature"]),
            max_tokens=int(row["max_tokens"]), seed=_int(row, "seed"), mode=row["mode"],
            structured_output=_bool(row, "structured_output"), request_logprobs=_bool(row, "request_logprobs"),
            timeout_seconds=float(row["timeout_seconds"]), max_attempts=int(row["max_attempts"]),
            price_input_per_1k=_num(row, "price_input_per_1k") or 0,
            price_output_per_1k=_num(row, "price_output_per_1k") or 0, currency=row["currency"],
            prompt_set=prompt_sets[row["prompt_set"]])

    out.counts["judges"] = _table(archive, "data/judges.csv", judge)
    runs: dict[str, JudgeRun] = {}

    # A live run's snapshot names its prompt set ("name vN") and its judge as they were when the run started; the
    # judge may have been renamed or given another prompt set since. Its name now is in the "config" column (empty
    # for imported runs; archives written before that column name the judge by the snapshot only).
    set_by_label = {f"{p.name} v{p.version}": p for p in prompt_sets.values()}

    def run(row: dict) -> None:
        snapshot = _json(row, "snapshot", {})
        name = row["config"] if "config" in row else snapshot.get("name", "")
        config = configs.get(name) if name else None
        prompt_set = set_by_label.get(snapshot.get("prompt_set_name") or "") or (config and config.prompt_set)
        for key, value in (("prompt_set", prompt_set.pk if prompt_set else None),
                           ("config_id", config.pk if config else None)):
            if value:
                snapshot[key] = value
            else:
                snapshot.pop(key, None)
        runs[row["run"]] = JudgeRun.objects.create(
            project=out.project, config=config, source=row["source"],
            scale_version=out.versions[row["scale_version"]] if row["scale_version"] else None,
            corpus=out.corpora[row["corpus"]], filter_split=_text(row, "filter_split"),
            filter_model=_text(row, "filter_model"), filter_language=_text(row, "filter_language"),
            item_codes=_json(row, "item_codes", []), status=row["status"], error=_text(row, "error"),
            snapshot=snapshot, source_file=_text(row, "source_file"), source_sha256=_text(row, "source_sha256"),
            requests_sent=_int(row, "requests_sent") or 0, request_limit=0,
            created_at=_when(row, "created_at") or timezone.now(), started_at=_when(row, "started_at"),
            finished_at=_when(row, "finished_at"))

    out.counts["judge runs"] = _table(archive, "data/judge_runs.csv", run)
    version_of_run = {key: _run_version_key(out, r) for key, r in runs.items()}
    results: list[JudgeResult] = []
    prompts: list[tuple[JudgeResult, str]] = []

    def flush() -> None:
        JudgeResult.objects.bulk_create(results)
        ImportedPrompt.objects.bulk_create([ImportedPrompt(result=r, text=t) for r, t in prompts])
        results.clear()
        prompts.clear()

    def result(row: dict) -> None:
        r = runs[row["run"]]
        version = version_of_run[row["run"]]
        unit = JudgeResult(run=r, dialogue_id=out.dialogues[(r.corpus.name, row["external_id"])],
                           item_id=out.items[(version, row["item"])], status=row["status"],
                           value=_num(row, "value"), p_yes=_float(row, "p_yes"), rationale=_text(row, "rationale"),
                           uncertainty=_float(row, "uncertainty"),
                           from_cache=_bool(row, "from_cache"), attempts=_int(row, "attempts") or 0,
                           error=_text(row, "error"))
        results.append(unit)
        if row.get("imported_prompt"):
            prompts.append((unit, row["imported_prompt"]))
        if len(results) >= BATCH:
            flush()

    out.counts["judge answers"] = _table(archive, "data/judge_results.csv", result)
    flush()


def _run_version_key(out: Loaded, run) -> str:
    from scoring.judges.report import run_scale_version_id

    version_id = run_scale_version_id(run)
    return next(k for k, v in out.versions.items() if v.pk == version_id)


def load_into(archive: Archive, project: Project) -> Loaded:
    """Load every table into ``project`` (which must be new and empty), in the order the rows were made, so that
    every figure recomputes from the same data in the same order. Call inside a transaction and the project's
    scope."""
    out = Loaded(project)
    _load_versions(archive, out)
    _load_corpora(archive, out)
    _load_raters(archive, out)
    _load_campaigns(archive, out)
    _load_work(archive, out)
    _load_judges(archive, out)
    return out


def import_study(path: str | Path, project_name: str, actor=None) -> Loaded:
    """Check the archive, then load it into a new project ``project_name``; all or nothing."""
    archive = open_archive(path)
    study = archive.json("study.json")
    try:
        with transaction.atomic():
            project = create_project(project_name, by=actor, description=(
                f"Loaded from the study archive {Path(path).name} of project {study.get('project')!r}, exported "
                f"{study.get('exported_at', '')[:10]}."))
            with scoping.in_project(project):
                loaded = load_into(archive, project)
                AuditEvent.record(actor, "study-import", project, file=Path(path).name,
                                  source_project=study.get("project", ""), counts=loaded.counts)
    except ProjectError as exc:
        raise ArchiveError(str(exc)) from None
    return loaded
