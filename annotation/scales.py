"""Scale services: load the instrument from JSON, copy a version to a new draft, publish, lock."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotation import scores

MINI_CEX_V1 = Path(__file__).parent / "instrument" / "mini_cex_v1.json"


def read_instrument(path: Path = MINI_CEX_V1) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def load_instrument(data: dict[str, Any], models: Any, *, publish: bool = True, project: Any = None) -> Any:
    """Create a scale and its first version from instrument JSON.

    ``models`` gives ``Scale``, ``ScaleVersion``, ``Dimension`` and ``Item`` (the real models, or the
    historical ones inside a data migration); ``project`` owns the scale and version (None in the data migrations
    from before projects). Idempotent: an existing scale with that slug is returned.
    """
    owner = {} if project is None else {"project": project}
    Scale, ScaleVersion, Dimension, Item = models.Scale, models.ScaleVersion, models.Dimension, models.Item
    existing = Scale.objects.filter(slug=data["slug"]).first()
    if existing is not None:
        return existing
    now = timezone.now()
    scale = Scale.objects.create(
        slug=data["slug"], name_en=data["name_en"], name_zh=data.get("name_zh", ""),
        description=data.get("description", ""), **owner,
    )
    version = ScaleVersion.objects.create(
        scale=scale, number=1, note=data.get("version_note", ""), **owner,
        status="published" if publish else "draft", published_at=now if publish else None,
    )
    order = 0
    for d_order, dim in enumerate(data["dimensions"], start=1):
        dimension = Dimension.objects.create(
            version=version, code=dim["code"], order=d_order, name_en=dim["name_en"], name_zh=dim.get("name_zh", "")
        )
        for entry in dim["items"]:
            order += 1
            item = Item.objects.create(
                version=version, dimension=dimension, code=entry["code"], order=order,
                response_type=entry["type"], text_en=entry["text_en"], text_zh=entry.get("text_zh", ""),
                guidance_en=entry.get("guidance_en", ""), guidance_zh=entry.get("guidance_zh", ""),
            )
            for level in entry.get("levels", []):
                order += 1
                Item.objects.create(
                    version=version, dimension=dimension, parent=item, code=level["code"], order=order,
                    response_type="level", value=level["value"], text_en=level["text_en"],
                    text_zh=level.get("text_zh", ""), guidance_en=level.get("guidance_en", ""),
                    guidance_zh=level.get("guidance_zh", ""),
                )
    if publish:  # lock only once the content is in place
        ScaleVersion.objects.filter(pk=version.pk).update(locked_at=now, locked_reason="published")
    return scale


def instrument_json(version) -> dict[str, Any]:
    """The JSON form of a version (the inverse of ``load_instrument``), for export and copying."""
    dims = []
    for dim in version.dimensions.order_by("order"):
        items = []
        for item in dim.items.filter(parent__isnull=True).order_by("order"):
            entry = {
                "code": item.code, "type": item.response_type, "text_en": item.text_en, "text_zh": item.text_zh,
                "guidance_en": item.guidance_en, "guidance_zh": item.guidance_zh,
            }
            levels = item.levels.order_by("order")
            if levels:
                entry["levels"] = [
                    {"code": lv.code, "value": lv.value, "text_en": lv.text_en, "text_zh": lv.text_zh,
                     "guidance_en": lv.guidance_en, "guidance_zh": lv.guidance_zh}
                    for lv in levels
                ]
            items.append(entry)
        dims.append({"code": dim.code, "name_en": dim.name_en, "name_zh": dim.name_zh, "items": items})
    scale = version.scale
    return {
        "slug": scale.slug, "name_en": scale.name_en, "name_zh": scale.name_zh,
        "description": scale.description, "version": version.number, "version_note": version.note,
        "dimensions": dims,
    }


def next_version_number(scale) -> int:
    """The next free version number of ``scale``. Numbers are unique per scale across projects, and another project
    may hold a draft of a library scale (its Delphi study's next version), which this project cannot see: the
    number is read across projects (a listed ``unscoped`` use), and only the number is used."""
    from django.db.models import Max

    from annotation.models import ScaleVersion

    return (ScaleVersion.unscoped.filter(scale_id=scale.pk).aggregate(m=Max("number"))["m"] or 0) + 1


@transaction.atomic
def new_version(version, user, note: str, *, project=None):
    """Copy ``version`` into a new draft (the next number) that can be edited, in ``project`` (default: the
    working project)."""
    from annotation.models import Dimension, Item, ScaleVersion
    from projects.models import AuditEvent

    if not note.strip():
        raise ValueError("Say why the new version is needed.")
    scale = version.scale
    number = next_version_number(scale)
    owner = {"project_id": getattr(project, "pk", project)} if project is not None else {}
    draft = ScaleVersion.objects.create(scale=scale, number=number, note=note.strip(), based_on=version,
                                        created_by=user, **owner, judge_keys=dict(version.judge_keys or {}))
    dim_map = {}
    for dim in version.dimensions.all():
        dim_map[dim.pk] = Dimension.objects.create(
            version=draft, code=dim.code, order=dim.order, name_en=dim.name_en, name_zh=dim.name_zh
        )
    item_map = {}
    # Parents before levels so that levels can point at the copied parent.
    items = list(version.items.filter(parent__isnull=True).order_by("order"))
    items += list(version.items.filter(parent__isnull=False).order_by("order"))
    for item in items:
        item_map[item.pk] = Item.objects.create(
            version=draft, dimension=dim_map[item.dimension_id],
            parent=item_map.get(item.parent_id), code=item.code, order=item.order,
            response_type=item.response_type, value=item.value, text_en=item.text_en, text_zh=item.text_zh,
            guidance_en=item.guidance_en, guidance_zh=item.guidance_zh, scale_min=item.scale_min,
            scale_max=item.scale_max, scale_step=item.scale_step, anchors=item.anchors,
        )
    AuditEvent.record(user, "scale_version.create", draft, reason=note, based_on=version.number)
    return draft


def validate_version(version) -> list[str]:
    """Problems that stop a version from being published (empty, levels items without levels, scale items
    without a range...)."""
    problems = []
    if not version.rating_items().exists():
        problems.append("The version has no items to rate.")
    for item in version.items.filter(response_type="ordinal"):
        values = [lv.value for lv in item.levels.all()]
        if len(values) < 2:
            problems.append(f"Item {item.code} has fewer than two levels.")
        elif len(set(values)) != len(values):
            problems.append(f"Item {item.code} has levels with the same value.")
    for item in version.items.filter(response_type="scale"):
        if item.scale_min is None or item.scale_max is None or item.scale_min >= item.scale_max:
            problems.append(f"Item {item.code} is a scale but has no range (lowest point below the highest).")
    language = version.scale.language
    for item in version.items.all():
        if not (item.text_zh if language == "zh" else item.text_en).strip():
            name = "Chinese" if language == "zh" else "English"
            problems.append(f"Item {item.code} has no {name} text.")
    return problems


@transaction.atomic
def publish(version, user):
    """Make a draft available for use; it becomes immutable."""
    from annotation.models import ScaleVersion
    from projects.models import AuditEvent

    version = ScaleVersion.objects.select_for_update().get(pk=version.pk)
    if version.status != ScaleVersion.Status.DRAFT:
        raise ValueError(gettext("%(version)s is %(status)s, not a draft.")
                         % {"version": version, "status": version.get_status_display().lower()})
    problems = validate_version(version)
    if problems:
        raise ValueError(" ".join(problems))
    now = timezone.now()
    version.status = ScaleVersion.Status.PUBLISHED
    version.published_at = now
    version.locked_at = version.locked_at or now
    version.locked_reason = version.locked_reason or "published"
    version.save(update_fields=["status", "published_at", "locked_at", "locked_reason"])
    AuditEvent.record(user, "scale_version.publish", version)
    return version


def lock(version, reason: str) -> None:
    """Freeze a version the first time something uses it (a campaign, a Delphi round, a judge run)."""
    from annotation.models import ScaleVersion

    ScaleVersion.objects.filter(pk=version.pk, locked_at__isnull=True).update(
        locked_at=timezone.now(), locked_reason=reason[:200]
    )
    version.refresh_from_db(fields=["locked_at", "locked_reason"])


@lru_cache(maxsize=32)
def rating_sheet(version_id: int) -> tuple[tuple[Any, tuple[Any, ...]], ...]:
    """The items a rater answers (binary, levels, scale and free-text items) grouped by dimension, each with
    ``level_list`` (levels in order) and ``points`` (scale items: ``(value, anchor en, anchor zh)`` per point, each
    anchor empty where the version has none in that language),
    for the rating page. Cached per process: only locked versions are rated, and a locked version never changes.
    Callers must not modify the returned items."""
    from django.db.models import Prefetch

    from annotation.models import Item
    from annotation.rating_language import anchor_texts

    # Unscoped: the sheet is cached per process for whoever reaches the version (its campaign's raters, in the
    # label save, which has no project scope); the caller has already checked that they may.
    items = (Item.unscoped.filter(version_id=version_id, response_type__in=Item.RATED_TYPES)
             .select_related("dimension").prefetch_related(Prefetch("levels", queryset=Item.unscoped.all()))
             .order_by("order"))
    sheet: list[tuple[Any, list[Any]]] = []
    for item in items:
        item.level_list = sorted(item.levels.all(), key=lambda level: level.order)
        item.points = tuple((scores.text(value), *anchor_texts(item, scores.text(value)))
                            for value in item.allowed_values()) if item.response_type == "scale" else ()
        if not sheet or sheet[-1][0].pk != item.dimension_id:
            sheet.append((item.dimension, []))
        sheet[-1][1].append(item)
    return tuple((dimension, tuple(members)) for dimension, members in sheet)


def shows_reference(version_id: int) -> bool:
    """Whether raters of this version's answers see the reference answer (the scale's ``show_reference``)."""
    from annotation.models import Scale

    return bool(Scale.objects.filter(versions=version_id).values_list("show_reference", flat=True).first())
