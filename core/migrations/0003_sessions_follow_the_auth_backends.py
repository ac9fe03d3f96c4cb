"""The sign-in backends moved from ``annotation`` to ``core.site``. A session remembers the dotted path of the backend
that signed its user in, and Django signs the user out when that path is no longer a configured backend: without
this step an upgrade would sign every user out at once (a rater mid-dialogue included). The open sessions get the new
path, in the database and in the session cache."""

from django.db import migrations

MOVED = {"annotation.auth.": "core.site.auth.", "annotation.throttle.": "core.site.throttle."}


def _rewrite(apps, schema_editor, moves: dict[str, str]) -> None:
    from django.conf import settings
    from django.contrib.sessions.backends.cached_db import KEY_PREFIX
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.cache import caches
    from django.utils import timezone

    Session = apps.get_model("sessions", "Session")
    store = SessionStore()
    cache = caches[settings.SESSION_CACHE_ALIAS]
    for session in Session.objects.using(schema_editor.connection.alias).filter(expire_date__gt=timezone.now()):
        data = store.decode(session.session_data)
        backend = data.get("_auth_user_backend", "")
        old = next((prefix for prefix in moves if backend.startswith(prefix)), None)
        if old is None:
            continue
        data["_auth_user_backend"] = moves[old] + backend.removeprefix(old)
        session.session_data = store.encode(data)
        session.save(update_fields=["session_data"])
        cache.delete(KEY_PREFIX + session.session_key)  # read from the database, as rewritten, on its next request


def forwards(apps, schema_editor) -> None:
    _rewrite(apps, schema_editor, MOVED)


def backwards(apps, schema_editor) -> None:
    _rewrite(apps, schema_editor, {new: old for old, new in MOVED.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0002_verbose_names"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
