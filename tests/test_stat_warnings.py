"""The statistics' warnings (core/stats/messages.py): written in English as before for the API, the downloads and the
archive, recognised on a page in that English and said in the page's language with their numbers as written; a
share's counts likewise (core.stats.formatting.share)."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import polib
import pytest
from django.urls import reverse
from django.utils import translation
from django.utils.translation import to_locale

from core import stats
from core.stats import formatting, messages
from projects import catalogues
from scoring.reports.sentences import said
from scoring.templatetags import sentence_tags
from tests import pseudo_locale

CJK = re.compile(r"[\u4e00-\u9fff]")
ROOT = Path(__file__).resolve().parent.parent


def _sample(msgid: str) -> dict[str, str]:
    """Each placeholder of ``msgid`` with a value of its own: names cut short, a report word, numbers."""
    params = {}
    for i, name in enumerate(dict.fromkeys(re.findall(r"%\((\w+)\)s", msgid))):
        params[name] = {"names": "'R1', 'R2' (+3 more)", "units": "dialogue(s)", "value": "'yes'",
                        "rater": "R9", "reason": "x"}.get(name, f"{i + 17}")
    return params


@pytest.fixture(scope="module")
def chinese() -> dict[str, polib.POEntry]:
    entries = {}
    for path in catalogues.po_files():
        if path.name == "django.po":
            entries.update({e.msgid: e for e in polib.pofile(str(path)) if not e.obsolete and not e.msgctxt})
    return entries


@pytest.mark.parametrize("msgid", messages.WARNINGS)
def test_every_statistics_warning_is_in_chinese_and_round_trips(msgid, chinese):
    entry = chinese.get(msgid)
    assert entry is not None and entry.translated() and not entry.fuzzy, msgid
    params = _sample(msgid)
    english = messages.say(msgid, **params)
    assert "%(" not in english and messages.match(english) == (msgid, params)
    with translation.override("en"):
        assert sentence_tags.said_warning(english) == english
    with translation.override("zh-hans"):
        shown = sentence_tags.said_warning(english)
        assert CJK.search(shown) and shown != english
        assert shown == translation.gettext(msgid) % {
            **params, **({"names": "'R1', 'R2'（另有 3 个）"} if "names" in params else {}),
            **({"units": "对话"} if "units" in params else {})}
        for name, value in params.items():  # numbers, names and values as written
            if name not in ("names", "units"):
                assert value in shown
        assert sentence_tags.warnings_known([english])


def test_the_statistics_write_the_english_they_wrote_before():
    import numpy as np

    assert stats.krippendorff_alpha_detail(np.ones((2, 3)))["warnings"] == [
        "Krippendorff's alpha is undefined: no variation -- every pairable value is 1, so expected disagreement "
        "is 0 (0/0)."]
    assert stats.small_sample_warning(12, "percentile", "case(s)") == (
        "Only 12 case(s) are resampled (fewer than about 30): bootstrap intervals are rough and the percentile "
        "intervals shown tend to be too narrow; prefer BCa intervals.")
    summary = stats.bootstrap_summary(0.5, [0.5, None, 0.4] * 10, seed=1)
    assert summary["warnings"][:2] == ["10 of 30 bootstrap resample(s) gave an undefined statistic and were dropped.",
                                       "More than 10% of resamples were undefined; the interval may be biased."]
    flat = stats.fleiss_kappa_detail([[1, 0, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1]])
    assert flat["warnings"] == ["Zero-variance rater(s) '0' gave the same rating to every subject."]
    assert formatting.share(1102, 1104) == "1,102 of 1,104 (99.8%)" and formatting.share(3, 0) == "3 of 0"


def test_a_warning_not_known_stays_as_written_and_is_marked_english():
    with translation.override("zh-hans"):
        assert sentence_tags.said_warning("A warning no one knows.") == "A warning no one knows."
        assert not sentence_tags.warnings_known(["No scores.", "A warning no one knows."])
        assert sentence_tags.warnings_known(["No scores."])


def test_a_share_is_said_in_the_pages_language_with_its_numbers():
    text = formatting.share(1102, 1104)
    with translation.override("en"):
        assert sentence_tags.said_share(text) == text
    with translation.override("zh-hans"):
        assert sentence_tags.said_share(text) == "1,102/1,104（99.8%）"
        assert sentence_tags.said_share(formatting.share(3, 0)) == "3/0"
        assert sentence_tags.said_share("not a share") == "not a share"
        # a stored sentence whose share was written in English (a judge report's prevalence reason)
        stored = said("the most frequent answer, %(answer)s, is %(share)s of labels", answer="1",
                      share=text).stored()
        shown = sentence_tags.in_language(stored)
        assert "1,102/1,104（99.8%）" in shown and " of " not in shown


# --- the agreement report page with undefined and doubtful figures ---------------------------------------------------
@pytest.fixture
def in_pseudo_locale(settings, tmp_path):
    folder = pseudo_locale.write_catalogue([*pseudo_locale.django_catalogues(), *catalogues.po_files()], tmp_path,
                                           to_locale(pseudo_locale.CODE))
    settings.LANGUAGES = [*settings.LANGUAGES, (pseudo_locale.CODE, "Pseudo")]
    settings.LOCALE_PATHS = [folder, *settings.LOCALE_PATHS]
    return pseudo_locale.CODE


def _database_texts() -> list[str]:
    from django.apps import apps
    from django.db import models

    values: set[str] = set()

    def walk(value):
        if isinstance(value, str):
            values.add(value)
        elif isinstance(value, dict):
            for part in [*value.keys(), *value.values()]:
                walk(part)
        elif isinstance(value, list):
            for part in value:
                walk(part)

    for model in apps.get_models():
        fields = [f.attname for f in model._meta.concrete_fields
                  if isinstance(f, models.CharField | models.TextField) and not f.choices]
        if fields and model._meta.app_label in {"auth", "projects", "annotation"}:
            for row in model._base_manager.values_list(*fields):
                for value in row:
                    walk(value)
    return sorted((v for v in values if v.strip()), key=len, reverse=True)


def _rate(campaign, rng: random.Random) -> None:
    """Rater 0 answers at random, rater 1 always the lowest value; the others mostly a dialogue's true answer; item
    1.1 has the same answer on every dialogue but one, item 1.2 the same on every one."""
    from annotation import labels
    from annotation.models import Assignment
    from tests.factories import rating_items

    items = rating_items(campaign)
    raters = sorted({a.rater_id for a in Assignment.objects.filter(campaign=campaign)})
    truth: dict = {}
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater").order_by("pk"):
        who = raters.index(assignment.rater_id)
        for item in items:
            values = item.allowed_values()
            key = (assignment.dialogue_id, item.pk)
            truth.setdefault(key, rng.choice(values))
            if item.code == "1.1":
                value = values[0] if assignment.dialogue_id == min(d for d, _ in truth) else values[-1]
            elif item.code == "1.2":
                value = values[-1]
            elif who == 0:
                value = rng.choice(values)
            elif who == 1:
                value = values[0]
            else:
                value = truth[key] if rng.random() < 0.85 else rng.choice(values)
            labels.save_label(assignment, item.pk, value, assignment.rater)
        labels.submit(assignment, assignment.rater)


def test_a_report_with_undefined_and_doubtful_figures_speaks_the_pages_language(client, make_user, in_pseudo_locale):
    from core.jobs import services as jobs
    from core.jobs.models import Job
    from tests.factories import campaign_with

    raters = [make_user(f"rater{i}", "physician") for i in range(4)]
    analyst = make_user("reader", "analyst")
    campaign = campaign_with(raters, n=12, overlap=3, name="Doubtful")
    _rate(campaign, random.Random(3))
    client.force_login(analyst)
    url = reverse("campaign-report", args=[campaign.pk])
    client.get(url)
    for job in Job.unscoped.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk,
                                  status=Job.Status.QUEUED):
        Job.unscoped.filter(pk=job.pk).update(params={k: v for k, v in job.params.items() if k != "not_before"})
        jobs.execute(job.pk)
    stored = Job.unscoped.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk)
    from django.conf import settings

    client.cookies[settings.LANGUAGE_COOKIE_NAME] = in_pseudo_locale
    body = client.get(url).content.decode()
    assert 'id="agreement"' in body, list(stored.values_list("status", "error"))
    # the figures this campaign makes doubtful or undefined are there, with the statistics' reasons, in the page's
    # language
    starts = {m: re.split(r"%\(\w+\)s", m.replace("%%", "%"))[0] for m in messages.WARNINGS}
    shown = [m for m, start in starts.items() if len(start) > 15 and pseudo_locale.OPEN + html.escape(start) in body]
    assert len(shown) >= 3 and any("is undefined" in m for m in shown), shown
    problems = pseudo_locale.untranslated(body, _database_texts())
    assert not problems, "text outside gettext:\n" + "\n".join(problems)
    # nothing is exempt from the check but the methods (another part says them in the page's language)
    methods = body.index('id="methods"')
    assert "data-source-language" not in body[:methods]

    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    chinese = client.get(url).content.decode()
    english = [m for m in messages.WARNINGS if len(m) > 30]
    fragments = {re.split(r"%\(\w+\)s", m.replace("%%", "%"))[0][:30] for m in english}
    assert not [f for f in fragments if len(f) > 12 and f in chinese[:chinese.index('id="methods"')]]
    with translation.override("zh-hans"):
        for msgid in shown:
            start = re.split(r"%\(\w+\)s", translation.gettext(msgid).replace("%%", "%"))[0][:12]
            assert html.escape(start) in chinese, msgid
