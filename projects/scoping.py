"""Project scoping by construction, on django-scopes (what pretix uses for its organizers and events).

Every model of project data declares once how it reaches its project (``project_path``, e.g.
``"campaign__project"``). Its default manager, ``objects``, then returns only rows of the active scope's project(s)
and raises :class:`ScopeError` when no scope is active, so a query that forgets its project fails loudly instead of
reading across projects. A scope is entered:

* per request, by :mod:`projects.access` (the request's project; the API's authentication does the same);
* per task and command, with :func:`in_project` (a job carries its project; a command takes ``--project``);
* across projects only where that is the point, through the model's ``unscoped`` manager or
  :func:`scopes_disabled` (the admin, migrations, instance-wide jobs such as the reconciler and the LLM engine's
  bookkeeping by job id). Both are greppable; ``tests/test_projects_scoping.py`` lists each use (file, function, count)
  with its reason.

Library scales are shared: a project sees its own scales and versions (drafts included) and every other project's
published or retired versions, never another project's drafts (:meth:`ProjectScoped.visible_q`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import models
from django.db.models import Q
from django_scopes import ScopeError, get_scope, scope, scopes_disabled
from django_scopes.manager import DisabledQuerySet
from django_scopes.state import state as _state

__all__ = ["ScopeError", "scopes_disabled", "in_project", "active_project_ids", "active_project_id",
           "ProjectQuerySet", "ProjectManager", "NoProjectError", "activate", "deactivate"]

DIMENSION = "project"


class NoProjectError(ScopeError):
    """New project data with no project: neither given nor the one project of the active scope."""


def _ids(projects: Any) -> tuple[int, ...]:
    if projects is None:
        return ()
    if isinstance(projects, Iterable) and not isinstance(projects, str | bytes):
        return tuple(getattr(p, "pk", p) for p in projects)
    return (getattr(projects, "pk", projects),)


@contextlib.contextmanager
def in_project(projects: Any) -> Iterator[None]:
    """Run code in one project (a Project or its id), or several (an iterable): queries of project data see only
    their rows; new rows default to the project when there is exactly one. ``None`` or an empty iterable is a
    scope of no project: every query is empty (fail closed)."""
    with scope(**{DIMENSION: _ids(projects)}):
        yield


def activate(projects: Any) -> object:
    """Enter a project scope for the rest of the current context (a request); returns the token for
    :func:`deactivate`. Prefer :func:`in_project` where a ``with`` block fits."""
    current = dict(get_scope())
    current["_enabled"] = True
    current[DIMENSION] = _ids(projects)
    return _state.set(current)


def activate_unscoped() -> object:
    """Disable scoping for the rest of the current context (the Django admin's requests, administrators only)."""
    return _state.set({"_enabled": False})


def deactivate(token: object) -> None:
    _state.reset(token)


def snapshot() -> dict | None:
    """The scope state as it is now (for :func:`restore`: a request's end, a streamed response)."""
    return _state.get()


def restore(saved: dict | None) -> None:
    _state.set(saved)


def active_project_ids() -> tuple[int, ...] | None:
    """The projects of the active scope; None when scoping is disabled or no scope is active."""
    current = get_scope()
    if not current.get("_enabled", True) or DIMENSION not in current:
        return None
    return _ids(current[DIMENSION])


def active_project_id() -> int | None:
    """The active scope's project when it is exactly one, else None."""
    ids = active_project_ids()
    return ids[0] if ids is not None and len(ids) == 1 else None


class _Refused(DisabledQuerySet):
    """A query of project data outside any project scope: every way of reading or changing rows raises
    ScopeError (django-scopes' set, plus the readers it leaves open, such as ``exists()``)."""

    def _refuse(self, *args, **kwargs):
        self.error()

    exists = contains = explain = in_bulk = bulk_update = _refuse

    def all(self):
        # A clone, not an error: Django's model forms copy a foreign key's default queryset when a form class is
        # defined (at import, outside any scope). Reading it still raises.
        return self._chain()

    def __repr__(self) -> str:
        return f"<refused {self.model.__name__} query: no project scope>"


class ProjectQuerySet(models.QuerySet):
    """Querysets of project data. ``alive()`` leaves out soft-deleted rows (models with ``deleted_at``)."""

    def alive(self):
        return self.filter(deleted_at__isnull=True)


class ProjectManager(models.Manager.from_queryset(ProjectQuerySet)):
    """The default manager of project data: the active scope's rows only; ScopeError without a scope."""

    def get_queryset(self):
        current = get_scope()
        if not current.get("_enabled", True):
            return super().get_queryset()
        if DIMENSION not in current:
            refused = _Refused(self.model, using=self._db, missing_scopes=[DIMENSION])
            return refused
        return super().get_queryset().filter(self.model.visible_q(_ids(current[DIMENSION])))



class UnscopedManager(models.Manager.from_queryset(ProjectQuerySet)):
    """Every project's rows: only where crossing projects is the point (admin, instance-wide jobs, the engine's
    bookkeeping by job id). Each use is listed in tests/test_projects_scoping.py."""


def path_q(path: str, ids: tuple[int, ...]) -> Q:
    """Rows whose project (reached by ``path``) is one of ``ids``."""
    if len(ids) == 1:
        return Q(**{path: ids[0]})
    return Q(**{f"{path}__in": ids})


def chosen_project_id(project: Any = None) -> int:
    """``project``'s id when given, else the active scope's one project; NoProjectError otherwise (there is no
    default project)."""
    if project is not None:
        return getattr(project, "pk", project)
    active = active_project_id()
    if active is None:
        raise NoProjectError("No project given and no single project in scope: name the project.")
    return active


def runs_in_project(func):
    """A service taking ``project=``: it runs in that project's scope (default: the active scope's one project)
    and receives the project's id."""

    @functools.wraps(func)
    def wrapper(*args, project: Any = None, **kwargs):
        project_id = chosen_project_id(project)
        with in_project(project_id):
            return func(*args, project=project_id, **kwargs)

    return wrapper
