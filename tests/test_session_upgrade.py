"""An upgrade keeps its users signed in: the sign-in backends moved from ``annotation`` to ``core.site``, and the
migration that follows the move rewrites the backend path every open session remembers (in the database and in the
session cache), so no rater is signed out mid-dialogue."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.sessions.backends.cached_db import SessionStore
from django.db import connection

upgrade = importlib.import_module("core.migrations.0003_sessions_follow_the_auth_backends")


def _session_from_before_the_move(user) -> str:
    """A session as the release before the move stored it: signed in by ``annotation.auth``, cached too."""
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "annotation.auth.CachedUserBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    session.save()
    return session.session_key


@pytest.mark.django_db
def test_an_open_session_stays_signed_in_across_the_move(client, make_user):
    user = make_user("upgraded", "physician")
    key = _session_from_before_the_move(user)
    client.cookies[settings.SESSION_COOKIE_NAME] = key
    assert client.get("/").status_code == 302  # before the migration: the old path signs the user out

    key = _session_from_before_the_move(user)
    upgrade.forwards(apps, SimpleNamespace(connection=connection))
    client.cookies[settings.SESSION_COOKIE_NAME] = key
    response = client.get("/")
    assert response.status_code == 200 and response.wsgi_request.user == user
    assert SessionStore(session_key=key).load()["_auth_user_backend"] == "core.site.auth.CachedUserBackend"

    upgrade.backwards(apps, SimpleNamespace(connection=connection))  # a downgrade gives the old path back
    assert SessionStore(session_key=key).load()["_auth_user_backend"] == "annotation.auth.CachedUserBackend"
