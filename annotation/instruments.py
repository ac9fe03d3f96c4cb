"""Instruments as JSON files (README, "Your own instrument"): check a file (every error names the JSON path that
is wrong), create a scale version from it, write a version back out in the same format, build one item by item
in the browser, and the ready instruments shipped in ``annotation/instrument/``.

The format::

    {"name", "slug", "language": "en"|"zh", "target": "dialogue"|"answer",
     "dimensions": [{"code", "name"}],
     "items": [{"code", "dimension", "text", "guidance",
                "response": {"type": "binary"}
                          | {"type": "levels", "levels": [{"value", "label"}]}
                          | {"type": "scale", "min", "max", "step", "anchors": {"0": "...", "5": "..."}}
                          | {"type": "text"}}]}

Optional: ``description``, ``source``, ``version_note``, ``show_reference`` (answers: show the reference answer,
default true), ``judge_keys`` (a judge's own answer keys -> item codes, e.g. ``{"question 1": "comprehension"}``,
so that answers in that judge's format are read) and ``version`` (written by the export, ignored on import); levels
may carry ``code`` and ``guidance``; a scale's ``step`` (default 1, e.g. 0.5) sets the distance between points.
Any text (name, text, guidance, level label, anchor) is a string in the instrument's language or
``{"en": ..., "zh": ...}``. ``levels`` is stored as the response type ``ordinal`` (the Mini-CEX's item 4).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation import scales, scores
from annotation.models import Dimension, Item, Scale, ScaleVersion
from core.site import storable
from projects import scoping
from projects.models import AuditEvent

SHIPPED_DIR = Path(__file__).parent / "instrument"
#: Ready instruments (slug -> file in annotation/instrument/), installed by load_demo or from the Scales page.
SHIPPED = {
    "hivmedqa-medgpt": "hivmedqa_medgpt.json",
    "agentclinic-ratings": "agentclinic_ratings.json",
}

LANGUAGES = ("en", "zh")
TARGETS = ("dialogue", "answer")
RESPONSE_TYPES = ("binary", "levels", "scale", "text")
#: The widest scale: 21 points (0-20, or 0-10 in steps of 0.5); more would need a slider rather than one key per
#: point.
MAX_SCALE_STEPS = 20
#: A step has at most this many decimals (0.5, 0.25, 0.125).
STEP_DECIMALS = 3
JUDGE_KEY_MAX = 100
SCALE_LIMIT = 1000
CODE_MAX = 16
SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")
RESERVED_SLUGS = ("new",)  # /scales/new/ is the page that builds one

TOP_REQUIRED = ("name", "slug", "language", "target", "dimensions", "items")
TOP_OPTIONAL = ("description", "source", "version_note", "show_reference", "judge_keys", "version")
ITEM_REQUIRED = ("code", "dimension", "text", "response")
ITEM_OPTIONAL = ("guidance",)
RESPONSE_KEYS = {"binary": ("type",), "text": ("type",), "levels": ("type", "levels"), "scale": ("type", "min", "max")}
RESPONSE_OPTIONAL = {"scale": ("step", "anchors")}
STORED_TYPE = {"binary": "binary", "levels": "ordinal", "scale": "scale", "text": "text"}
FILE_TYPE = {stored: public for public, stored in STORED_TYPE.items()}


class InstrumentError(ValueError):
    """An instrument that cannot be imported; ``errors`` are "JSON path: message" strings."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors[:20]) + (" ..." if len(errors) > 20 else ""))


# ------------------------------------------------------------------------------------------------------ checking
class _Checker:
    """Collects "path: message" errors while normalising an instrument."""

    def __init__(self, language: str = "en"):
        self.errors: list[str] = []
        self.language = language if language in LANGUAGES else "en"

    def error(self, path: str, message: str) -> None:
        self.errors.append(f"{path}: {message}")

    def keys(self, obj: dict, path: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> bool:
        """Report missing and unknown keys; True when every required key is there."""
        missing = [k for k in required if k not in obj]
        for key in missing:
            self.error(f"{path}.{key}", "missing")
        known = required + optional
        for key in obj:
            if key not in known:
                self.error(f"{path}.{key}", f"unknown key (expected {', '.join(known)})")
        return not missing

    def text(self, value: Any, path: str, *, required: bool) -> dict[str, str]:
        """A string (in the instrument's language) or {"en": ..., "zh": ...} -> {"en": ..., "zh": ...}."""
        out = {"en": "", "zh": ""}
        if isinstance(value, str):
            out[self.language] = value.strip()
        elif isinstance(value, dict):
            for key, text in value.items():
                if key not in LANGUAGES:
                    self.error(f"{path}.{key}", 'unknown language (use "en" and "zh")')
                elif not isinstance(text, str):
                    self.error(f"{path}.{key}", "must be text")
                else:
                    out[key] = text.strip()
        elif value is not None or required:
            self.error(path, 'must be text or {"en": ..., "zh": ...}')
            return out
        if required and not out[self.language]:
            name = "Chinese" if self.language == "zh" else "English"
            self.error(path, f"needs {name} text (the instrument's language is {self.language})")
        return out

    def code(self, value: Any, path: str) -> str | None:
        if isinstance(value, bool) or not isinstance(value, str | int):
            self.error(path, 'must be a code such as "1.1"')
            return None
        code = str(value).strip()
        if not code or len(code) > CODE_MAX or any(ch.isspace() for ch in code):
            self.error(path, f"must be 1-{CODE_MAX} characters without spaces, e.g. \"1.1\"")
            return None
        return code

    def integer(self, value: Any, path: str) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(path, "must be a whole number")
            return None
        if abs(value) > SCALE_LIMIT:
            self.error(path, f"must be between -{SCALE_LIMIT} and {SCALE_LIMIT}")
            return None
        return value

    def step(self, value: Any, path: str) -> Decimal | None:
        """A scale's step: a positive number with at most three decimals; None for 1 (whole points)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.error(path, "must be a number such as 0.5")
            return None
        try:
            step = Decimal(str(value))
        except InvalidOperation:
            step = Decimal(-1)
        if not step.is_finite() or step <= 0 or step > SCALE_LIMIT:
            self.error(path, "must be a positive number such as 0.5")
            return None
        if step != round(step, STEP_DECIMALS):
            self.error(path, f"has at most {STEP_DECIMALS} decimals (e.g. 0.5 or 0.25)")
            return None
        return None if step == 1 else step.normalize()

    def response(self, value: Any, path: str, item_code: str | None) -> dict | None:
        if not isinstance(value, dict):
            self.error(path, 'must be an object such as {"type": "binary"}')
            return None
        kind = value.get("type")
        if kind not in RESPONSE_TYPES:
            self.error(f"{path}.type", f"must be one of {', '.join(RESPONSE_TYPES)} (got {kind!r})")
            return None
        if not self.keys(value, path, RESPONSE_KEYS[kind], RESPONSE_OPTIONAL.get(kind, ())):
            return None
        out: dict[str, Any] = {"type": STORED_TYPE[kind], "min": None, "max": None, "step": None, "anchors": {},
                               "levels": []}
        if kind == "scale":
            low, high = self.integer(value.get("min"), f"{path}.min"), self.integer(value.get("max"), f"{path}.max")
            errors_before = len(self.errors)
            step = self.step(value["step"], f"{path}.step") if "step" in value else None
            step_ok = len(self.errors) == errors_before
            out["step"] = step
            if low is not None and high is not None and step_ok:
                intervals = (Decimal(high - low) / (step or 1)) if low < high else None
                if low >= high:
                    self.error(f"{path}.max", f"must be above min ({low})")
                elif intervals != intervals.to_integral_value():
                    self.error(f"{path}.step", f"must divide the range {low}-{high} into whole steps "
                                               f"(got {scores.step_text(step)})")
                elif intervals > MAX_SCALE_STEPS:
                    self.error(f"{path}.max", f"a scale has at most {MAX_SCALE_STEPS + 1} points "
                                              + (f"(max - min <= {MAX_SCALE_STEPS})" if step is None else
                                                 f"((max - min) / step <= {MAX_SCALE_STEPS})"))
                else:
                    out["min"], out["max"] = low, high
            anchors = value.get("anchors", {})
            points = scores.grid(out["min"], out["max"], step) if out["min"] is not None else None
            if not isinstance(anchors, dict):
                self.error(f"{path}.anchors", 'must be an object such as {"0": "lowest", "5": "highest"}')
            else:
                for key, label in anchors.items():
                    try:
                        point = scores.parse(str(key)) if re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", str(key)) else None
                    except ValueError:
                        point = None
                    if point is None:
                        self.error(f"{path}.anchors.{key}", "keys are scale points such as \"0\"")
                    elif points is not None and point not in points:
                        where = f"{out['min']}-{out['max']}" + (f" in steps of {scores.step_text(step)}" if step
                                                                  else "")
                        self.error(f"{path}.anchors.{key}", f"is not a point of the scale ({where})")
                    else:
                        out["anchors"][scores.text(point)] = self.text(label, f"{path}.anchors.{key}",
                                                                       required=True)
        elif kind == "levels":
            out["levels"] = self.levels(value.get("levels"), f"{path}.levels", item_code)
        return out

    def levels(self, value: Any, path: str, item_code: str | None) -> list[dict]:
        if not isinstance(value, list) or len(value) < 2:
            self.error(path, 'must list at least two levels, e.g. [{"value": 1, "label": "Unsatisfactory"}, ...]')
            return []
        out, values = [], set()
        for n, level in enumerate(value):
            where = f"{path}[{n}]"
            if not isinstance(level, dict):
                self.error(where, 'must be an object {"value": ..., "label": ...}')
                continue
            if not self.keys(level, where, ("value", "label"), ("code", "guidance")):
                continue
            number = self.integer(level["value"], f"{where}.value")
            if number is not None and number in values:
                self.error(f"{where}.value", f"{number} is the value of another level")
            values.add(number)
            code = self.code(level["code"], f"{where}.code") if "code" in level else f"{item_code}.{n + 1}"
            out.append({"code": code, "value": number, "label": self.text(level["label"], f"{where}.label",
                                                                           required=True),
                        "guidance": self.text(level.get("guidance"), f"{where}.guidance", required=False)})
        return out

    def item(self, entry: Any, path: str, dimensions: set[str]) -> dict | None:
        if not isinstance(entry, dict):
            self.error(path, "must be an object")
            return None
        if not self.keys(entry, path, ITEM_REQUIRED, ITEM_OPTIONAL):
            return None
        code = self.code(entry["code"], f"{path}.code")
        dimension = self.code(entry["dimension"], f"{path}.dimension")
        if dimension is not None and dimension not in dimensions:
            known = ", ".join(sorted(dimensions)) or "none yet"
            self.error(f"{path}.dimension", f'"{dimension}" is not a dimension code ({known})')
        return {"code": code, "dimension": dimension, "text": self.text(entry["text"], f"{path}.text", required=True),
                "guidance": self.text(entry.get("guidance"), f"{path}.guidance", required=False),
                "response": self.response(entry["response"], f"{path}.response", code)}


def judge_key(key: str) -> str:
    """A judge's answer key as it is compared: lower case, spaces, hyphens and underscores as one space."""
    return re.sub(r"[\s_-]+", " ", str(key)).strip().lower()


def _judge_keys(checker: _Checker, keys: dict, items: list[dict]) -> dict[str, str]:
    """Check ``judge_keys``: each a short text naming a rated item's code, no two alike once normalised."""
    rated = {item["code"] for item in items if (item["response"] or {}).get("type") in Item.SCORED_TYPES}
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, code in keys.items():
        path = f"$.judge_keys.{key}"
        normal = judge_key(key)
        if not normal or len(key) > JUDGE_KEY_MAX:
            checker.error(path, f"a judge's key is 1-{JUDGE_KEY_MAX} characters")
        elif not isinstance(code, str) or code not in rated:
            checker.error(path, f"must name a rated item's code ({', '.join(sorted(rated)) or 'none yet'}); "
                                f"got {code!r}")
        elif normal in seen or normal in {judge_key(c) for c in rated if c != code}:
            checker.error(path, f'is the same key as "{seen.get(normal, normal)}" (keys are compared without case, '
                                "spaces, hyphens and underscores)")
        else:
            seen[normal] = key
            out[key] = code
    return out


def check(data: Any) -> dict[str, Any]:
    """Validate and normalise an instrument; raise InstrumentError naming every wrong JSON path."""
    if not isinstance(data, dict):
        raise InstrumentError(["$: an instrument is a JSON object"])
    checker = _Checker(data.get("language", "en") if isinstance(data.get("language"), str) else "en")
    spec = _top_level(checker, data)
    judge_keys = data.get("judge_keys", {})
    if not isinstance(judge_keys, dict):
        checker.error("$.judge_keys", 'must be an object such as {"question 1": "comprehension"}')
        judge_keys = {}
    spec["dimensions"] = _dimensions(checker, data)
    spec["items"] = _items(checker, data, {dim["code"] for dim in spec["dimensions"] if dim["code"] is not None})
    used = {item["dimension"] for item in spec["items"]}
    for n, dim in enumerate(spec["dimensions"]):
        if dim["code"] is not None and dim["code"] not in used and spec["items"]:
            checker.error(f"$.dimensions[{n}]", f'no item belongs to dimension "{dim["code"]}"')
    spec["judge_keys"] = _judge_keys(checker, judge_keys, spec["items"])
    if spec["items"] and all((i["response"] or {}).get("type") == "text" for i in spec["items"]):
        checker.error("$.items", "needs at least one item rated with a value (binary, levels or scale); "
                                 "text items are free comments")
    if checker.errors:
        raise InstrumentError(checker.errors)
    return spec


def _top_level(checker: _Checker, data: dict) -> dict[str, Any]:
    """The instrument's own fields (all but its dimensions, items and judge keys), checked."""
    checker.keys(data, "$", TOP_REQUIRED, TOP_OPTIONAL)
    if "language" in data and data["language"] not in LANGUAGES:
        checker.error("$.language", f'must be "en" or "zh" (got {data["language"]!r})')
    if "target" in data and data["target"] not in TARGETS:
        checker.error("$.target", f'must be "dialogue" or "answer" (got {data["target"]!r})')
    slug = data.get("slug")
    if "slug" in data and (not isinstance(slug, str) or not SLUG_RE.match(slug) or len(slug) > 50):
        checker.error("$.slug", "must be 1-50 letters, digits, hyphens or underscores")
    elif slug in RESERVED_SLUGS:
        checker.error("$.slug", f'"{slug}" is reserved; choose another slug')
    for key in ("description", "source", "version_note"):
        if key in data and not isinstance(data[key], str):
            checker.error(f"$.{key}", "must be text")
    if "show_reference" in data and not isinstance(data["show_reference"], bool):
        checker.error("$.show_reference", "must be true or false")
    return {
        "slug": slug, "language": checker.language, "target": data.get("target"),
        "name": checker.text(data.get("name"), "$.name", required=True) if "name" in data else {"en": "", "zh": ""},
        "description": str(data.get("description") or ""), "source": str(data.get("source") or ""),
        "version_note": str(data.get("version_note") or ""), "show_reference": data.get("show_reference", True),
        "dimensions": [], "items": [], "judge_keys": {},
    }


def _dimensions(checker: _Checker, data: dict) -> list[dict]:
    """The dimensions, checked: each an object with a code no other dimension has, and a name."""
    dims = data.get("dimensions")
    if "dimensions" in data and (not isinstance(dims, list) or not dims):
        checker.error("$.dimensions", 'must list at least one dimension, e.g. [{"code": "1", "name": "..."}]')
        dims = []
    out: list[dict] = []
    codes: dict[str, str] = {}
    for n, dim in enumerate(dims or []):
        path = f"$.dimensions[{n}]"
        if not isinstance(dim, dict):
            checker.error(path, 'must be an object {"code": ..., "name": ...}')
            continue
        if not checker.keys(dim, path, ("code", "name")):
            continue
        code = checker.code(dim["code"], f"{path}.code")
        if code is not None and code in codes:
            checker.error(f"{path}.code", f'"{code}" is also {codes[code]}')
        elif code is not None:
            codes[code] = path
        out.append({"code": code, "name": checker.text(dim["name"], f"{path}.name", required=True)})
    return out


def _items(checker: _Checker, data: dict, dimensions: set[str]) -> list[dict]:
    """The items, checked (:meth:`_Checker.item`): no code used twice among the items and their levels."""
    items = data.get("items")
    if "items" in data and (not isinstance(items, list) or not items):
        checker.error("$.items", "must list at least one item")
        items = []
    out: list[dict] = []
    item_codes: dict[str, str] = {}
    for n, entry in enumerate(items or []):
        path = f"$.items[{n}]"
        item = checker.item(entry, path, dimensions)
        if item is None:
            continue
        out.append(item)
        own = [(item["code"], f"{path}.code")]
        own += [(lv["code"], f"{path}.response.levels[{k}]") for k, lv in
                enumerate((item["response"] or {}).get("levels", []))]
        for code, where in own:
            if code is None:
                continue
            if code in item_codes:
                checker.error(where, f'code "{code}" is also used at {item_codes[code]}')
            else:
                item_codes[code] = where
    return out


def read_file(path: str | Path) -> Any:
    """The JSON in ``path``; a file that is not JSON, or holds text the database cannot store (a NUL character, an
    unpaired surrogate such as ``"\\ud800"``, NaN), is an InstrumentError naming the JSON path."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InstrumentError(["$: the file is not UTF-8 text"]) from None
    except json.JSONDecodeError as exc:
        raise InstrumentError([f"$: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"]) from None
    except RecursionError:
        raise InstrumentError(["$: the JSON is nested too deeply"]) from None
    except ValueError as exc:  # e.g. a number of more than 4,300 digits
        raise InstrumentError([f"$: not valid JSON ({str(exc).split(':')[0]})"]) from None
    found = storable.find(data)
    if found:
        where, problem = found
        raise InstrumentError([f"{storable.dotted(('$', *where), first_index=0)}: {problem}"])
    return data


# ------------------------------------------------------------------------------------------------------ writing
def _create_item(version: ScaleVersion, dimension: Dimension, item: dict, order: int) -> int:
    """Create one checked item (and its levels) from ``order`` on; returns the last order used."""
    response = item["response"]
    created = Item.objects.create(
        version=version, dimension=dimension, code=item["code"], order=order, response_type=response["type"],
        text_en=item["text"]["en"], text_zh=item["text"]["zh"], guidance_en=item["guidance"]["en"],
        guidance_zh=item["guidance"]["zh"], scale_min=response["min"], scale_max=response["max"],
        scale_step=response.get("step"), anchors=response["anchors"])
    for level in response["levels"]:
        order += 1
        Item.objects.create(version=version, dimension=dimension, parent=created, code=level["code"], order=order,
                            response_type=Item.ResponseType.LEVEL, value=level["value"],
                            text_en=level["label"]["en"], text_zh=level["label"]["zh"],
                            guidance_en=level["guidance"]["en"], guidance_zh=level["guidance"]["zh"])
    return order


def _content(spec: dict) -> str:
    """What a version holds (dimensions and items), to tell an unchanged re-import."""
    return json.dumps([spec["dimensions"], spec["items"], spec.get("judge_keys") or {}], sort_keys=True,
                      ensure_ascii=False, default=str)


def _same_content(version: ScaleVersion, spec: dict) -> bool:
    try:
        return _content(check(export_instrument(version))) == _content(spec)
    except InstrumentError:  # an unfinished draft (built in the browser) is never the same content
        return False


@transaction.atomic
def import_instrument(data: Any, *, draft: bool = False, user=None, source: str = "") -> tuple[ScaleVersion, bool]:
    """Create a scale version from instrument JSON: a new scale, or the next version of the scale with that slug
    (``based_on`` its newest version). Published unless ``draft``. Returns (version, created): re-importing the
    content of the newest version creates nothing. Raises InstrumentError."""
    spec = check(data)
    scale = Scale.objects.filter(slug=spec["slug"]).first()  # the project's own, or a library scale
    if scale is None and slug_taken(spec["slug"]):
        raise InstrumentError([f'$.slug: "{spec["slug"]}" is taken (scale slugs are shared by every project on this '
                               "instance); give your instrument another slug"])
    latest = scale.latest_version() if scale else None
    if scale is not None:
        if scale.target != spec["target"]:
            raise InstrumentError([f'$.target: scale "{scale.slug}" rates {scale.get_target_display().lower()}; '
                                   f'a new version cannot rate "{spec["target"]}" (use another slug)'])
        own = scale.editable_in(scoping.active_project_id())
        if latest is not None and (own or latest.status != ScaleVersion.Status.DRAFT) and _same_content(latest, spec):
            return latest, False
        if not own:
            raise InstrumentError([f'$.slug: scale "{scale.slug}" belongs to another project (its published versions '
                                   "are in the library, read-only); give your instrument another slug"])
    else:
        name = spec["name"]
        scale = Scale.objects.create(
            slug=spec["slug"], name_en=name["en"] or name["zh"], name_zh=name["zh"], description=spec["description"],
            source=spec["source"], target=spec["target"], language=spec["language"],
            show_reference=spec["show_reference"], created_by=user)
    number = scales.next_version_number(scale)
    version = ScaleVersion.objects.create(
        scale=scale, number=number, based_on=latest, created_by=user, judge_keys=spec["judge_keys"],
        project_id=scale.project_id,
        note=spec["version_note"] or (f"Imported from {source}." if source else "Imported instrument."))
    dimensions = {}
    for order, dim in enumerate(spec["dimensions"], start=1):
        dimensions[dim["code"]] = Dimension.objects.create(version=version, code=dim["code"], order=order,
                                                           name_en=dim["name"]["en"], name_zh=dim["name"]["zh"])
    order = 0
    for item in spec["items"]:
        order = _create_item(version, dimensions[item["dimension"]], item, order + 1)
    AuditEvent.record(user, "scale_version.import", version, file=source, draft=draft)
    if not draft:
        try:
            scales.publish(version, user)
        except ValueError as exc:  # check() covers what publish checks; kept so that nothing slips through
            raise InstrumentError([f"$: {exc}"]) from None
        version.refresh_from_db()
    return version, True


def _plain(en: str, zh: str, language: str) -> str | dict[str, str]:
    """A text as the file writes it: a plain string when only the instrument's language has it."""
    other = zh if language == "en" else en
    own = en if language == "en" else zh
    return own if not other else {"en": en, "zh": zh}


def export_instrument(version: ScaleVersion) -> dict[str, Any]:
    """A version in the instrument format (what ``import_instrument`` reads)."""
    scale = version.scale
    language = scale.language
    items = list(version.items.select_related("dimension").order_by("order"))
    levels: dict[int, list[Item]] = {}
    for item in items:
        if item.parent_id:
            levels.setdefault(item.parent_id, []).append(item)
    out_items = []
    for item in items:
        if item.parent_id:
            continue
        entry: dict[str, Any] = {"code": item.code, "dimension": item.dimension.code,
                                 "text": _plain(item.text_en, item.text_zh, language)}
        if item.guidance_en or item.guidance_zh:
            entry["guidance"] = _plain(item.guidance_en, item.guidance_zh, language)
        response: dict[str, Any] = {"type": FILE_TYPE.get(item.response_type, item.response_type)}
        if item.response_type == Item.ResponseType.SCALE:
            response.update({"min": item.scale_min, "max": item.scale_max})
            if item.has_step:
                response["step"] = scores.normal(item.scale_step)
            if item.anchors:
                response["anchors"] = {key: _plain(label.get("en", ""), label.get("zh", ""), language)
                                       for key, label in sorted(item.anchors.items(), key=lambda kv: float(kv[0]))}
        elif item.response_type == Item.ResponseType.ORDINAL:
            response["levels"] = []
            for level in levels.get(item.pk, []):
                row: dict[str, Any] = {"value": level.value, "label": _plain(level.text_en, level.text_zh, language),
                                       "code": level.code}
                if level.guidance_en or level.guidance_zh:
                    row["guidance"] = _plain(level.guidance_en, level.guidance_zh, language)
                response["levels"].append(row)
        entry["response"] = response
        out_items.append(entry)
    data: dict[str, Any] = {
        "name": _plain(scale.name_en, scale.name_zh, language), "slug": scale.slug, "language": language,
        "target": scale.target, "show_reference": scale.show_reference,
    }
    if scale.description:
        data["description"] = scale.description
    if scale.source:
        data["source"] = scale.source
    data["version"] = version.number
    if version.note:
        data["version_note"] = version.note
    data["dimensions"] = [{"code": d.code, "name": _plain(d.name_en, d.name_zh, language)}
                          for d in version.dimensions.order_by("order")]
    data["items"] = out_items
    if version.judge_keys:
        data["judge_keys"] = dict(version.judge_keys)
    return data


def slug_taken(slug: str) -> bool:
    """Whether any project's scale has this slug: slugs are instance-wide (they name scales in URLs and in the
    library), so this looks across projects (a listed ``unscoped`` use) and tells only yes or no."""
    return Scale.unscoped.filter(slug=slug).exists()


# ------------------------------------------------------------------------------------------------ ready instruments
def shipped_path(slug: str) -> Path:
    return SHIPPED_DIR / SHIPPED[slug]


def shipped_available() -> list[dict[str, Any]]:
    """The ready instruments with their name, source and whether they are installed."""
    installed = set(Scale.objects.filter(slug__in=SHIPPED).values_list("slug", flat=True))
    out = []
    for slug in SHIPPED:
        data = read_file(shipped_path(slug))
        name = data["name"] if isinstance(data["name"], str) else data["name"].get("en", slug)
        out.append({"slug": slug, "name": name, "source": data.get("source", ""), "target": data["target"],
                    "items": len(data["items"]), "installed": slug in installed})
    return out


def install_shipped(slug: str, user=None) -> tuple[ScaleVersion, bool]:
    """Install a ready instrument (published); nothing happens when its scale exists already."""
    if slug not in SHIPPED:
        raise InstrumentError([f'$: there is no ready instrument "{slug}" ({", ".join(SHIPPED)})'])
    scale = Scale.objects.filter(slug=slug).first()
    if scale is not None:
        return scale.current_version(), False
    return import_instrument(read_file(shipped_path(slug)), user=user, source=SHIPPED[slug])


# ------------------------------------------------------------------------------------------- building in the browser
@transaction.atomic
def create_scale(*, slug: str, name_en: str, name_zh: str = "", language: str = "en", target: str = "dialogue",
                 show_reference: bool = True, description: str = "", user=None) -> ScaleVersion:
    """A new scale with an empty draft version 1, to which items are added one by one."""
    data = {"name": {"en": name_en, "zh": name_zh}, "slug": slug, "language": language, "target": target,
            "dimensions": [{"code": "x", "name": "x"}], "items": [{"code": "x", "dimension": "x", "text": "x",
                                                                   "response": {"type": "binary"}}]}
    try:
        spec = check(data)  # the same rules as a file (slug, language, target, name)
    except InstrumentError as exc:
        raise InstrumentError([e.replace("$.", "", 1) for e in exc.errors]) from None
    if slug_taken(slug):
        # Slugs name scales in URLs and in the library every project reads, so they are instance-wide; the message
        # says only that the slug is taken, never whose it is.
        raise InstrumentError([f'slug: "{slug}" is taken (scale slugs are shared by every project on this '
                               'instance); choose another'])
    scale = Scale.objects.create(slug=slug, name_en=spec["name"]["en"] or spec["name"]["zh"],
                                 name_zh=spec["name"]["zh"], language=language, target=target,
                                 show_reference=show_reference, description=description.strip(), created_by=user)
    version = ScaleVersion.objects.create(scale=scale, number=1, note="Built in the browser.", created_by=user)
    AuditEvent.record(user, "scale.create", scale, rates=target)
    return version


@transaction.atomic
def add_dimension(version: ScaleVersion, *, code: str, name_en: str, name_zh: str = "", user=None) -> Dimension:
    version.ensure_editable()
    checker = _Checker(version.scale.language)
    clean = checker.code(code, "code")
    name = checker.text({"en": name_en, "zh": name_zh}, "name", required=True)
    if clean is not None and version.dimensions.filter(code=clean).exists():
        checker.error("code", f'dimension "{clean}" exists already')
    if checker.errors:
        raise InstrumentError(checker.errors)
    order = (version.dimensions.order_by("-order").values_list("order", flat=True).first() or 0) + 1
    dimension = Dimension.objects.create(version=version, code=clean, order=order, name_en=name["en"],
                                         name_zh=name["zh"])
    AuditEvent.record(user, "scale_version.add_dimension", version, code=clean)
    return dimension


@transaction.atomic
def add_item(version: ScaleVersion, entry: dict[str, Any], user=None) -> Item:
    """Add one item (in the file's item format) at the end of its dimension in a draft version."""
    version.ensure_editable()
    checker = _Checker(version.scale.language)
    item = checker.item(entry, "item", set(version.dimensions.values_list("code", flat=True)))
    if item is not None:
        taken = set(version.items.values_list("code", flat=True))
        codes = [("item.code", item["code"])] + [(f"item.response.levels[{n}].code", lv["code"]) for n, lv in
                                                 enumerate((item["response"] or {}).get("levels", []))]
        for path, code in codes:
            if code in taken:
                checker.error(path, f'code "{code}" is already used in this version')
            taken.add(code)
    if checker.errors:
        raise InstrumentError(checker.errors)
    dimension = version.dimensions.get(code=item["dimension"])
    in_dimension = version.items.filter(dimension=dimension).order_by("-order").values_list("order", flat=True)
    after = in_dimension.first()
    if after is None:  # the dimension's first item: after the items of the dimensions before it
        after = (version.items.filter(dimension__order__lt=dimension.order).order_by("-order")
                 .values_list("order", flat=True).first() or 0)
    width = 1 + len(item["response"]["levels"])
    for later in version.items.filter(order__gt=after).order_by("-order"):
        Item.objects.filter(pk=later.pk).update(order=later.order + width)
    _create_item(version, dimension, item, after + 1)
    AuditEvent.record(user, "scale_version.add_item", version, code=item["code"], type=item["response"]["type"])
    return version.items.get(code=item["code"])


@transaction.atomic
def remove_item(item: Item, user=None) -> None:
    """Delete an item (and its levels) from a draft version."""
    version = item.version
    version.ensure_editable()
    code = item.code
    for level in item.levels.all():
        level.delete()
    item.delete()
    AuditEvent.record(user, "scale_version.remove_item", version, code=code)
