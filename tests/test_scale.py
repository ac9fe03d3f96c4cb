"""The LLM-specific Mini-CEX v1 loaded by migration, and the version rules."""

import pytest
from django.core.exceptions import ValidationError

from annotation import scales
from annotation.models import Item, LockedVersionError, Scale, ScaleVersion

BINARY_CODES = [f"1.{i}" for i in range(1, 9)] + [f"2.{i}" for i in range(1, 9)] + [f"3.{i}" for i in range(1, 8)]


@pytest.fixture
def v1(db):
    return ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)


def test_v1_has_four_dimensions_and_26_secondary_items(v1):
    assert [d.code for d in v1.dimensions.order_by("order")] == ["1", "2", "3", "4"]
    secondary = list(v1.secondary_items().order_by("order").values_list("code", flat=True))
    assert secondary == BINARY_CODES + ["4.1", "4.2", "4.3"]
    assert len(secondary) == 26


def test_dialogue_rating_is_23_binary_items_plus_ordinal_item_4(v1):
    rating = list(v1.rating_items().order_by("order"))
    assert [i.code for i in rating] == BINARY_CODES + ["4"]
    assert all(i.response_type == Item.ResponseType.BINARY for i in rating[:23])
    overall = rating[-1]
    assert overall.response_type == Item.ResponseType.ORDINAL
    assert [(lv.code, lv.value, lv.text_en) for lv in overall.levels.order_by("order")] == [
        ("4.1", 1, "Unsatisfactory"), ("4.2", 2, "Satisfactory"), ("4.3", 3, "Excellent")]
    assert overall.allowed_values() == [1, 2, 3]
    assert rating[0].allowed_values() == [0, 1]


def test_every_item_is_bilingual_with_guidance(v1):
    for item in v1.items.all():
        assert item.text_en and item.text_zh, item.code
        if item.response_type == Item.ResponseType.BINARY:
            assert item.guidance_en and item.guidance_zh, item.code
    # Chinese wording from the bilingual edition of the paper (seeds/001, Table 2).
    assert v1.items.get(code="1.1").text_zh == "围绕患者主诉询问现病史"
    assert v1.items.get(code="4.2").text_zh == "合格"
    assert "2.7 mmol/L" in v1.items.get(code="1.7").guidance_en


def test_published_version_is_immutable(v1):
    item = v1.items.get(code="2.1")
    item.text_en = "Changed"
    with pytest.raises(LockedVersionError):
        item.save()
    with pytest.raises(LockedVersionError):
        item.delete()
    item.refresh_from_db()
    assert item.text_en.startswith("Show respect")


def test_editing_makes_a_new_draft_version(v1, coordinator):
    draft = scales.new_version(v1, coordinator, "Delphi round revisions")
    assert draft.number == 2 and draft.status == ScaleVersion.Status.DRAFT and not draft.is_locked
    assert draft.based_on == v1
    assert draft.items.count() == v1.items.count() == 27
    assert draft.secondary_items().count() == 26
    overall = draft.items.get(code="4")
    assert [lv.version_id for lv in overall.levels.all()] == [draft.pk] * 3
    item = draft.items.get(code="2.1")
    item.text_en = "Show respect and empathy"
    item.save()
    assert v1.items.get(code="2.1").text_en.startswith("Show respect, sensitivity")
    scales.publish(draft, coordinator)
    draft.refresh_from_db()
    assert draft.is_locked and draft.status == ScaleVersion.Status.PUBLISHED
    with pytest.raises(ValidationError):
        item.save()
    assert Scale.objects.get(slug="llm-mini-cex").current_version() == draft


def test_new_version_needs_a_reason(v1, coordinator):
    with pytest.raises(ValueError):
        scales.new_version(v1, coordinator, "  ")


def test_publish_refuses_a_broken_draft(v1, coordinator):
    draft = scales.new_version(v1, coordinator, "test")
    draft.items.filter(code="4.3").delete()
    draft.items.filter(code="4.2").delete()
    with pytest.raises(ValueError, match="fewer than two levels"):
        scales.publish(draft, coordinator)
    assert not ScaleVersion.objects.get(pk=draft.pk).is_locked


def test_lock_marks_first_use_only_once(v1, coordinator):
    draft = scales.new_version(v1, coordinator, "test")
    scales.lock(draft, "used by campaign A")
    first = draft.locked_at
    scales.lock(draft, "used by campaign B")
    assert draft.locked_at == first and draft.locked_reason == "used by campaign A"


def test_instrument_json_round_trips(v1):
    data = scales.instrument_json(v1)
    original = scales.read_instrument()
    assert [d["code"] for d in data["dimensions"]] == [d["code"] for d in original["dimensions"]]
    flat = [(i["code"], i["text_zh"]) for d in data["dimensions"] for i in d["items"]]
    assert flat == [(i["code"], i["text_zh"]) for d in original["dimensions"] for i in d["items"]]
