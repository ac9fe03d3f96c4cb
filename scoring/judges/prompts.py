"""Judge prompts and answer parsing: the default prompt set of a scale version, the chat-completion request of one
unit (one item, or every item of a dialogue), and the parsing of the answer into item values.

The work engine (scoring.judges.runs) calls ``build_payload(config, prompt_set, dialogue, items, questions)``,
``parse_item(content, item)``, ``parse_dialogue(content, items)`` and ``p_yes(response)``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.db import transaction

from annotation import scores
from annotation.dialogues import redacted
from annotation.instruments import judge_key
from annotation.models import Dialogue, Item, ScaleVersion
from projects.scoping import runs_in_project
from scoring.judges.models import JudgeConfig, Prompt, PromptSet
from scoring.llm.slots import fill

DEFAULT_PROMPT_SET = "Mini-CEX judge (default)"
SYSTEM_PROMPT = (
    "You are an experienced physician assessing a doctor's performance in a doctor-patient consultation with the "
    "LLM-specific Mini-CEX. Judge only what the dialogue shows. Answer exactly in the format asked."
)
DIALOGUE_TEMPLATE = "The patient's self-report:\n{self_report}\n\nThe doctor-patient dialogue:\n{turns}"
PER_DIALOGUE_INSTRUCTION = (
    "Rate the doctor in the dialogue above on every item below. For items with answer 1/0, give 1 if the doctor "
    "did it (or it is met) and 0 if not; for item 4 give 1 (Unsatisfactory), 2 (Satisfactory) or 3 (Excellent). "
    "Return one JSON object whose keys are the item codes."
)
ROLE_NAMES = {"doctor": "Doctor", "patient": "Patient", "measurement": "Measurement"}
YES = re.compile(r"^\W*(yes|是)\b", re.IGNORECASE)
NO = re.compile(r"^\W*(no|否)\b", re.IGNORECASE)
LEVEL_NUMBER = re.compile(r"^\W*([0-9]+)\b")
# A number (possibly negative, possibly with decimals: "4.5", "4,5") first on the line; whether it is a point of the
# item's scale is checked against the item's grid ("4.5" is a point of a 0-5 scale in steps of 0.5 only).
SCALE_POINT = re.compile(r"^\W*?(-?[0-9]+(?:[.,][0-9]+)?)\b(?![.,][0-9])")
# A fenced block (```json ... ``` or ``` ... ```) anywhere in an answer.
FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
BINARY_WORDS = {"yes": 1, "true": 1, "是": 1, "no": 0, "false": 0, "否": 0}

MINI_CEX_SLUG = "llm-mini-cex"
# Other instruments rating dialogues: the Mini-CEX's prompts with the scale's name and a generic instruction.
GENERIC_SYSTEM_PROMPT = (
    "You are an experienced physician assessing a doctor's performance in a doctor-patient consultation with the "
    "{scale}. Judge only what the dialogue shows. Answer exactly in the format asked."
)
GENERIC_PER_DIALOGUE_INSTRUCTION = (
    "Rate the doctor in the dialogue above on every item below, each as its question asks, but give all answers "
    "in one JSON object whose keys are the item codes: 1 for Yes and 0 for No, a level's number, or a whole "
    "number within the item's range."
)
# Instruments rating answers to questions: the shape of HIVMedQA's MedGPT prompt (Cardenal-Antolin et al., supplementary
# section 4): a senior clinician compares the answer with the reference (target) answer, criterion by criterion,
# each with its benchmarks and range, and returns one JSON object for all criteria.
ANSWER_SYSTEM_PROMPT = (
    "Act as a senior clinician. Your role is to critically evaluate an answer to a medical question and, when a "
    "reference (target) answer is provided, to compare the answer with it. You must assess the answer strictly "
    "according to the evaluation criteria and base every score on specific evidence in the answer. Precision and "
    "accountability are essential: no ambiguity or unsupported assumptions are allowed. Answer exactly in the "
    "format asked."
)
ANSWER_TEMPLATE = "The question:\n{question}\n\n{reference_block}The answer to evaluate:\n{answer}"
REFERENCE_BLOCK = "The reference (target) answer:\n{reference}\n\n"
ANSWER_PER_DIALOGUE_INSTRUCTION = (
    "Evaluation criteria. Score the answer above on each criterion below, within the range given for it and "
    "following its benchmarks. Return one JSON object whose keys are the criterion codes and whose values are "
    "the scores."
)


# ---------------------------------------------------------------------------------------------------------------
# prompts
# ---------------------------------------------------------------------------------------------------------------
def _anchors(item: Item) -> str:
    """ "0 = lowest, 5 = highest" from a scale item's anchor labels ("" without anchors)."""
    points = [(scores.parse(key), item.anchor_label(scores.parse(key))) for key in (item.anchors or {})]
    return ", ".join(f"{scores.text(value)} = {label}" for value, label in sorted(points) if label)


def _scale_range(item: Item) -> str:
    anchors = _anchors(item)
    points = (f"a number from {item.scale_min} to {item.scale_max} in steps of {item.step_text}" if item.has_step
              else f"a whole number from {item.scale_min} to {item.scale_max}")
    return points + (f" ({anchors})" if anchors else "")


def _levels(item: Item) -> str:
    return ", ".join(f"{lv.value} ({lv.text('en')})" for lv in sorted(item.levels.all(), key=lambda lv: lv.order))


def item_question(item: Item, target: str = "dialogue") -> str:
    """The per-item prompt, asked after the dialogue (or answer) so that providers can cache the shared prefix.
    Dialogues: the paper's "Does the doctor ... in the dialogue above?"; answers: one criterion of the rubric."""
    text, guidance = item.text("en"), item.guidance("en")
    kind = item.response_type
    if target == "answer":
        head = f"Criterion {item.code}: {text}. {guidance}".rstrip() + "\n"
        if kind == Item.ResponseType.BINARY:
            return head + "Does the answer above meet this criterion? Answer Yes or No on the first line, then give " \
                          "one sentence of reason."
        scoring = _levels(item) if kind == Item.ResponseType.ORDINAL else _scale_range(item)
        return head + f"Score the answer above on this criterion. Answer with {scoring} on the first line, then " \
                      "give one sentence of reason."
    if kind == Item.ResponseType.ORDINAL:
        return (f"Item {item.code}: {text}. {guidance}\nHow do you rate the doctor in the dialogue "
                f"above? Answer with {_levels(item)} on the first line, then give one sentence of reason.")
    if kind == Item.ResponseType.SCALE:
        return (f"Item {item.code}: {text}. {guidance}".rstrip() + "\nHow do you rate the doctor in the dialogue "
                f"above on this item? Answer with {_scale_range(item)} on the first line, then give one sentence of "
                "reason.")
    text = text[0].lower() + text[1:]
    return (f"Item {item.code}: Does the doctor {text} in the dialogue above? {guidance}\n"
            "Answer Yes or No on the first line, then give one sentence of reason.")


def default_prompt_set_name(scale_version: ScaleVersion) -> str:
    scale = scale_version.scale
    return DEFAULT_PROMPT_SET if scale.slug == MINI_CEX_SLUG else f"{scale.name_en} judge (default)"[:120]


@runs_in_project
@transaction.atomic
def default_prompt_set(scale_version: ScaleVersion, user=None, *, project=None) -> PromptSet:
    """The default prompt set for a scale version in ``project`` (default: the active scope's), created once per
    project from the items' text, guidance and ranges: the Mini-CEX judge of the paper, the same shape for other
    instruments on dialogues, and HIVMedQA's rubric shape for instruments on answers."""
    project_id = project
    name = default_prompt_set_name(scale_version)
    mine = PromptSet.objects.filter(project_id=project_id)
    existing = mine.filter(name=name, scale_version=scale_version).order_by("-version").first()
    if existing:
        return existing
    number = (mine.filter(name=name).order_by("-version").values_list(
        "version", flat=True).first() or 0) + 1
    scale = scale_version.scale
    if scale.target == "answer":
        texts = (ANSWER_SYSTEM_PROMPT, ANSWER_TEMPLATE, ANSWER_PER_DIALOGUE_INSTRUCTION)
    elif scale.slug == MINI_CEX_SLUG:
        texts = (SYSTEM_PROMPT, DIALOGUE_TEMPLATE, PER_DIALOGUE_INSTRUCTION)
    else:
        texts = (GENERIC_SYSTEM_PROMPT.format(scale=scale.name_en), DIALOGUE_TEMPLATE,
                 GENERIC_PER_DIALOGUE_INSTRUCTION)
    prompt_set = PromptSet.objects.create(
        project_id=project_id, name=name, version=number, scale_version=scale_version, system_prompt=texts[0],
        dialogue_template=texts[1],
        per_dialogue_instruction=texts[2], created_by=user,
        note=f"Written from the item text and guidance of {scale_version}.")
    Prompt.objects.bulk_create([Prompt(prompt_set=prompt_set, item=item, question=item_question(item, scale.target))
                                for item in scale_version.rating_items().prefetch_related("levels")])
    return prompt_set


def ensure_default_prompt_sets(user=None, *, project=None) -> list[PromptSet]:
    """The default prompt set of the newest published version of every scale (created where missing) in
    ``project`` (default: the working project), so that a judge can be configured for any instrument."""
    out = []
    for scale_id in ScaleVersion.objects.filter(status="published").values_list("scale_id", flat=True).distinct():
        version = (ScaleVersion.objects.filter(scale_id=scale_id, status="published").select_related("scale")
                   .order_by("-number").first())
        if version.rating_items().exists():
            out.append(default_prompt_set(version, user, project=project))
    return out


def render_dialogue(prompt_set: PromptSet, dialogue: Dialogue) -> str:
    """The dialogue (or question-answer item) as the prompt set's template shows it, redactions applied. Templates
    may use {self_report} and {turns}; for answers also {question}, {answer}, {reference} and {reference_block}
    (the reference answer with its heading, or nothing when the item has none)."""
    self_report, turns = redacted(dialogue)
    lines = "\n".join(f"{ROLE_NAMES.get(t['role'], t['role'])}: {t['text']}" for t in turns)
    parts = {role: "" for role in Dialogue.QA_ROLES}
    if dialogue.is_answer:
        parts.update({t["role"]: t["text"] for t in turns if t.get("role") in parts})
    reference_block = REFERENCE_BLOCK.format(reference=parts["reference"]) if parts["reference"] else ""
    return fill(prompt_set.dialogue_template, self_report=self_report, turns=lines, reference_block=reference_block,
                                               **parts)


def criterion(n: int, item: Item) -> str:
    """One criterion of an answer rubric in the per-dialogue prompt: its text, range and benchmarks."""
    if item.response_type == Item.ResponseType.BINARY:
        scoring = "1 if met, 0 if not"
    elif item.response_type == Item.ResponseType.ORDINAL:
        scoring = _levels(item)
    else:
        scoring = _scale_range(item)
    guidance = item.guidance("en")
    return f"{n}. {item.code}: {item.text('en')}. Score: {scoring}." + (f"\n{guidance}" if guidance else "")


def dialogue_schema(items: list[Item]) -> dict:
    """JSON schema of the per-dialogue answer: every item required, values restricted to its allowed values."""
    return {
        "type": "object",
        "properties": {item.code: {"type": "number" if item.has_step else "integer", "enum": item.allowed_values()}
                       for item in items},
        "required": [item.code for item in items],
        "additionalProperties": False,
    }


def build_payload(config: dict, prompt_set: PromptSet, dialogue: Dialogue, items: list[Item],
                  questions: dict[int, str]) -> dict:
    """The chat-completion request for one unit: one item (per-item mode) or all items (per-dialogue)."""
    body = render_dialogue(prompt_set, dialogue)
    payload: dict[str, Any] = {"model": config["model"], "temperature": config["temperature"],
                               "max_tokens": config["max_tokens"]}
    if config.get("seed") is not None:
        payload["seed"] = config["seed"]
    if config["mode"] == JudgeConfig.Mode.PER_ITEM:
        question = questions[items[0].pk]
        payload["messages"] = [{"role": "system", "content": prompt_set.system_prompt},
                               {"role": "user", "content": f"{body}\n\n{question}"}]
        if config.get("request_logprobs"):
            payload["logprobs"] = True
            payload["top_logprobs"] = 5
        if config.get("draws", 1) > 1:  # self-consistency: k answers in the one request, at the draw temperature
            payload["n"] = int(config["draws"])
            payload["temperature"] = config.get("draw_temperature", 1.0)
        return payload
    if dialogue.is_answer:  # HIVMedQA's shape: the criteria with their ranges and benchmarks
        listing = "\n\n".join(criterion(n, item) for n, item in enumerate(items, start=1))
    else:
        listing = "\n".join(f"{item.code}: {questions[item.pk]}" for item in items)
    payload["messages"] = [{"role": "system", "content": prompt_set.system_prompt},
                           {"role": "user", "content": f"{body}\n\n{prompt_set.per_dialogue_instruction}\n\n{listing}"}]
    if config.get("structured_output", True):
        payload["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "answer_ratings" if dialogue.is_answer else "mini_cex_ratings", "strict": True,
            "schema": dialogue_schema(items)}}
    return payload


# ---------------------------------------------------------------------------------------------------------------
# parsing: an answer that cannot be parsed is unscored (with the raw text), never 0
# ---------------------------------------------------------------------------------------------------------------
def p_yes(response: dict | None) -> float | None:
    """P(yes) from the first token's top logprobs, normalised over the yes/no alternatives."""
    try:
        first = response["choices"][0]["logprobs"]["content"][0]
    except (TypeError, KeyError, IndexError):
        return None
    yes = no = None
    for alt in first.get("top_logprobs") or []:
        token = str(alt.get("token", "")).strip().lower()
        if token in ("yes", "是") and yes is None:
            yes = math.exp(alt["logprob"])
        elif token in ("no", "否") and no is None:
            no = math.exp(alt["logprob"])
    if yes is None and no is None:
        return None
    yes, no = yes or 0.0, no or 0.0
    return yes / (yes + no) if yes + no > 0 else None


def first_token_distribution(response: dict | None) -> dict[str, float]:
    """The first token's top alternatives as probabilities, normalised over those returned ({} without logprobs)."""
    try:
        first = response["choices"][0]["logprobs"]["content"][0]
    except (TypeError, KeyError, IndexError):
        return {}
    out: dict[str, float] = {}
    for alt in first.get("top_logprobs") or [first]:
        token = str(alt.get("token", "")).strip().lower()
        if token and token not in out and isinstance(alt.get("logprob"), int | float):
            out[token] = math.exp(alt["logprob"])
    total = sum(out.values())
    return {token: p / total for token, p in out.items()} if total > 0 else {}


def answer_uncertainty(response: dict | None, item: Item, value: float | None) -> float | None:
    """The judge's expected error size on its answer, from the first token's log-probabilities: the root mean square
    distance of the item's values the endpoint weighed from the value given (a binary answer: the square root of the
    probability that the other answer is right). None when the endpoint returned no usable log-probabilities."""
    if value is None:
        return None
    if item.response_type == Item.ResponseType.BINARY:
        probability = p_yes(response)
        if probability is None:
            return None
        return math.sqrt(1.0 - probability if value == 1 else probability)
    allowed = {float(v) for v in item.allowed_values()}
    weights: dict[float, float] = {}
    for token, p in first_token_distribution(response).items():
        number = _number(token)
        if number is not None and float(number) in allowed:
            weights[float(number)] = weights.get(float(number), 0.0) + p
    total = sum(weights.values())
    if total <= 0 or float(value) not in weights:
        return None
    return math.sqrt(sum(p * (v - float(value)) ** 2 for v, p in weights.items()) / total)


def draws_snapshot(config: JudgeConfig) -> dict[str, Any]:
    """What a run keeps of the configuration's repeated draws (self-consistency); one draw in per-dialogue mode."""
    per_item = config.mode == JudgeConfig.Mode.PER_ITEM
    return {"draws": int(config.draws) if per_item else 1, "draw_temperature": float(config.draw_temperature)}


def draws_uncertainty(response: dict | None, item: Item, value: float | None) -> float | None:
    """The spread of the repeated answers of one request (self-consistency): the root mean square distance of every
    parsable choice's verdict from the value kept (the first choice's). None with fewer than two parsable choices."""
    if value is None:
        return None
    try:
        contents = [choice["message"]["content"] for choice in response["choices"]]
    except (TypeError, KeyError):
        return None
    values = [v for v, _ in (parse_item(text or "", item) for text in contents) if v is not None]
    if len(values) < 2:
        return None
    return math.sqrt(sum((float(v) - float(value)) ** 2 for v in values) / len(values))


def parse_item(content: str, item: Item) -> tuple[int | float | None, str]:
    """Strict verdict on the first line: Yes/No (binary), one allowed level (levels) or a point of the item's scale
    (a whole number, or e.g. 4.5 on a scale in steps of 0.5); the rest is the reason."""
    text = (content or "").strip()
    first, _, rest = text.partition("\n")
    rationale = rest.strip() or first
    if item.response_type == Item.ResponseType.BINARY:
        if YES.match(first):
            return 1, rationale
        if NO.match(first):
            return 0, rationale
        return None, text
    match = (SCALE_POINT if item.response_type == Item.ResponseType.SCALE else LEVEL_NUMBER).match(first)
    value = _number(match.group(1)) if match else None
    if value is not None and value in item.allowed_values():
        return value, rationale
    return None, text


def _number(text: str) -> int | float | None:
    try:
        return scores.parse(text)
    except ValueError:
        return None


def answer_json(content: str) -> Any:
    """The JSON in a judge's answer: a fenced block (```json ... ```), the whole text, or the first JSON object in
    it; None when there is none."""
    text = (content or "").strip()
    candidates = [block.strip() for block in FENCED.findall(text)] + [text]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            pass
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)][:50]:
        try:
            return decoder.raw_decode(text, start)[0]
        except (json.JSONDecodeError, RecursionError):
            continue
    return None


def item_value(raw: Any, item: Item) -> int | float | None:
    """A value from a judge's JSON answer on ``item``'s grid: a number, or a number given as text ("4", "4.5");
    for binary items also true/false and yes/no. None when it is not one of the item's values."""
    if isinstance(raw, bool):
        value: Any = int(raw) if item.response_type == Item.ResponseType.BINARY else None
    elif isinstance(raw, int | float):
        value = raw
    elif isinstance(raw, str):
        word = raw.strip().strip(".").lower()
        value = BINARY_WORDS.get(word) if item.response_type == Item.ResponseType.BINARY else None
        if value is None:
            value = _number(raw.strip())
    else:
        value = None
    try:
        value = scores.normal(value)
    except (TypeError, ValueError):
        return None
    return value if value is not None and value in item.allowed_values() else None


def answer_keys(items: list[Item], judge_keys: dict[str, str] | None = None) -> dict[str, Item]:
    """Normalised answer key -> item: every item's code, and the instrument's ``judge_keys`` (a judge's own keys,
    such as HIVMedQA's "question 1" for comprehension)."""
    by_code = {item.code: item for item in items}
    keys = {judge_key(code): item for code, item in by_code.items()}
    for key, code in (judge_keys or {}).items():
        if code in by_code:
            keys.setdefault(judge_key(key), by_code[code])
    return keys


def parse_answer(content: str, items: list[Item], judge_keys: dict[str, str] | None = None
                 ) -> tuple[dict[str, int | float] | None, str]:
    """A per-dialogue JSON answer -> ({item code: value} for every item it scores on the item's grid, the judge's
    reason); (None, "") when the answer holds no JSON object. Keys are the item codes or the instrument's
    ``judge_keys`` (compared without case, spaces, hyphens and underscores); other keys ("overall score",
    "reason") are not scores; a missing or invalid value leaves that item out (unscored)."""
    data = answer_json(content)
    if not isinstance(data, dict):
        return None, ""
    keys = answer_keys(items, judge_keys)
    out: dict[str, int | float] = {}
    reason = ""
    for key, raw in data.items():
        item = keys.get(judge_key(key))
        if item is None:
            if judge_key(key) in ("reason", "reasons", "rationale", "justification") and isinstance(raw, str):
                reason = raw.strip()
            continue
        if item.code in out:
            continue
        value = item_value(raw, item)
        if value is not None:
            out[item.code] = value
    return out, reason


def parse_dialogue(content: str, items: list[Item], judge_keys: dict[str, str] | None = None
                   ) -> dict[str, int | float] | None:
    """The items a per-dialogue JSON answer scores (see :func:`parse_answer`); None if it holds no JSON object."""
    return parse_answer(content, items, judge_keys)[0]
