"""The paper's Delphi process end to end in the browser (Debian's chromium through Playwright)."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from annotation.models import ScaleVersion
from core.jobs.models import Job
from delphi.models import DelphiStudy, Response
from tests.conftest import ARTIFACTS, wait_js, watch_csp
from tests.test_figures import run_due

PASSWORD = "a-long-password-1"


def login(page, username):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/$"))


def link_from_outbox(address: str) -> str:
    message = [m for m in mail.outbox if m.to == [address]][-1]
    return re.search(r"https?://\S+/delphi/p/\S+/", message.body).group(0)


def answer_questionnaire(panel, ratings: list[str], *, self_assessment: bool = True):
    """Rate every item from the keyboard (1-5 rates the current item and moves on, as on the rating page), fill the
    self-assessment."""
    if self_assessment:
        panel.get_by_label("Professional title").fill("chief physician")
        panel.get_by_label("Working years").fill("22")
        panel.locator("label[for=fam-5]").click()
        for basis in ("basis_practice", "basis_theory", "basis_literature", "basis_intuition"):
            panel.locator(f"input[name={basis}][value=high]").check()
        wait_js(panel, "document.querySelector('#profile-state').textContent.includes('Saved')")
    panel.locator("body").click(position={"x": 5, "y": 5})
    n = panel.locator("form.q-item").count()
    panel.locator("form.q-item").first.focus()
    for k in range(n):
        panel.keyboard.press(ratings[k % len(ratings)])
    wait_js(panel, """() => Array.from(document.querySelectorAll('form.q-item .save-state'))
        .every(s => s.textContent.startsWith('Saved'))""")
    return n


@pytest.mark.browser
def test_three_delphi_rounds_validation_and_publish(page, browser, live_server, make_user, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DELPHI_SCHEDULE_REMINDERS = False
    mail.outbox = []
    make_user("coord", "coordinator", password=PASSWORD)
    login(page, "coord")

    # Coordinator: a study on the Mini-CEX v1, one panelist by e-mail, round 1 opened.
    page.get_by_role("link", name="Delphi").click()
    page.get_by_role("link", name="New Delphi study").click()
    page.get_by_label("Title:", exact=True).fill("LLM Mini-CEX Delphi")
    v1 = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    page.locator("#id_version").select_option(str(v1.pk))
    page.get_by_label("Invitation:", exact=True).fill("Please rate the importance of each item.")
    page.get_by_role("button", name="Create study").click()
    page.wait_for_url(re.compile(r".*/delphi/\d+/$"))
    study = DelphiStudy.objects.get(title="LLM Mini-CEX Delphi")
    page.get_by_label(re.compile("Invite by e-mail")).fill("Dr Expert <expert@example.org>\nsecond@example.org")
    page.get_by_role("button", name="Invite to round 1").click()
    page.get_by_role("button", name="Open round 1").click()
    page.get_by_text("Round 1 is open").wait_for()
    assert study.rounds.get(number=1).status == "open"

    # Panelist: answers round 1 from the link the coordinator copied on the study page (the same as the e-mailed
    # one), with a comment, and submits.
    page.goto(f"/delphi/{study.pk}/")
    row = page.get_by_test_id("panel").locator("tr").filter(has_text="expert@example.org")
    row.get_by_role("button", name="Copy link").click()
    copied = row.locator("input[readonly]")
    wait_js(page, "() => Array.from(document.querySelectorAll('input[data-link-for]')).some(i => i.value)")
    link = copied.input_value()
    assert link.split("/delphi/p/")[0] and link.split("/delphi/p/")[1] and "/delphi/p/" in link_from_outbox(
        "expert@example.org")
    panel_context = browser.new_context(viewport={"width": 1100, "height": 900})
    panel_context.set_default_timeout(15_000)
    panel = panel_context.new_page()
    panel_violations = watch_csp(panel)
    panel.goto(link)
    panel.get_by_role("heading", name="LLM Mini-CEX Delphi").wait_for()
    assert "Dr Expert" not in panel.content() and "second@example.org" not in panel.content()
    n = answer_questionnaire(panel, ["4", "5", "3"])
    assert n == 26
    first = panel.locator("form.q-item").first
    first.get_by_text("Comment or rewording").click()
    first.locator(".save-state").evaluate("el => el.textContent = ''")
    first.get_by_label("Comment on 1.1").fill("Name the elements of the present illness")
    wait_js(panel, "document.querySelector('form.q-item .save-state').textContent.startsWith('Saved')")
    # leave and resume: the answers are still there
    panel.goto(link)
    assert panel.locator("form.q-item").first.locator("input[name=importance][value='4']").is_checked()
    panel.get_by_role("button", name=re.compile("I have finished")).click()
    panel.get_by_text("Your answers are complete").first.wait_for()
    r1 = study.rounds.get(number=1)
    assert r1.participations.get(panelist__email="expert@example.org").completed_at is not None
    assert Response.objects.get(participation__round=r1, item__code="1.1").comment.startswith("Name the")

    # Coordinator: focus group revises 1.1 and deletes 2.7, then closes round 1.
    page.goto(f"/delphi/rounds/{r1.pk}/")
    assert "Name the elements of the present illness" in page.content()
    row = page.locator("form.decision").filter(has=page.get_by_label("Decision on 1.1"))
    row.get_by_label("Decision on 1.1").select_option("revise")
    row.get_by_label("New wording of 1.1").fill("Enquire about the present illness around the self-report")
    row.get_by_role("button", name="Save decision").click()
    row.get_by_text("Saved: Revise").wait_for()
    row = page.locator("form.decision").filter(has=page.get_by_label("Decision on 2.7"))
    row.get_by_label("Decision on 2.7").select_option("delete")
    row.get_by_label("Reason for 2.7").fill("overlaps 2.1")
    row.get_by_role("button", name="Save decision").click()
    row.get_by_text("Saved: Delete").wait_for()
    page.screenshot(path=str(ARTIFACTS / "delphi-focus-group.png"), full_page=False)
    page.get_by_role("button", name="Close round 1").click()
    page.get_by_text("Round 1 closed").wait_for()
    r2 = study.rounds.get(number=2)
    assert r2.version.number == 2 and not r2.version.items.filter(code="2.7").exists()
    # the second panelist never answered: not carried to round 2
    assert list(r2.participations.values_list("panelist__email", flat=True)) == ["expert@example.org"]
    page.get_by_role("button", name="Open round 2").click()
    page.get_by_text("Round 2 is open").wait_for()

    # Panelist: round 2 shows the group's feedback and their own previous answer, the new wording, no 2.7.
    panel.goto(link)
    panel.get_by_text("Round 2 ·").first.wait_for()
    first = panel.locator("form.q-item").first
    assert "Enquire about the present illness around the self-report" in first.inner_text()
    assert "Previous wording" in first.inner_text()
    assert first.get_by_test_id("own-previous").inner_text().startswith("Your answer: 4")
    assert "Name the elements of the present illness" in first.get_by_test_id("own-previous").inner_text()
    assert "median 4" in first.get_by_test_id("feedback").inner_text()
    # the distribution bars are sized by delphi.js (no style attribute: the CSP forbids it)
    assert first.locator(".bar").last.evaluate("el => el.style.width").endswith("%")
    assert panel.locator("form.q-item[data-code='2.7']").count() == 0
    panel.screenshot(path=str(ARTIFACTS / "delphi-round2-feedback.png"), full_page=False)
    assert answer_questionnaire(panel, ["5", "4"]) == 25
    panel.get_by_role("button", name=re.compile("I have finished")).click()
    panel.get_by_text("Your answers are complete").first.wait_for()

    # Round 2 closes with no changes, round 3 runs the same way.
    page.goto(f"/delphi/rounds/{r2.pk}/")
    page.get_by_role("button", name="Close round 2").click()
    page.get_by_role("button", name="Open round 3").click()
    page.get_by_text("Round 3 is open").wait_for()
    panel.goto(link)
    panel.get_by_text("Round 3 ·").first.wait_for()
    answer_questionnaire(panel, ["5", "4", "4"])
    panel.get_by_role("button", name=re.compile("I have finished")).click()
    panel.get_by_text("Your answers are complete").first.wait_for()
    r3 = study.rounds.get(number=3)
    page.goto(f"/delphi/rounds/{r3.pk}/")
    page.get_by_role("button", name="Close round 3").click()
    page.get_by_text("Round 3 closed").wait_for()

    # After round 3 the answer is refused: the round closed.
    panel.goto(link)
    assert "no longer accepted" in panel.content()

    # Validation survey (here with the same panelist), its report, then publish the agreed version.
    page.get_by_label("also invite the Delphi panel").check()
    page.get_by_role("button", name=re.compile("Start the validation survey")).click()
    page.get_by_role("button", name="Open validation survey").click()
    page.get_by_text("Validation survey is open").wait_for()
    panel.goto(link)
    panel.get_by_text("Validation survey ·").first.wait_for()
    answer_questionnaire(panel, ["5", "4", "3"], self_assessment=False)
    panel.get_by_role("button", name=re.compile("I have finished")).click()
    panel.get_by_text("Your answers are complete").first.wait_for()
    validation = study.rounds.get(kind="validation")
    page.goto(f"/delphi/rounds/{validation.pk}/")
    page.get_by_role("button", name="Close validation survey").click()
    page.goto(f"/delphi/rounds/{validation.pk}/validation/")
    # The round's statistics are a worker's job, queued as the answers came in and the survey closed: run them as
    # the workers would once the changes stopped, then the page shows them.
    run_due(Job.Kind.DELPHI_ROUND)
    page.reload()
    page.get_by_test_id("table3").wait_for()
    assert "KMO" in page.get_by_test_id("table4").inner_text()
    page.goto(f"/delphi/{study.pk}/")
    page.get_by_role("button", name=re.compile("Publish .* for annotation")).click()
    page.get_by_text("is published").wait_for()
    study.refresh_from_db()
    agreed = ScaleVersion.objects.get(pk=study.agreed_version_id)
    assert agreed.status == "published" and agreed.number == 4
    panel_context.close()
    assert panel_violations == [], "the questionnaire broke its Content-Security-Policy"


@pytest.mark.browser
def test_a_panelist_whose_link_is_in_chinese_answers_a_round_on_a_phone(browser, live_server, transactional_db,
                                                                         instrument, make_user, settings):
    """The coordinator set the panellist's link to Simplified Chinese: on a phone (390 px) the questionnaire is in
    Chinese (the page's words through the catalogue, the items in Chinese marked lang="zh"), nothing overflows
    sideways, axe-core finds no WCAG 2.1 A/AA violation, and every answer given is stored."""
    from delphi import services
    from tests.a11y import PHONE, geometry_problems
    from tests.a11y import axe as wcag_axe
    from tests.conftest import browser_page

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.DELPHI_SCHEDULE_REMINDERS = False
    coordinator = make_user("coord", "coordinator", password=PASSWORD)
    study = services.create_study(title="Mini-CEX 德尔菲研究", user=coordinator, site_url=live_server.url,
                                  version=ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1))
    panelist, = services.invite(study, coordinator, text="Dr Li <li@example.org>")
    services.set_language(panelist, coordinator, "zh-hans")
    rnd = study.rounds.get(number=1)
    services.open_round(rnd, coordinator, notify=False)

    with browser_page(browser, live_server.url, viewport=PHONE, is_mobile=True, has_touch=True,
                      extra_http_headers={"Accept-Language": "en-US,en;q=0.9"}) as panel:
        panel.goto(services.panelist_url(panelist))
        assert panel.locator("html").get_attribute("lang") == "zh-hans"  # the coordinator's choice, not the browser's
        panel.get_by_role("heading", name="您的基本信息").wait_for()
        first = panel.locator("form.q-item").first
        assert first.locator("legend [lang=zh]").count() == 1
        assert wcag_axe(panel) == []
        assert geometry_problems(panel, targets=False) == []

        panel.get_by_label("职称").fill("主任医师")
        panel.locator("label[for=fam-4]").tap()
        for basis in ("basis_practice", "basis_theory", "basis_literature", "basis_intuition"):
            panel.locator(f"input[name={basis}][value=medium]").check()
        wait_js(panel, "document.querySelector('#profile-state').textContent.includes('已保存')")
        items = panel.locator("form.q-item")
        n = items.count()
        for k in range(n):
            items.nth(k).locator(f"input[name=importance][value='{3 + k % 3}'] + label").tap()
        wait_js(panel, """() => Array.from(document.querySelectorAll('form.q-item .save-state'))
            .every(s => s.textContent === '已保存')""")
        panel.get_by_role("button", name="我已填写完毕：提交答案").tap()
        panel.get_by_text("谢谢：您的答案已填写完成").first.wait_for()
        assert panel.locator("html").get_attribute("lang") == "zh-hans"
        assert geometry_problems(panel, targets=False) == []
        panel.screenshot(path=str(ARTIFACTS / "delphi-questionnaire-zh-phone.png"), full_page=False)

    part = rnd.participations.get(panelist=panelist)
    assert part.completed_at is not None and part.familiarity == 4
    stored = dict(Response.objects.filter(participation=part).values_list("item__order", "importance"))
    assert len(stored) == n and all(value in (3, 4, 5) for value in stored.values())
