"""The physician's pages on phones and tablets, in Chromium with touch emulation
(``has_touch``, ``is_mobile``) at 390 x 844 and 768 x 1024 in both orientations: a dialogue rated, a comparison made
and a Delphi round answered by taps only; every control at least 44 x 44 CSS px, nothing wider than the screen,
nothing covered by another control or by the sticky bar; the offline outbox across a page reload (every answer stored
exactly once); keyboard shortcuts on a desk that leave typing alone; visible focus; reflow at 320 CSS px and 200 %
zoom; the site's icon.

One world for the module (a physician with a campaign, a preference study and a Delphi panel link), served by a live
server of the module's own (tests.conftest.shared_live_world)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qs

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import Error as PlaywrightError

from annotation import labels
from annotation.models import Assignment, Label, LabelChange
from tests.a11y import PHONE, TABLET_LANDSCAPE, TABLET_PORTRAIT, geometry_problems
from tests.conftest import ARTIFACTS, browser_page, shared_live_world, wait_js

PASSWORD = "a-long-password-1"
TOUCH = {"has_touch": True, "is_mobile": True}
SIZES = {"phone": PHONE, "phone-landscape": {"width": PHONE["height"], "height": PHONE["width"]},
         "tablet-portrait": TABLET_PORTRAIT, "tablet-landscape": TABLET_LANDSCAPE}


@dataclass
class World:
    url: str
    assignments: list  # the physician's four dialogues, in queue order
    tasks: list  # the physician's three comparisons, in queue order
    delphi_link: str  # the panel link the invitation e-mail carries (a path)
    delphi_offline_link: str  # a second panelist's link, answered offline
    study: object  # the Delphi study


def _build(url: str) -> World:
    from annotation import models as annotation_models
    from annotation.scales import load_instrument, read_instrument
    from delphi import services as delphi
    from projects.roles import assign_role
    from scoring.preference import services as preference
    from scoring.preference.models import PreferenceTask
    from tests.factories import campaign_with, mini_cex
    from tests.test_preference import answers_jsonl

    load_instrument(read_instrument(), annotation_models)
    users = get_user_model().objects
    doctor = users.create_user("touch_doc", password=PASSWORD, first_name="Dana", last_name="Touch")
    coordinator = users.create_user("touch_coord", password=PASSWORD)
    assign_role(doctor, "physician")
    assign_role(coordinator, "coordinator")
    campaign = campaign_with([doctor], n=4, overlap=1, name="Rounds on the ward",
                             instructions="Rate every item; the answers are saved as you tap.")
    study = preference.create_study(name="Answers compared", kind="answer", criteria="evaluation", overlap=1,
                                    seed=9, user=coordinator)
    preference.import_answers(study, answers_jsonl(1), coordinator)  # one question, three answers: three pairs
    preference.add_rater(study, doctor, added_by=coordinator)
    preference.open_study(study, coordinator)
    delphi_study = delphi.create_study(title="Mini-CEX Delphi on a phone", user=coordinator, version=mini_cex(),
                                       reminder_days=0)
    panelist, offline_panelist = delphi.invite(
        delphi_study, coordinator, text="Dr Expert <touch-expert@example.org>\nDr Train <train@example.org>")
    delphi.open_round(delphi_study.rounds.get(number=1), coordinator, notify=False)
    return World(url=url, assignments=list(Assignment.objects.filter(campaign=campaign).order_by("position", "id")),
                 tasks=list(PreferenceTask.objects.filter(study=study).order_by("position")),
                 delphi_link=reverse("delphi:panel-home", args=[delphi.make_token(panelist)]),
                 delphi_offline_link=reverse("delphi:panel-home", args=[delphi.make_token(offline_panelist)]),
                 study=delphi_study)


# the test database is created for the module, whose tests share its world (tests.conftest.shared_live_world)
pytestmark = [pytest.mark.django_db, pytest.mark.shared_live_world]


@pytest.fixture(autouse=True)
def _django_db_marker():
    """No transaction per test: the module's world is committed and shared (tests.conftest.shared_live_world)."""


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    with shared_live_world(django_db_blocker, _build) as built:
        yield built


def login(page) -> None:
    """Log in by tapping the fields and the button (typing the words, as an on-screen keyboard does)."""
    page.goto("/accounts/login/")
    touch = _touch(page)
    for label, text in (("Username", "touch_doc"), ("Password", PASSWORD)):
        field = page.get_by_label(label)
        (field.tap if touch else field.click)()
        field.fill(text)
    button = page.get_by_role("button", name="Log in")
    (button.tap if touch else button.click)()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def _touch(page) -> bool:
    return page.evaluate("matchMedia('(pointer: coarse)').matches")


def open_details(page) -> None:
    """Every comment box opened: their fields are controls too (the account menu of the top bar stays closed: open,
    it lies over the page as menus do)."""
    page.evaluate("document.querySelectorAll('main details').forEach(d => { d.open = true; })")


def head(page) -> str:
    return page.locator(".rate-head").inner_text()


def wait_saved(page, n: int) -> None:
    wait_js(page, f"document.querySelectorAll('fieldset.item .save-state[data-state=saved]').length >= {n}")


# Whether the n-th answer card of the page lies wholly inside the window.
IN_VIEW = """n => { const r = document.querySelectorAll('fieldset.item, form.q-item')[n].getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight; }"""


def tap_answer(fieldset, value: str) -> None:
    fieldset.locator(f"input[value='{value}'] + label.choice").tap()


def answer_value(item_type: str, k: int) -> str:
    """The answer the tests give to the k-th item: yes and no in turn, the middle level, the lowest scale point."""
    return {"binary": "1" if k % 2 == 0 else "0", "ordinal": "2"}.get(item_type, "")


@pytest.mark.browser
def test_a_dialogue_is_rated_by_taps_only_on_a_phone(world, browser):
    assignment = world.assignments[0]
    with browser_page(browser, world.url, viewport=PHONE, **TOUCH) as page:
        login(page)
        page.get_by_role("link", name="Start rating").tap()
        page.wait_for_url(f"**/rate/{assignment.pk}/")
        # the page is laid out for the phone's width (no zoomed-out desktop page) and reads at 16 px
        assert page.evaluate("window.innerWidth") == PHONE["width"]
        assert page.evaluate("parseFloat(getComputedStyle(document.querySelector('.turn p')).fontSize)") >= 16
        # the id is a line of its own, never "0 done (D-...)"; the status says "Not started" until the first answer
        text = head(page)
        assert re.search(r"Dialogue id D-[A-Z2-7]{8}", text) and not re.search(r"done \(", text), text
        assert page.locator("#work-status").inner_text() == "Not started"
        # touch only: no key hints, no list of shortcuts
        assert page.locator("label.choice kbd").first.is_hidden() and page.locator("details.shortcuts").is_hidden()
        items = page.locator("fieldset.item")
        expected = {}
        for k in range(items.count()):
            fieldset = items.nth(k)
            value = answer_value(fieldset.get_attribute("data-type"), k)
            assert value, fieldset.get_attribute("data-type")
            tap_answer(fieldset, value)
            expected[fieldset.get_attribute("data-code")] = int(value)
            if k + 1 < items.count():  # the tap brought the next item into view
                assert page.evaluate(IN_VIEW, k + 1), k
            if k == 0:
                wait_saved(page, 1)
                assert page.locator("#work-status").inner_text() == "In progress"
        wait_saved(page, len(expected))
        assert page.locator("#work-status").inner_text() == "All answered, not submitted yet"
        assert page.locator("#answered-count").inner_text() == str(len(expected))
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "touch-rating-phone.png"))
        submit = page.locator("#submit-btn")
        assert submit.is_enabled() and submit.inner_text() == "Submit"
        submit.tap()
        page.wait_for_url(f"**/rate/{world.assignments[1].pk}/")
    assignment.refresh_from_db()
    assert assignment.status == "submitted"
    assert dict(Label.objects.filter(assignment=assignment).values_list("item__code", "value")) == expected


@pytest.mark.browser
@pytest.mark.parametrize("size", SIZES)
def test_the_physicians_pages_fit_a_touch_screen(world, browser, size):
    viewport = SIZES[size]
    pages = {"rating page": f"/rate/{world.assignments[1].pk}/", "compare page": f"/compare/{world.tasks[1].pk}/",
             "home": "/", "Delphi questionnaire": world.delphi_link}
    found = {}
    with browser_page(browser, world.url, viewport=viewport, **TOUCH) as page:
        page.goto("/accounts/login/")
        found["login page"] = geometry_problems(page)
        login(page)
        for name, path in pages.items():
            page.goto(path)
            open_details(page)
            found[name] = geometry_problems(page)
            if size == "phone":
                page.screenshot(path=str(ARTIFACTS / f"touch-{name.replace(' ', '-')}-{size}.png"), full_page=True)
    problems = {name: p for name, p in found.items() if p}
    assert not problems, "\n".join(f"{name} at {size}:\n  " + "\n  ".join(p[:15]) for name, p in problems.items())


# The browser's first frame held back: a ResizeObserver that never reports, as none has before that frame.
NO_FRAME_YET = "window.ResizeObserver = class { observe() {} unobserve() {} disconnect() {} };"


@pytest.mark.browser
def test_the_sticky_bar_clears_the_answers_before_the_first_frame(world, browser):
    """At 1024 x 768 the rating page's bar takes two rows (118 px) in its column, more than the stylesheet's 5.5 rem
    guess: the scroll padding is measured as the page loads, not at the first frame (a loaded page checked before
    that frame had the last answers under the bar, as CI saw once)."""
    with browser_page(browser, world.url, viewport=TABLET_LANDSCAPE, **TOUCH) as page:
        login(page)
        page.add_init_script(NO_FRAME_YET)
        page.goto(f"/rate/{world.assignments[1].pk}/")
        bar, padding = page.evaluate("[document.querySelector('.actions').getBoundingClientRect().height,"
                                     " getComputedStyle(document.documentElement).scrollPaddingBottom]")
        assert bar > 5.5 * 16, "the bar is one row here: the case this test is about is gone"
        assert float(padding.removesuffix("px")) >= bar
        open_details(page)
        assert not [p for p in geometry_problems(page) if p.startswith("covered")]


@pytest.mark.browser
def test_a_comparison_by_taps_with_the_choices_in_view_at_768_px_height(world, browser):
    from scoring.preference.models import PreferenceAnswer

    task = world.tasks[0]
    for viewport in (TABLET_LANDSCAPE, {"width": 1366, "height": 768}):
        with browser_page(browser, world.url, viewport=viewport, **TOUCH) as page:
            login(page)
            page.goto(f"/compare/{task.pk}/")
            # scrolled to the two answers, every choice is on the screen too, above the sticky Submit bar
            page.evaluate("document.querySelector('.sides').scrollIntoView({block: 'start'})")
            hidden = page.evaluate("""() => Array.from(document.querySelectorAll('fieldset.criterion label.choice'))
                .filter(label => {
                    const r = label.getBoundingClientRect();
                    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    return r.top < 0 || r.bottom > window.innerHeight || !hit || !label.contains(hit);
                }).map(label => label.htmlFor)""")
            assert hidden == [], (viewport, hidden)
            assert page.locator("#submit-btn").is_visible()
    with browser_page(browser, world.url, viewport=TABLET_LANDSCAPE, **TOUCH) as page:
        login(page)
        page.goto(f"/compare/{task.pk}/")
        assert page.locator("#work-status").inner_text() == "Not started"
        choices = ["A", "tie", "B"]
        criteria = page.locator("fieldset.criterion")
        for k in range(criteria.count()):
            criteria.nth(k).locator(f"input[value='{choices[k]}'] + label.choice").tap()
        wait_js(page, "Array.from(document.querySelectorAll('fieldset.criterion .save-state'))"
                      ".every(s => s.dataset.state === 'saved')")
        assert page.locator("#work-status").inner_text() == "All answered, not submitted yet"
        page.locator("#submit-btn").tap()
        page.wait_for_url(lambda url: f"/compare/{task.pk}/" not in url)
    saved = dict(PreferenceAnswer.objects.filter(task=task).values_list("criterion__code", "choice"))
    assert sorted(saved.values()) == sorted(choices) and len(saved) == 3
    task.refresh_from_db()
    assert task.status == "submitted"


@pytest.mark.browser
def test_a_delphi_round_is_answered_from_its_link_by_taps(world, browser):
    from delphi.models import Response

    with browser_page(browser, world.url, viewport=PHONE, **TOUCH) as page:
        page.goto(world.delphi_link)  # the link of the invitation e-mail, opened on the phone: no login
        page.get_by_role("heading", name="Mini-CEX Delphi on a phone").wait_for()
        page.get_by_label("Working years").tap()
        page.get_by_label("Working years").fill("12")
        page.locator("label[for=fam-4]").tap()
        for basis in ("basis_practice", "basis_theory", "basis_literature", "basis_intuition"):
            page.locator(f"input[name={basis}][value=medium]").tap()
        wait_js(page, "document.querySelector('#profile-state').textContent.includes('Saved')")
        forms = page.locator("form.q-item")
        n = forms.count()
        for k in range(n):
            forms.nth(k).locator(f"label[for$='-{3 + k % 3}']").tap()
        wait_js(page, """() => Array.from(document.querySelectorAll('form.q-item .save-state'))
            .every(s => s.textContent.startsWith('Saved'))""", timeout=30)
        assert page.locator("[data-answered]").inner_text() == str(n)
        page.get_by_role("button", name=re.compile("I have finished")).tap()
        page.get_by_text("Your answers are complete").first.wait_for()
    part = world.study.rounds.get(number=1).participations.get(panelist__email="touch-expert@example.org")
    assert part.completed_at is not None and part.panelist.working_years == 12 and part.familiarity == 4
    importance = list(Response.objects.filter(participation=part).order_by("item__order")
                      .values_list("importance", flat=True))
    assert importance == [3 + k % 3 for k in range(n)] and n == 26


@pytest.mark.browser
def test_ten_answers_given_offline_survive_a_reload_and_are_stored_once(world, browser, monkeypatch):
    """On a train: the connection drops, the physician taps ten answers (kept in the page's outbox, "waiting to
    send"), reloads the page (the phone shows its offline error), the connection comes back and the page is opened
    again: the ten answers are sent from the outbox. Four of the saves reach the server but their answers are lost
    on the way back, so the page sends them again: each answer is stored once, with one history entry."""
    assignment = world.assignments[3]
    url = f"/rate/{assignment.pk}/"
    # Chromium's offline emulation covers a page, not a document its failed reload leaves behind: that document's
    # retries reached the server while the test was "offline" (CI sent 6 of the 10 answers that way). Real offline
    # lets nothing through, so while offline the server also answers every save it gets like an unreachable one.
    offline = {"on": False, "refused": 0}
    save_label = labels.save_label

    def save_unless_offline(*args, **kwargs):
        if offline["on"]:
            offline["refused"] += 1
            raise labels.LabelError("offline", status=503)
        return save_label(*args, **kwargs)

    monkeypatch.setattr(labels, "save_label", save_unless_offline)
    with browser_page(browser, world.url, viewport=PHONE, **TOUCH) as page:
        page.on("dialog", lambda dialog: dialog.accept())  # "leave the page?" while answers wait: yes
        login(page)
        page.goto(url)
        items = page.locator("fieldset.item")
        offline["on"] = True
        page.context.set_offline(True)
        expected = {}
        for k in range(10):
            tap_answer(items.nth(k), answer_value("binary", k))
            expected[items.nth(k).get_attribute("data-code")] = int(answer_value("binary", k))
        wait_js(page, "document.querySelectorAll('fieldset.item .save-state[data-state=waiting]').length === 10")
        assert items.first.locator(".save-state").inner_text() == "Waiting to send"
        banner = page.locator("#sync-banner")
        assert banner.is_visible() and banner.inner_text().startswith("10 answers waiting to send: you are offline")
        with pytest.raises(PlaywrightError, match="ERR_INTERNET_DISCONNECTED"):
            page.reload()
        # What the phone keeps (the session cookie, and the outbox in localStorage); the browser is then closed, and
        # with it anything the failed reload left behind.
        state = page.context.storage_state()
    offline["on"] = False
    assert not Label.objects.filter(assignment=assignment).exists()
    outbox = next(entry["value"] for origin in state["origins"] for entry in origin["localStorage"]
                  if entry["name"] == f"minicex-outbox-{assignment.pk}")
    assert len(json.loads(outbox)) == 10
    with browser_page(browser, world.url, viewport=PHONE, storage_state=state, **TOUCH) as page:
        page.on("dialog", lambda dialog: dialog.accept())
        items = page.locator("fieldset.item")
        banner = page.locator("#sync-banner")
        # the connection is back; the first four saves are stored but their answers never arrive
        lost = []
        sent = []

        def flaky(route):
            item = parse_qs(route.request.post_data)["item"][0]
            sent.append(item)
            if len(lost) < 4 and item not in lost:
                lost.append(item)
                route.fetch()  # the server stores it ...
                route.abort("connectionreset")  # ... and the page never hears back
            else:
                route.continue_()

        page.route("**/label/", flaky)
        page.goto(url)
        wait_js(page, "document.querySelectorAll('fieldset.item .save-state[data-state=saved]').length === 10",
                timeout=30)
        assert banner.is_hidden() and len(lost) == 4
        # the reopened page sent all ten from its outbox, and the four lost ones once more
        assert len(set(sent)) == 10 and all(sent.count(item) >= 2 for item in lost)
        page.unroute("**/label/")
        page.reload()
        for k in range(10):
            assert items.nth(k).locator(f"input[value='{answer_value('binary', k)}']").is_checked()
        assert page.evaluate(f"localStorage.getItem('minicex-outbox-{assignment.pk}')") in ("{}", None)
    labels_stored = Label.objects.filter(assignment=assignment)
    assert dict(labels_stored.values_list("item__code", "value")) == expected
    assert LabelChange.objects.filter(label__assignment=assignment).count() == 10  # one entry per answer


@pytest.mark.browser
def test_a_delphi_round_answered_offline_is_stored_once_after_a_reload(world, browser, monkeypatch):
    """The rating page's outbox on the Delphi questionnaire: five importance ratings tapped offline wait in the
    browser ("5 waiting", the header counting none of them), survive a failed reload, and are sent when the page is
    opened again online; two of those saves are stored but their answers lost on the way back, so they are sent
    again: every answer is stored once, with one history entry each."""
    from delphi import services as delphi
    from delphi.models import Response, ResponseChange

    offline = {"on": False}
    save_answer = delphi.save_answer

    def save_unless_offline(*args, **kwargs):  # see the rating page's offline test: real offline lets nothing in
        if offline["on"]:
            raise delphi.DelphiError("offline", status=503)
        return save_answer(*args, **kwargs)

    monkeypatch.setattr(delphi, "save_answer", save_unless_offline)
    part = world.study.rounds.get(number=1).participations.get(panelist__email="train@example.org")
    with browser_page(browser, world.url, viewport=PHONE, **TOUCH) as page:
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(world.delphi_offline_link)
        forms = page.locator("form.q-item")
        offline["on"] = True
        page.context.set_offline(True)
        for k in range(5):
            forms.nth(k).locator(f"label[for^='imp-'][for$='-{1 + k}']").tap()
            assert page.evaluate(IN_VIEW, k + 1), k  # the next item came into view
        wait_js(page, "document.querySelectorAll('form.q-item .save-state[data-state=waiting]').length === 5")
        assert page.locator("#answered-count").inner_text() == "0"
        assert page.locator("#waiting-count").inner_text() == "5 waiting"
        assert page.locator("#sync-banner").inner_text().startswith("5 answers waiting to send: you are offline")
        # the waiting state has a line of its own: it does not lie over the item's title
        title, state = (forms.first.locator(sel).bounding_box() for sel in ("legend", ".save-state"))
        assert state["y"] >= title["y"] + title["height"] or state["x"] >= title["x"] + title["width"]
        with pytest.raises(PlaywrightError, match="ERR_INTERNET_DISCONNECTED"):
            page.reload()
        state = page.context.storage_state()
    offline["on"] = False
    assert not Response.objects.filter(participation=part).exists()
    with browser_page(browser, world.url, viewport=PHONE, storage_state=state, **TOUCH) as page:
        lost = []

        def flaky(route):
            if len(lost) < 2 and route.request.url not in lost:
                lost.append(route.request.url)
                route.fetch()  # stored ...
                route.abort("connectionreset")  # ... and the answer never arrives
            else:
                route.continue_()

        page.route("**/items/*/", flaky)
        page.goto(world.delphi_offline_link)
        wait_js(page, "document.querySelectorAll('form.q-item .save-state[data-state=saved]').length === 5",
                timeout=30)
        assert page.locator("#answered-count").inner_text() == "5" and page.locator("#waiting-count").is_hidden()
        assert len(lost) == 2
    stored = dict(Response.objects.filter(participation=part).values_list("item__order", "importance"))
    assert sorted(stored.values()) == [1, 2, 3, 4, 5] and len(stored) == 5
    assert ResponseChange.objects.filter(response__participation=part).count() == 5


@pytest.mark.browser
def test_keyboard_shortcuts_stay_on_a_desk_and_leave_typing_alone(world, browser):
    assignment = world.assignments[2]
    with browser_page(browser, world.url, viewport={"width": 1366, "height": 900}) as page:
        login(page)
        page.goto(f"/rate/{assignment.pk}/")
        assert page.locator("label.choice kbd").first.is_visible()  # a mouse and a keyboard: the hints show
        items = page.locator("fieldset.item")
        page.keyboard.press("1")  # the first item, by its key
        wait_saved(page, 1)
        assert items.nth(0).locator("input[value='1']").is_checked()
        # typing in a comment (or with an on-screen keyboard) is typing, not shortcuts
        items.nth(1).locator("details.item-comment summary").click()
        box = items.nth(1).locator("textarea")
        box.click()
        page.keyboard.type("1 0 jkn")
        assert box.input_value() == "1 0 jkn" and page.url.endswith(f"/rate/{assignment.pk}/")
        assert items.nth(1).locator("input:checked").count() == 0
        # a key an input method is still composing (Chinese) is not a shortcut either; the same key is, otherwise
        page.locator("h1").click()
        composing = "document.body.dispatchEvent(new KeyboardEvent('keydown', {key: '1', bubbles: true, " \
                    "isComposing: %s}))"
        page.evaluate(composing % "true")
        assert items.nth(1).locator("input:checked").count() == 0
        page.evaluate(composing % "false")
        assert items.nth(1).locator("input[value='1']").is_checked()
        # the legend of a two-line title sits inside its card; each key hint inside its answer, never cut off
        for width in (1366, 1024):
            page.set_viewport_size({"width": width, "height": 900})
            outside = page.evaluate("""() => {
                const bad = [];
                for (const fieldset of document.querySelectorAll('fieldset.item')) {
                    const box = fieldset.getBoundingClientRect(), legend = fieldset.querySelector('legend');
                    const border = parseFloat(getComputedStyle(fieldset).borderTopWidth);
                    if (legend.getBoundingClientRect().top < box.top + border) bad.push(fieldset.dataset.code);
                }
                for (const kbd of document.querySelectorAll('label.choice kbd')) {
                    const r = kbd.getBoundingClientRect(), l = kbd.closest('label').getBoundingClientRect();
                    if (r.left < l.left || r.right > l.right || r.top < l.top || r.bottom > l.bottom)
                        bad.push(kbd.closest('label').htmlFor);
                }
                return bad;
            }""")
            assert outside == [], (width, outside)


FOCUS_CHECK = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    // a radio shown as its label: the label carries the ring
    const shown = el.matches('input[type=radio]') && el.labels && el.labels.length ? el.labels[0] : el;
    const style = getComputedStyle(shown);
    const ring = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2) || style.boxShadow !== 'none';
    const r = shown.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    const inView = r.bottom > 0 && r.top < window.innerHeight && hit && (shown.contains(hit) || hit.contains(shown));
    return {name: el.tagName + (el.id ? '#' + el.id : '') + ' ' + (el.textContent || '').trim().slice(0, 30),
            ring: ring, inView: Boolean(inView)};
}"""


@pytest.mark.browser
def test_the_focus_is_visible_and_never_hidden_under_the_bar(world, browser):
    pages = [f"/rate/{world.assignments[2].pk}/", f"/compare/{world.tasks[2].pk}/", world.delphi_link, "/"]
    problems = []
    with browser_page(browser, world.url, viewport={"width": 1024, "height": 768}) as page:
        login(page)
        for path in pages:
            page.goto(path)
            seen = 0
            for _ in range(120):
                page.keyboard.press("Tab")
                focus = page.evaluate(FOCUS_CHECK)
                if focus is None:
                    break
                seen += 1
                if not focus["ring"] or not focus["inView"]:
                    problems.append(f"{path}: {focus}")
            assert seen > 5, path
    assert not problems, "\n".join(problems[:20])


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [{"width": 320, "height": 640}, {"width": 683, "height": 384}],
                         ids=["reflow-320px", "zoom-200-percent"])
def test_the_physicians_pages_reflow_at_320_px_and_200_percent_zoom(world, browser, viewport):
    """WCAG 1.4.10: 320 CSS px wide without sideways scrolling; 1.4.4: 200 % zoom of a 1366 x 768 screen, which is
    a 683 x 384 CSS px viewport, with nothing cut off or overlapping."""
    pages = {"rating page": f"/rate/{world.assignments[2].pk}/", "compare page": f"/compare/{world.tasks[2].pk}/",
             "home": "/", "Delphi questionnaire": world.delphi_link}
    found = {}
    with browser_page(browser, world.url, viewport=viewport) as page:
        page.goto("/accounts/login/")
        found["login page"] = geometry_problems(page, targets=False)
        login(page)
        for name, path in pages.items():
            page.goto(path)
            open_details(page)
            found[name] = geometry_problems(page, targets=False)
    problems = {name: p for name, p in found.items() if p}
    assert not problems, "\n".join(f"{name}:\n  " + "\n  ".join(p[:15]) for name, p in problems.items())


@pytest.mark.browser
def test_every_page_has_the_sites_icon(world, browser):
    with browser_page(browser, world.url) as page:
        page.goto("/accounts/login/")
        for href in page.locator("link[rel~=icon], link[rel=apple-touch-icon]").evaluate_all(
                "links => links.map(l => l.href)"):
            assert page.request.get(href).ok, href
        icon = page.request.get("/favicon.ico")  # where browsers ask whatever a page links
        assert icon.ok and icon.headers["content-type"] == "image/x-icon" and icon.body()[:4] == b"\x00\x00\x01\x00"
        assert page.request.get("/apple-touch-icon.png").ok
