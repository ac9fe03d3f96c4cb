"""Scale, corpus and admin pages."""

import re

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import scales
from annotation.demo import load_demo
from annotation.models import Corpus, Dialogue, ScaleVersion
from projects.models import AuditEvent

ALL_CODES = [f"1.{i}" for i in range(1, 9)] + [f"2.{i}" for i in range(1, 9)] + [f"3.{i}" for i in range(1, 8)] + [
    "4.1", "4.2", "4.3"]


@pytest.mark.parametrize(("lang", "expected"), [
    ("en", ["Enquire about current medical history", "Unsatisfactory", "Humanistic care"]),
    ("zh", ["围绕患者主诉询问现病史", "不合格", "人文关怀", "恰当使用礼貌用语"]),
])
def test_scale_page_lists_26_items_in_each_language(client, physician, lang, expected):
    client.force_login(physician)
    html = client.get(reverse("scale-detail", args=["llm-mini-cex"]), {"lang": lang}).content.decode()
    codes = re.findall(r'data-code="([\d.]+)"', html)
    assert [c for c in codes if c != "4"] == ALL_CODES
    for text in expected:
        assert text in html
    # the page is in the reader's language (English here); the scale's words say their own language
    assert '<html lang="en">' in html
    assert f'data-dimension="1" lang="{lang}"' in html


def test_language_choice_is_remembered(client, physician):
    client.force_login(physician)
    client.get(reverse("scale-detail", args=["llm-mini-cex"]), {"lang": "zh"})
    assert "围绕患者主诉询问现病史" in client.get(reverse("scale-detail", args=["llm-mini-cex"])).content.decode()


def test_physician_sees_no_edit_controls(client, physician):
    client.force_login(physician)
    html = client.get(reverse("scale-detail", args=["llm-mini-cex"])).content.decode()
    assert "Create a new version" not in html and "hx-get" not in html


def test_coordinator_creates_edits_and_publishes_a_version(client, coordinator):
    client.force_login(coordinator)
    v1 = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    page = client.get(reverse("scale-version", args=["llm-mini-cex", 1])).content.decode()
    assert "cannot be changed" in page
    response = client.post(reverse("scale-new-version", args=["llm-mini-cex", 1]), {"note": "Round 2 wording"})
    assert response.status_code == 302 and response.url.endswith("/v2/")
    draft = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=2)
    item = draft.items.get(code="2.7")
    form = client.get(reverse("item-edit", args=[item.pk]), HTTP_HX_REQUEST="true").content.decode()
    assert 'name="text_zh"' in form
    saved = client.post(reverse("item-edit", args=[item.pk]), {
        "text_en": "Use polite words", "text_zh": "使用礼貌用语", "guidance_en": "hello, thank you",
        "guidance_zh": "您好、谢谢"}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200 and "Saved" in saved.content.decode()
    item.refresh_from_db()
    assert item.text_zh == "使用礼貌用语"
    assert v1.items.get(code="2.7").text_en == "Use polite words appropriately"
    empty = client.post(reverse("item-edit", args=[item.pk]), {"text_en": ""}, HTTP_HX_REQUEST="true")
    assert "English text is required" in empty.content.decode()
    client.post(reverse("scale-publish", args=["llm-mini-cex", 2]))
    draft.refresh_from_db()
    assert draft.status == "published" and draft.is_locked
    refused = client.post(reverse("item-edit", args=[item.pk]), {"text_en": "x"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and "locked" in refused.content.decode()
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"scale_version.create", "scale_version.publish"} <= actions


def test_new_version_without_reason_is_refused(client, coordinator):
    client.force_login(coordinator)
    client.post(reverse("scale-new-version", args=["llm-mini-cex", 1]), {"note": ""})
    assert not ScaleVersion.objects.filter(number=2).exists()


def test_physician_cannot_edit_items(client, physician, coordinator):
    draft = scales.new_version(ScaleVersion.objects.get(number=1), coordinator, "x")
    item = draft.items.get(code="1.1")
    client.force_login(physician)
    assert client.post(reverse("item-edit", args=[item.pk]), {"text_en": "hacked"}).status_code == 403
    item.refresh_from_db()
    assert item.text_en != "hacked"


def test_corpus_and_dialogue_pages_mark_the_demo(client, coordinator, demo_scope):
    load_demo()
    client.force_login(get_user_model().objects.get(username="coordinator"))  # the demo project's coordinator
    corpus = Corpus.objects.get(is_demo=True)
    html = client.get(reverse("corpus-detail", args=[corpus.pk])).content.decode()
    assert "Demo corpus" in html and "demo-en-01" in html and "demo-zh-01" in html
    dialogue = Dialogue.objects.get(external_id="demo-en-03")
    html = client.get(reverse("dialogue-detail", args=[dialogue.pk])).content.decode()
    assert "turn-doctor" in html and "turn-patient" in html and "turn-measurement" in html


def test_soft_deleted_corpus_is_hidden_and_audited(client, demo_scope):
    load_demo()
    coordinator = get_user_model().objects.get(username="coordinator")  # the demo project's coordinator
    corpus = Corpus.objects.get(is_demo=True)
    corpus.soft_delete(coordinator, "demo no longer needed")
    assert Corpus.objects.filter(pk=corpus.pk).exists()
    client.force_login(coordinator)
    assert client.get(reverse("corpus-detail", args=[corpus.pk])).status_code == 404
    event = AuditEvent.objects.get(action="delete")
    assert event.actor == coordinator and event.reason == "demo no longer needed"


def test_every_model_has_an_admin_page(client, admin_user):
    load_demo()
    client.force_login(admin_user)
    for app_label in ("core", "annotation", "scoring"):
        for model in apps.get_app_config(app_label).get_models():
            assert model in admin.site._registry, model
            url = reverse(f"admin:{app_label}_{model._meta.model_name}_changelist")
            assert client.get(url).status_code == 200, url
            obj = model.objects.first()
            if obj is not None:
                change = reverse(f"admin:{app_label}_{model._meta.model_name}_change", args=[obj.pk])
                assert client.get(change).status_code == 200, change
