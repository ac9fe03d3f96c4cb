"""Authentication backend that reads the signed-in user through the cache.

Every request loads the user row, and on a rating click that ORM query costs more CPU than saving the label.
The row is cached for ``USER_CACHE_SECONDS`` and evicted whenever the user is saved or deleted, so a password
change, a deactivation or a new name takes effect on the next request. Changes that bypass ``save()`` (a bulk
``update()`` in a shell) take effect within the timeout. With a per-process cache (``locmem``) an eviction
would not reach the other processes, so the backend then reads the database every time. The cached row holds
the password hash (the session check needs it): the cache is the app's own store, like the database.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import transaction


def _key(user_id) -> str:
    return f"minicex:user:{user_id}"


def _enabled() -> bool:
    return settings.USER_CACHE_SECONDS > 0 and not isinstance(caches["default"], LocMemCache)


class CachedUserBackend(ModelBackend):
    """``ModelBackend`` whose ``get_user`` (called on every request) is served from the cache."""

    def get_user(self, user_id):
        if not _enabled():
            return super().get_user(user_id)
        user = cache.get(_key(user_id))
        if user is None:
            user = super().get_user(user_id)
            if user is not None:
                cache.set(_key(user_id), user, settings.USER_CACHE_SECONDS)
            return user
        return user if self.user_can_authenticate(user) else None


def evict(sender, instance, **kwargs) -> None:
    """post_save / post_delete of the user model (connected in AnnotationConfig.ready, in every process).
    Evicted again at commit: a request reading the row before the commit could have cached the old one."""
    key = _key(instance.pk)
    cache.delete(key)
    transaction.on_commit(lambda: cache.delete(key))
