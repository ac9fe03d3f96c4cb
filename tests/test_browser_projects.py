"""The navigation's project switch: a user in two projects sees the current project's name, switches, and
sees the other project's campaigns (and no longer the first one's)."""

from __future__ import annotations

import re

import pytest

PASSWORD = "correct-horse-battery"


@pytest.fixture
def two_projects(make_user):
    from projects import services as projects
    from projects.scoping import in_project
    from tests.factories import campaign_with

    user = make_user("dual")
    made = {}
    for name in ("Alpha", "Bravo"):
        project = projects.create_project(name)
        projects.add_member(project, user, "coordinator")
        raters = [make_user(f"{name.lower()}_doc{i}") for i in range(2)]
        for rater in raters:
            projects.add_member(project, rater, "physician")
        with in_project(project):
            made[name] = campaign_with(raters, n=2, overlap=1, name=f"{name} campaign")
    return user, made


def login(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/$"))


def campaign_names(page) -> str:
    page.goto("/campaigns/")
    return page.locator("main").inner_text()


@pytest.mark.browser
def test_the_navigation_shows_the_project_and_switches_to_the_other(page, two_projects):
    login(page, "dual")
    nav = page.get_by_test_id("project-nav")
    switch = nav.locator("select#project-switch")
    assert switch.locator("option:checked").inner_text().strip() == "Alpha"
    assert sorted(t.strip() for t in switch.locator("option").all_inner_texts()) == ["Alpha", "Bravo"]
    names = campaign_names(page)
    assert "Alpha campaign" in names and "Bravo campaign" not in names

    switch = page.get_by_test_id("project-nav").locator("select#project-switch")
    with page.expect_navigation():
        switch.select_option(label="Bravo")  # choosing submits the form (data-autosubmit)
    assert page.get_by_test_id("project-nav").locator("select#project-switch option:checked") \
        .inner_text().strip() == "Bravo"
    names = campaign_names(page)
    assert "Bravo campaign" in names and "Alpha campaign" not in names
    # the choice stays for the session: another page is still in Bravo
    page.goto("/corpora/")
    main = page.locator("main").inner_text()
    assert "corpus-Bravo campaign" in main and "corpus-Alpha campaign" not in main

    with page.expect_navigation():
        page.get_by_test_id("project-nav").locator("select#project-switch").select_option(label="Alpha")
    names = campaign_names(page)
    assert "Alpha campaign" in names and "Bravo campaign" not in names


@pytest.fixture
def busy_member(make_user):
    """A coordinator and analyst of two projects with long names, as an instance with the demo and a real study has."""
    from projects import services as projects

    user = make_user("dr_a_long_username_of_a_coordinator", first_name="Alexandra", last_name="Papadopoulou-Schmidt")
    for name in ("Demo (synthetic)", "HIV question answering study, second reading 2026"):
        project = projects.create_project(name)
        projects.add_member(project, user, "coordinator")
        projects.add_member(project, user, "analyst")
    return user


@pytest.mark.browser
@pytest.mark.parametrize("width", [1024, 1366])
def test_the_top_bar_stays_compact_with_two_projects(page, busy_member, width):
    """With two projects the bar grew to 150 px (a 313 px select). The bar is one line at 1366 px and
    at most two at 1024 px; the select is capped and names the project; the account's links open from the name."""
    page.set_viewport_size({"width": width, "height": 768})
    login(page, busy_member.username)
    bar = page.locator("header.topbar")
    height = bar.bounding_box()["height"]
    assert height <= (60 if width >= 1366 else 110), f"the top bar is {height:.0f} px high at {width} px"
    select = page.locator("select#project-switch")
    assert select.bounding_box()["width"] <= 11 * 16 + 1
    assert "HIV question answering study" in select.get_attribute("title") or "Demo" in select.get_attribute("title")
    assert page.get_by_label("Project").count() == 1  # the select keeps its (visually hidden) label
    # without JavaScript a Switch button submits; with it, choosing does
    assert not page.get_by_role("button", name="Switch").is_visible()

    menu = page.get_by_test_id("account-menu")
    assert not menu.get_by_role("link", name="API token").is_visible()
    menu.locator("summary").click()
    assert menu.get_by_role("link", name="API token").is_visible()
    assert "Coordinator, Analyst" in menu.inner_text()
    page.keyboard.press("Escape")
    assert not menu.get_by_role("link", name="API token").is_visible()
    menu.locator("summary").click()
    menu.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r".*/accounts/login/.*|.*/$"))
    assert page.get_by_label("Username").count() == 1
