"""API tokens expire (API_TOKEN_DAYS, default 30) and are replaced when the password changes;
the API token page says so."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


@pytest.fixture
def api():
    return APIClient()


def get_token(api, password="correct-horse-battery"):
    response = api.post(reverse("api-token"), {"username": "dr_p", "password": password})
    assert response.status_code == 200, response.content
    return response.json()


def test_a_token_expires_after_the_configured_days(api, physician, settings):
    assert settings.API_TOKEN_DAYS == 30
    body = get_token(api)
    token = Token.objects.get(key=body["token"])
    assert body["expires"].startswith((token.created + timedelta(days=30)).strftime("%Y-%m-%d"))
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/scales/").status_code == 200
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(days=30, seconds=1))
    refused = api.get("/api/scales/")
    assert refused.status_code in (401, 403) and "expired" in refused.json()["detail"]
    settings.API_TOKEN_DAYS = 31
    assert api.get("/api/scales/").status_code == 200


def test_asking_again_gives_the_same_token_until_it_expired(api, physician):
    first = get_token(api)["token"]
    assert get_token(api)["token"] == first
    Token.objects.filter(key=first).update(created=timezone.now() - timedelta(days=31))
    second = get_token(api)["token"]
    assert second != first and not Token.objects.filter(key=first).exists()


def test_a_password_change_replaces_the_token(api, client, physician):
    old = get_token(api)["token"]
    client.force_login(physician)
    response = client.post(reverse("password_change"), {
        "old_password": "correct-horse-battery", "new_password1": "a-new-long-passphrase-42",
        "new_password2": "a-new-long-passphrase-42"})
    assert response.status_code == 302
    api.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    assert api.get("/api/scales/").status_code in (401, 403)
    new = Token.objects.get(user=physician)
    assert new.key != old
    api.credentials(HTTP_AUTHORIZATION=f"Token {new.key}")
    assert api.get("/api/scales/").status_code == 200


def test_other_saves_and_other_ways_of_changing_the_password(physician, monkeypatch):
    old = Token.objects.create(user=physician).key
    physician.first_name = "Ada"
    physician.save()
    physician.save(update_fields=["last_login"])
    assert Token.objects.get(user=physician).key == old  # nothing but the password replaces it
    monkeypatch.setattr("getpass.getpass", lambda prompt="": "another-long-passphrase-7")
    call_command("changepassword", "dr_p", stdout=io.StringIO())
    assert Token.objects.get(user=physician).key != old


def test_the_token_page_says_when_it_expires(client, physician):
    client.force_login(physician)
    page = client.get(reverse("api-token-page")).content.decode()
    assert "expires 30 days after it is made, and is replaced when your password changes" in page
    assert 'href="/accounts/token/"' in page  # linked from every page's top bar
    client.post(reverse("api-token-page"), {"action": "new"})
    token = Token.objects.get(user=physician)
    page = client.get(reverse("api-token-page")).content.decode()
    expires = (token.created + timedelta(days=30)).strftime("%Y-%m-%d %H:%M")
    assert token.key in page and expires in page
    client.post(reverse("api-token-page"), {"action": "new"})
    assert Token.objects.get(user=physician).key != token.key
    client.post(reverse("api-token-page"), {"action": "delete"})
    assert not Token.objects.filter(user=physician).exists()


def test_the_token_page_needs_a_login(client, db):
    assert client.get(reverse("api-token-page")).status_code == 302
