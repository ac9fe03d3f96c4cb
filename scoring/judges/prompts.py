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

import jsonschema
from django.db import transaction

from annotation.dialogues import redacted
from annotation.models import Dialogue, Item, ScaleVersion
from scoring.judges.models import JudgeConfig, Prompt, PromptSet

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


# ---------------------------------------------------------------------------------------------------------------
# prompts
# ---------------------------------------------------------------------------------------------------------------
def item_question(item: Item) -> str:
    """The paper's per-item prompt ("Does the doctor ... in the following dialogue?"), asked after the dialogue
    so that providers can cache the shared prefix."""
    if item.response_type == Item.ResponseType.ORDINAL:
        levels = ", ".join(f"{lv.value} ({lv.text_en})" for lv in item.levels.order_by("order"))
        return (f"Item {item.code}: {item.text_en}. {item.guidance_en}\nHow do you rate the doctor in the dialogue "
                f"above? Answer with {levels} on the first line, then give one sentence of reason.")
    text = item.text_en[0].lower() + item.text_en[1:]
    return (f"Item {item.code}: Does the doctor {text} in the dialogue above? {item.guidance_en}\n"
            "Answer Yes or No on the first line, then give one sentence of reason.")


@transaction.atomic
def default_prompt_set(scale_version: ScaleVersion, user=None) -> PromptSet:
    """The default prompt set for a scale version (created once, from the items' text and guidance)."""
    existing = PromptSet.objects.filter(name=DEFAULT_PROMPT_SET, scale_version=scale_version).order_by(
        "-version").first()
    if existing:
        return existing
    number = (PromptSet.objects.filter(name=DEFAULT_PROMPT_SET).order_by("-version").values_list(
        "version", flat=True).first() or 0) + 1
    prompt_set = PromptSet.objects.create(
        name=DEFAULT_PROMPT_SET, version=number, scale_version=scale_version, system_prompt=SYSTEM_PROMPT,
        dialogue_template=DIALOGUE_TEMPLATE, per_dialogue_instruction=PER_DIALOGUE_INSTRUCTION, created_by=user,
        note=f"Written from the item text and guidance of {scale_version}.")
    Prompt.objects.bulk_create([Prompt(prompt_set=prompt_set, item=item, question=item_question(item))
                                for item in scale_version.rating_items().prefetch_related("levels")])
    return prompt_set


def render_dialogue(prompt_set: PromptSet, dialogue: Dialogue) -> str:
    self_report, turns = redacted(dialogue)
    lines = "\n".join(f"{ROLE_NAMES.get(t['role'], t['role'])}: {t['text']}" for t in turns)
    return prompt_set.dialogue_template.format(self_report=self_report, turns=lines)


def dialogue_schema(items: list[Item]) -> dict:
    """JSON schema of the per-dialogue answer: every item required, values restricted to its allowed values."""
    return {
        "type": "object",
        "properties": {item.code: {"type": "integer", "enum": item.allowed_values()} for item in items},
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
        return payload
    listing = "\n".join(f"{item.code}: {questions[item.pk]}" for item in items)
    payload["messages"] = [{"role": "system", "content": prompt_set.system_prompt},
                           {"role": "user", "content": f"{body}\n\n{prompt_set.per_dialogue_instruction}\n\n{listing}"}]
    if config.get("structured_output", True):
        payload["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "mini_cex_ratings", "strict": True, "schema": dialogue_schema(items)}}
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


def parse_item(content: str, item: Item) -> tuple[int | None, str]:
    """Strict verdict on the first line: Yes/No (binary) or one allowed level (ordinal); the rest is the reason."""
    text = (content or "").strip()
    first, _, rest = text.partition("\n")
    rationale = rest.strip() or first
    if item.response_type == Item.ResponseType.BINARY:
        if YES.match(first):
            return 1, rationale
        if NO.match(first):
            return 0, rationale
        return None, text
    match = re.match(r"^\W*([0-9]+)\b", first)
    if match and int(match.group(1)) in item.allowed_values():
        return int(match.group(1)), rationale
    return None, text


def parse_dialogue(content: str, items: list[Item]) -> dict[str, int] | None:
    """The per-dialogue JSON answer, validated against the schema (every item required); None if invalid."""
    text = (content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
        jsonschema.validate(data, dialogue_schema(items))
    except (json.JSONDecodeError, jsonschema.ValidationError):
        return None
    return {code: int(value) for code, value in data.items()}
