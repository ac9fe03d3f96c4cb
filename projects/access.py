"""The request's project, and access to objects in it.

A request's project is, in order: the one the API names (``X-Project`` header or ``?project=``, by name or id; a
project the user may not enter answers 404, as a missing one), the one chosen in the navigation (kept in the
session), the one the user last worked in, else the first project they joined. Once resolved, the request runs in
that project's scope (:mod:`projects.scoping`): every query of project data sees only its rows, and a page reads
roles in it.

:func:`get_in_project_or_404` is the one way a view fetches an object by id: another project's object answers 404
exactly as a missing one, except that a user who is a member of the object's project is offered to switch to it
(:class:`InAnotherProject`, still a 404)."""

from __future__ import annotations

from functools import wraps

from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import F, Max, Min, QuerySet
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotFound

from projects import scoping
from projects.models import Membership, Project, project_id_of
from projects.roles import ROLE_LABELS, forget_roles, has_role, is_admin
from projects.tokens import ExpiringTokenAuthentication

SESSION_KEY = "minicex_project"
HEADER = "HTTP_X_PROJECT"
PARAM = "project"


def projects_of(user, role: str | None = None) -> QuerySet[Project]:
    """The projects a user may enter (by name); with ``role``, those where they hold it. Administrators may enter
    every project."""
    if not getattr(user, "is_authenticated", False):
        return Project.objects.none()
    if is_admin(user) and role is None:
        return Project.objects.order_by("name")
    memberships = Membership.objects.filter(user=user, **({"role": role} if role else {}))
    return Project.objects.filter(pk__in=memberships.values("project")).order_by("name")


def may_enter(user, project) -> bool:
    project_id = getattr(project, "pk", project)
    return is_admin(user) or Membership.objects.filter(user=user, project=project_id).exists()


def find(user, value) -> Project | None:
    """A project the user may enter, named by its name or id; None when there is none (or it is not theirs)."""
    text = str(value).strip()
    if not text or len(text) > 100:
        return None
    qs = projects_of(user)
    if text.isdigit() and len(text) < 19:
        found = qs.filter(pk=int(text)).first()
        if found is not None:
            return found
    return qs.filter(name=text).first()


def usual_project(user) -> Project | None:
    """Where a user works when nothing names a project: the project they last chose, else the first they joined
    (joining another project does not move them); administrators without a membership: the first by name."""
    mine = (Project.objects.filter(memberships__user=user)
            .annotate(last=Max("memberships__last_used_at"), joined=Min("memberships__added_at"))
            .order_by(F("last").desc(nulls_last=True), "joined", "pk").first())
    if mine is not None:
        return mine
    return Project.objects.order_by("name").first() if is_admin(user) else None


def remember(user, project: Project) -> None:
    """The user chose to work in ``project``: later sessions and logins open it."""
    Membership.objects.filter(user=user, project=project).update(last_used_at=timezone.now())


def resolve(request, user) -> Project | None:
    """The project this request works in (see the module docstring). Raises Http404 for a named project the
    user may not enter."""
    named = request.META.get(HEADER) or request.GET.get(PARAM)
    if named:
        project = find(user, named)
        if project is None:
            # The name is not echoed: the answer is the same whether the project exists or not.
            raise Http404("No such project among yours (the X-Project header or ?project= names a project by its "
                          "name or id).")
        return project
    session = getattr(request, "session", None)
    chosen = session.get(SESSION_KEY) if session is not None else None
    if chosen is not None:
        project = find(user, chosen)
        if project is not None:
            return project
    return usual_project(user)


def enter(request, user, project: Project | None) -> None:
    """Make ``project`` the request's project: its rows, its roles, the project of rows it creates. A user without
    any project works in a scope of none: every query of project data is empty."""
    request.project = project
    request._project_entered = True
    forget_roles(user)
    scoping.activate(project)


def enter_once(request) -> None:
    """Resolve and enter the request's project unless that was done (or nobody is logged in)."""
    user = getattr(request, "user", None)
    if getattr(user, "is_authenticated", False) and not getattr(request, "_project_entered", False):
        enter(request, user, resolve(request, user))


def project_free(view):
    """Mark a view that reads no project through the scope: the label save, which checks the rater's membership
    in its own locking query on the ``unscoped`` managers. The middleware then does not resolve the project, which
    on the busiest request of the app would be two queries more than the save itself."""
    view.project_free = True
    return view


def _rescoped(iterable, saved_scope):
    """A streamed response's content, produced in the scope its view ran in (the middleware has left it)."""
    outer = scoping.snapshot()
    scoping.restore(saved_scope)
    try:
        yield from iterable
    finally:
        scoping.restore(outer)


class ProjectMiddleware:
    """Every request starts with no project scope (a query of project data raises); pages enter their project just
    before their view runs (unless the view is ``project_free``), the API in its authentication classes below. The
    scope ends with the request; a streamed response is produced in its view's scope."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        outer = scoping.snapshot()
        scoping.restore(None)
        request.project = None
        try:
            response = self.get_response(request)
            if getattr(response, "streaming", False) and getattr(request, "_project_entered", False):
                response.streaming_content = _rescoped(response.streaming_content, scoping.snapshot())
            return response
        finally:
            scoping.restore(outer)

    def process_view(self, request, view_func, view_args, view_kwargs):
        from rest_framework.views import APIView  # not at import: DRF's settings import this module

        api_view = getattr(view_func, "cls", None)
        if api_view is not None and issubclass(api_view, APIView):
            forced = getattr(request, "_force_auth_user", None)  # DRF's test client: no authentication class runs
            if forced is not None:
                enter(request, forced, resolve(request, forced))
            return None  # its authentication classes enter the project (for sessions and tokens alike)
        match = getattr(request, "resolver_match", None)
        if match is not None and match.app_name == "admin":
            # The Django admin works across projects; its views admit only staff (administrators).
            scoping.activate_unscoped()
            return None
        if not getattr(view_func, "project_free", False):
            enter_once(request)
        return None


def _enter_api(request, result):
    view = (getattr(request, "parser_context", None) or {}).get("view")
    if view is not None and request.method.upper() not in view.allowed_methods:
        return result  # the view answers 405 whatever the project: no X-Project lookup (nor its 404) first
    if result is not None:
        user = result[0]
        try:
            project = resolve(request._request, user)
        except Http404 as exc:
            raise NotFound(str(exc)) from None
        enter(request._request, user, project)
    return result


class ProjectTokenAuthentication(ExpiringTokenAuthentication):
    """Token authentication that enters the request's project (``X-Project`` or ``?project=``)."""

    def authenticate(self, request):
        return _enter_api(request, super().authenticate(request))


class ProjectSessionAuthentication(SessionAuthentication):
    def authenticate(self, request):
        return _enter_api(request, super().authenticate(request))


def current(request) -> Project:
    """The request's project; 404 when the user has none (no membership anywhere)."""
    project = getattr(getattr(request, "_request", request), "project", None)
    if project is None:
        raise Http404("You are not a member of any project.")
    return project


# --- objects --------------------------------------------------------------------------------------------------


class InAnotherProject(Http404):
    """The object exists in another project the user is a member of: answered as a 404 that offers the switch."""

    def __init__(self, project: Project, path: str):
        super().__init__(f"This page belongs to the project {project.name}.")
        self.project = project
        self.path = path


def get_in_project_or_404(target: type[models.Model] | QuerySet, request=None, **lookup):
    """The object matching ``lookup`` among the rows the active scope sees (the request's project, and for library
    scales the published versions); otherwise 404, as for a missing object. With ``request``, a logged-in user who
    is a member of the object's own project gets :class:`InAnotherProject` (a 404 offering the switch) instead."""
    if isinstance(target, QuerySet):
        queryset = target
    elif isinstance(target, models.Manager):
        queryset = target.all()
    else:
        queryset = target._default_manager.all()
    try:
        return queryset.get(**lookup)
    except (queryset.model.DoesNotExist, ValueError, TypeError, OverflowError):
        pass
    user = getattr(request, "user", None)
    unscoped = getattr(queryset.model, "unscoped", None)
    if request is not None and unscoped is not None and getattr(user, "is_authenticated", False):
        try:
            other = unscoped.filter(**lookup).first()
        except (ValueError, TypeError, OverflowError):
            other = None
        project_id = project_id_of(other)
        if project_id is not None and project_id != getattr(request.project, "pk", None) and may_enter(user,
                                                                                                       project_id):
            raise InAnotherProject(Project.objects.get(pk=project_id), request.get_full_path())
    raise Http404(f"No {queryset.model._meta.verbose_name} matches the given query.")


class RoleElsewhere(PermissionDenied):
    """A 403 for a user who holds the page's role in other projects of theirs: the page offers to switch."""

    def __init__(self, message: str, projects: list[Project], path: str):
        super().__init__(message)
        self.projects = projects
        self.path = path


def role_required(*roles: str):
    """View decorator: 403 unless the logged-in user holds one of ``roles`` in the request's project; when they hold
    it in other projects of theirs (a bookmark of another project's page), the 403 offers to switch to those."""
    from django.contrib.auth.decorators import login_required

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapper(request, *args, **kwargs):
            if not has_role(request.user, *roles, project=request.project):
                message = _("This page is for: %(roles)s.") % {
                    "roles": ", ".join(str(ROLE_LABELS.get(role, role)) for role in roles)}
                held = (Project.objects.filter(memberships__user=request.user, memberships__role__in=roles)
                        .exclude(pk=getattr(request.project, "pk", None)).distinct().order_by("name"))
                if held:
                    raise RoleElsewhere(message, list(held), request.get_full_path())
                raise PermissionDenied(message)
            return view(request, *args, **kwargs)

        wrapper.required_roles = roles  # for the tests that skip what a role is refused
        return wrapper

    return decorator


def request_has_role(request, *roles: str) -> bool:
    """Whether the request's user holds one of ``roles`` in the request's project."""
    return has_role(request.user, *roles, project=getattr(request, "project", None))


def widen(request, project_ids) -> None:
    """Let a view that lists a person's own work across projects (a physician's rating queue) see rows of
    ``project_ids`` as well as of the request's project, for the rest of the request. Roles are then read in each
    row's own project (:func:`projects.models.project_id_of`), never in the request's."""
    own = getattr(getattr(request, "_request", request), "project", None)
    ids = set(project_ids) | ({own.pk} if own is not None else set())
    scoping.activate(sorted(ids))


def in_project_of(argument: str):
    """Decorator of a service acting on an object (its argument ``argument``): it runs in that object's project's
    scope, whatever scope its caller is in, so what it reads and creates belongs to the object's project."""
    import inspect

    def decorator(func):
        signature = inspect.signature(func)

        @wraps(func)
        def wrapper(*args, **kwargs):
            target = signature.bind(*args, **kwargs).arguments[argument]
            with scoping.in_project(project_id_of(target)):
                return func(*args, **kwargs)

        return wrapper

    return decorator
