"""Failed logins pause one username at one address, not everyone behind a proxy or a NAT.

Policy (core/site/throttle.py): LOGIN_MAX_FAILURES per (username, address), LOGIN_MAX_FAILURES_PER_USERNAME per
username from any address, LOGIN_MAX_FAILURES_PER_ADDRESS per address; X-Forwarded-For only with
TRUSTED_PROXY_COUNT."""

import io
import time

import pytest
from django.test import RequestFactory
from django.urls import reverse

from core.site.throttle import client_address

PROXY = "10.0.0.1"


def login(client, username, password, address=PROXY, **headers):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address,
                       **headers)


@pytest.fixture
def colleagues(make_user):
    return [make_user(f"dr_{i}", "physician") for i in range(3)]


def test_failures_of_other_users_behind_the_same_proxy_lock_nobody_else(client, physician, colleagues):
    """The reported defect: five wrong passwords from the proxy's address locked every user for 15 minutes."""
    for _ in range(5):
        login(client, "dr_0", "wrong")
    for i in range(1, 3):  # a colleague mistypes a few times too
        for _ in range(3):
            login(client, f"dr_{i}", "wrong")
    assert login(client, "dr_0", "correct-horse-battery").status_code == 429  # dr_0 is paused at this address
    assert login(client, "dr_p", "correct-horse-battery").status_code == 302  # everyone else logs in


def test_one_address_trying_many_usernames_does_not_lock_out_other_users(client, physician):
    for i in range(8):  # 8 usernames, 3 tries each: 24 failures (5 locked everyone before), under the 200 limit
        for _ in range(3):
            assert login(client, f"guess{i}", "wrong").status_code == 200
    assert login(client, "dr_p", "correct-horse-battery").status_code == 302


def test_a_username_paused_at_one_address_still_logs_in_from_another(client, physician, settings):
    settings.LOGIN_MAX_FAILURES, settings.LOGIN_MAX_FAILURES_PER_USERNAME = 3, 5
    for _ in range(3):
        login(client, "dr_p", "wrong", address="192.0.2.10")
    assert login(client, "dr_p", "correct-horse-battery", address="192.0.2.10").status_code == 429
    assert login(client, "dr_p", "correct-horse-battery", address="192.0.2.20").status_code == 302
    client.post(reverse("logout"))
    # guessing spread over addresses reaches the per-username limit (the real user's login did not reset it):
    # the username pauses everywhere
    login(client, "dr_p", "wrong", address="192.0.2.30")
    login(client, "dr_p", "wrong", address="192.0.2.40")
    response = login(client, "dr_p", "correct-horse-battery", address="192.0.2.20")
    assert response.status_code == 429 and "Too many failed attempts" in response.content.decode()


def test_the_per_address_limit_pauses_an_address_guessing_many_usernames(client, physician, settings):
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 6
    for i in range(6):
        login(client, f"guess{i}", "wrong", address="198.51.100.9")
    assert login(client, "dr_p", "correct-horse-battery", address="198.51.100.9").status_code == 429
    assert login(client, "dr_p", "correct-horse-battery", address="198.51.100.10").status_code == 302


def test_a_pause_ends_after_the_lockout_time(client, physician, settings):
    settings.LOGIN_MAX_FAILURES, settings.LOGIN_LOCKOUT_SECONDS = 2, 2
    for _ in range(2):
        login(client, "dr_p", "wrong")
    assert login(client, "dr_p", "correct-horse-battery").status_code == 429
    time.sleep(2.5)  # past the lockout after the last attempt (a refused attempt while paused counts as one)
    assert login(client, "dr_p", "correct-horse-battery").status_code == 302


def test_an_administrator_ends_a_pause_at_once(client, physician, settings):
    from django.core.management import call_command

    settings.LOGIN_MAX_FAILURES = 2
    for address in ("192.0.2.1", "192.0.2.2"):
        for _ in range(2):
            login(client, "dr_p", "wrong", address=address)
    assert login(client, "dr_p", "correct-horse-battery", address="192.0.2.1").status_code == 429
    call_command("axes_reset_username", "dr_p", stdout=io.StringIO())
    assert login(client, "dr_p", "correct-horse-battery", address="192.0.2.2").status_code == 302
    client.post(reverse("logout"))
    assert login(client, "dr_p", "correct-horse-battery", address="192.0.2.1").status_code == 302


def test_x_forwarded_for_is_ignored_unless_proxies_are_trusted(client, physician, settings):
    settings.LOGIN_MAX_FAILURES = 3
    assert settings.TRUSTED_PROXY_COUNT == 0
    for i in range(3):  # a forged header per attempt changes nothing: the address is REMOTE_ADDR
        login(client, "dr_p", "wrong", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}")
    assert login(client, "dr_p", "correct-horse-battery", HTTP_X_FORWARDED_FOR="203.0.113.99").status_code == 429


def test_x_forwarded_for_gives_the_client_address_behind_trusted_proxies(client, physician, settings):
    settings.LOGIN_MAX_FAILURES, settings.TRUSTED_PROXY_COUNT = 3, 1
    for _ in range(3):  # one physician at 203.0.113.7, behind the proxy, pauses only herself
        login(client, "dr_p", "wrong", HTTP_X_FORWARDED_FOR="203.0.113.7")
    assert login(client, "dr_p", "correct-horse-battery", HTTP_X_FORWARDED_FOR="203.0.113.7").status_code == 429
    # prepending a forged entry does not escape: the proxy appended the real address
    forged = "198.51.100.1, 203.0.113.7"
    assert login(client, "dr_p", "correct-horse-battery", HTTP_X_FORWARDED_FOR=forged).status_code == 429
    assert login(client, "dr_p", "correct-horse-battery", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 302


@pytest.mark.parametrize(("trusted", "remote", "forwarded", "expected"), [
    (0, "10.0.0.1", "203.0.113.7", "10.0.0.1"),
    (1, "10.0.0.1", "203.0.113.7", "203.0.113.7"),
    (1, "10.0.0.1", "6.6.6.6, 203.0.113.7", "203.0.113.7"),
    (2, "10.0.0.2", "6.6.6.6, 203.0.113.7, 10.0.0.1", "203.0.113.7"),
    (2, "10.0.0.2", "203.0.113.7", "10.0.0.2"),  # fewer hops than proxies: not from the proxies, use REMOTE_ADDR
    (1, "10.0.0.1", "", "10.0.0.1"),
])
def test_client_address(settings, trusted, remote, forwarded, expected):
    settings.TRUSTED_PROXY_COUNT = trusted
    meta = {"REMOTE_ADDR": remote, **({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})}
    assert client_address(RequestFactory().post("/", **meta)) == expected


def test_the_api_token_endpoint_shares_the_counters(client, physician, settings):
    settings.LOGIN_MAX_FAILURES = 3
    login(client, "dr_p", "wrong")
    login(client, "dr_p", "wrong")
    response = client.post(reverse("api-token"), {"username": "dr_p", "password": "wrong"}, REMOTE_ADDR=PROXY)
    assert response.status_code == 429 and "Too many failed attempts" in response.json()["detail"]
    response = client.post(reverse("api-token"), {"username": "dr_p", "password": "correct-horse-battery"},
                           REMOTE_ADDR=PROXY)
    assert response.status_code == 429
    other = client.post(reverse("api-token"), {"username": "dr_p", "password": "correct-horse-battery"},
                        REMOTE_ADDR="192.0.2.50")
    assert other.status_code == 200 and other.json()["token"]


def test_the_admin_login_is_throttled_too(client, admin_user, settings):
    settings.LOGIN_MAX_FAILURES = 2
    for _ in range(2):
        client.post(reverse("admin:login"), {"username": "root", "password": "wrong"}, REMOTE_ADDR=PROXY)
    response = client.post(reverse("admin:login"), {"username": "root", "password": "correct-horse-battery"},
                           REMOTE_ADDR=PROXY)
    assert response.status_code == 429 and "_auth_user_id" not in client.session
