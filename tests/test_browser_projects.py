"""The navigation's project switch (issue 29): a user in two projects sees the current project's name, switches, and
sees the other project's campaigns (and no longer the first one's)."""

from __future__ import annotations

import re

import pytest

PASSWORD = "correct-horse-battery"


@pytest.fixture
def two_projects(make_user):
    from annotation import projects
    from tests.factories import campaign_with

    user = make_user("dual")
    made = {}
    for name in ("Alpha", "Bravo"):
        project = projects.create_project(name)
        projects.add_member(project, user, "coordinator")
        raters = [make_user(f"{name.lower()}_doc{i}") for i in range(2)]
        for rater in raters:
            projects.add_member(project, rater, "physician")
        with projects.working_in(project):
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
