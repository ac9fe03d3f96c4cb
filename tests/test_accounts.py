"""Roles, login, throttling, password change and the role-aware home page."""

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from projects.roles import ROLES, has_role, roles_in, sync_roles


@pytest.mark.django_db
def test_role_groups_exist_with_permissions():
    groups = {g.name: g for g in Group.objects.filter(name__in=ROLES)}
    assert set(groups) == set(ROLES)
    physician = set(groups["physician"].permissions.values_list("codename", flat=True))
    coordinator = set(groups["coordinator"].permissions.values_list("codename", flat=True))
    assert "view_item" in physician and "change_item" not in physician
    assert {"change_item", "add_corpus", "add_job"} <= coordinator
    assert groups["admin"].permissions.count() > len(coordinator)
    sync_roles()  # idempotent
    assert set(groups["physician"].permissions.values_list("codename", flat=True)) == physician


def test_admin_role_holds_every_role(admin_user, physician, _project_scope):
    project = _project_scope
    assert has_role(admin_user, "physician", "coordinator", project=project)
    assert roles_in(physician, project) == {"physician"} and not has_role(physician, "coordinator", project=project)
    assert admin_user.is_staff


@pytest.mark.parametrize(
    ("role", "present", "absent"),
    [
        ("physician", ["physician-work"], ["coordinator-work", "analyst-work", "admin-work", "corpora"]),
        ("coordinator", ["coordinator-work", "scales", "corpora"], ["physician-work", "admin-work"]),
        ("analyst", ["analyst-work", "corpora"], ["physician-work", "coordinator-work", "admin-work"]),
        ("admin", ["admin-work", "coordinator-work", "analyst-work", "physician-work"], []),
    ],
)
def test_home_page_shows_each_role_its_work(client, make_user, role, present, absent):
    user = make_user(f"u_{role}", role, is_superuser=(role == "admin"))
    client.force_login(user)
    html = client.get(reverse("home")).content.decode()
    for marker in present:
        assert f'data-testid="{marker}"' in html, marker
    for marker in absent:
        assert f'data-testid="{marker}"' not in html, marker


def test_user_without_role_is_told_what_to_do(client, make_user):
    client.force_login(make_user("nobody"))
    assert 'data-testid="no-role"' in client.get(reverse("home")).content.decode()


@pytest.mark.django_db
def test_home_requires_login(client):
    response = client.get(reverse("home"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_login_and_logout(client, physician):
    response = client.post(reverse("login"), {"username": "dr_p", "password": "correct-horse-battery"})
    assert response.status_code == 302 and response.url == reverse("home")
    assert client.get(reverse("home")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("home")).status_code == 302


def test_login_is_throttled_after_repeated_failures(client, physician, settings):
    settings.LOGIN_MAX_FAILURES = 3
    for _ in range(2):
        response = client.post(reverse("login"), {"username": "dr_p", "password": "wrong"})
        assert response.status_code == 200 and "Please enter a correct username" in response.content.decode()
    # the third failure reaches the limit and says so
    response = client.post(reverse("login"), {"username": "dr_p", "password": "wrong"})
    assert response.status_code == 429 and "Too many failed attempts" in response.content.decode()
    # Even the right password is refused while the lockout lasts.
    response = client.post(reverse("login"), {"username": "dr_p", "password": "correct-horse-battery"})
    assert response.status_code == 429
    assert "Too many failed attempts" in response.content.decode() and 'value="dr_p"' in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_successful_login_resets_the_failure_count(client, physician, settings):
    settings.LOGIN_MAX_FAILURES = 3
    for _ in range(2):
        client.post(reverse("login"), {"username": "dr_p", "password": "wrong"})
    assert client.post(reverse("login"), {"username": "dr_p", "password": "correct-horse-battery"}).status_code == 302
    client.post(reverse("logout"))
    for _ in range(2):
        client.post(reverse("login"), {"username": "dr_p", "password": "wrong"})
    assert client.post(reverse("login"), {"username": "dr_p", "password": "correct-horse-battery"}).status_code == 302


def test_password_change(client, physician):
    client.force_login(physician)
    response = client.post(reverse("password_change"), {
        "old_password": "correct-horse-battery", "new_password1": "a-new-long-passphrase-42",
        "new_password2": "a-new-long-passphrase-42"})
    assert response.status_code == 302
    physician.refresh_from_db()
    assert physician.check_password("a-new-long-passphrase-42")


@pytest.mark.parametrize("name", ["corpus-list", "system"])
def test_physician_cannot_open_coordinator_pages(client, physician, name):
    client.force_login(physician)
    assert client.get(reverse(name)).status_code == 403


# ------------------------------------------------------------------------------------------ cached user backend
def _user_queries(client, url: str) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return sum('FROM "auth_user"' in q["sql"] for q in ctx.captured_queries)


def test_signed_in_user_is_read_from_the_cache_after_the_first_request(client, physician):
    client.force_login(physician)
    assert _user_queries(client, reverse("home")) == 1
    assert _user_queries(client, reverse("home")) == 0


def test_password_change_logs_out_other_sessions_but_not_this_one_despite_the_cache(client, physician):
    from django.test import Client

    other = Client()
    other.force_login(physician)
    client.force_login(physician)
    assert other.get(reverse("home")).status_code == 200 and client.get(reverse("home")).status_code == 200
    response = client.post(reverse("password_change"), {
        "old_password": "correct-horse-battery", "new_password1": "a-new-long-passphrase-42",
        "new_password2": "a-new-long-passphrase-42"})
    assert response.status_code == 302
    assert client.get(reverse("home")).status_code == 200  # still signed in with the new password's hash
    assert other.get(reverse("home")).status_code == 302  # the old session is gone, not served a stale user


def test_deactivated_user_is_refused_at_the_next_request(client, physician):
    client.force_login(physician)
    assert client.get(reverse("home")).status_code == 200
    physician.is_active = False
    physician.save()
    assert client.get(reverse("home")).status_code == 302


def test_per_process_cache_reads_the_database_every_time(client, physician, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    client.force_login(physician)
    assert _user_queries(client, reverse("home")) == 1
    assert _user_queries(client, reverse("home")) == 1


def test_user_cache_can_be_turned_off(client, physician, settings):
    settings.USER_CACHE_SECONDS = 0
    client.force_login(physician)
    assert _user_queries(client, reverse("home")) == 1
    assert _user_queries(client, reverse("home")) == 1
