"""Working in several projects: joining another project does not move anybody, a page of another
of the user's projects offers the switch, and a missing page is the app's own 404, also with DEBUG on."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from projects import scoping
from tests.two_projects import PASSWORD, shared_world

world = pytest.fixture(scope="module")(shared_world)


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _project_shown(client) -> str:
    return client.get(reverse("home")).context["project"].name


def test_joining_another_project_keeps_the_one_you_work_in(world, db):
    from django.contrib.auth import get_user_model

    from projects.services import add_member, create_project

    user = get_user_model().objects.create_user("newcomer", password=PASSWORD)
    with scoping.scopes_disabled():
        first, second = create_project("Zeta first"), create_project("Aardvark second")  # second sorts first
    add_member(first, user, "coordinator")
    client = Client()
    assert client.login(username="newcomer", password=PASSWORD)
    assert _project_shown(client) == "Zeta first"
    add_member(second, user, "coordinator")  # an empty project, added later
    assert _project_shown(client) == "Zeta first"  # this session
    fresh = Client()
    assert fresh.login(username="newcomer", password=PASSWORD)
    assert _project_shown(fresh) == "Zeta first"  # the next login
    fresh.post(reverse("project-switch"), {"project": second.pk})
    later = Client()
    assert later.login(username="newcomer", password=PASSWORD)
    assert _project_shown(later) == "Aardvark second"  # the last one chosen


def test_a_page_of_another_of_your_projects_offers_the_switch(world, db):
    from django.contrib.auth import get_user_model

    from projects.services import add_member

    both = get_user_model().objects.create_user("both-coord", password=PASSWORD)
    add_member(world.alpha.project, both, "coordinator")
    add_member(world.bravo.project, both, "coordinator")
    client = _client(both)
    assert _project_shown(client) == "Alpha"
    url = reverse("campaign-detail", args=[world.bravo.pk("campaign")])
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 404 and "This page is in another project" in page and "Bravo" in page
    assert "Bravo campaign" not in page  # the offer names the project, not the object
    switched = client.post(reverse("project-switch"), {"project": world.bravo.project.pk, "next": url})
    assert switched.status_code == 302 and switched["Location"] == url
    assert client.get(url).status_code == 200


def test_a_page_for_a_role_you_hold_in_another_project_offers_that_project(world, db):
    """dual2 rates in Alpha and coordinates Bravo: in Alpha, a coordinator's page of Bravo answers 403 with the
    switch to Bravo."""
    client = _client(world.dual2)
    with scoping.scopes_disabled():
        from projects.access import usual_project

        assert usual_project(world.dual2).name == "Alpha"
    url = reverse("campaign-detail", args=[world.bravo.pk("campaign")])
    response = client.get(url)
    assert response.status_code == 403 and "Switch to Bravo" in response.content.decode()


def test_other_users_get_a_plain_404_for_another_projects_page(world, db):
    client = _client(world.alpha.coordinator)
    response = client.get(reverse("campaign-detail", args=[world.bravo.pk("campaign")]))
    assert response.status_code == 404 and "another project" not in response.content.decode()


def test_an_unknown_address_is_the_apps_own_404_with_debug_on(world, db, settings):
    settings.DEBUG = True
    client = _client(world.alpha.coordinator)
    response = client.get("/campaigns/nothing-here/")
    page = response.content.decode()
    assert response.status_code == 404 and 'data-testid="not-found"' in page
    assert "URLconf" not in page and "Using the URLconf" not in page
    gone = client.get(reverse("campaign-detail", args=[987654]))
    assert gone.status_code == 404 and 'data-testid="not-found"' in gone.content.decode()
