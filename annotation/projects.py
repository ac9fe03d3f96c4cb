"""Projects: which project a request, a command or a job works in, who may enter it, and its members.

A request's project is, in order: the one the API names (``X-Project`` header or ``?project=``, by name or id; a
project the user may not enter answers 404, as a missing one), the one chosen in the navigation (kept in the
session), else the user's first project ("Default" first). Pages and the API read and write only that project's
rows; the working project (``annotation.models.WORKING_PROJECT``) is what new rows default to and what roles are
read in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import transaction
from django.db.models import Case, IntegerField, QuerySet, Value, When
from django.http import Http404
from drf_spectacular.authentication import SessionScheme
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotFound

from annotation.models import DEFAULT_PROJECT, WORKING_PROJECT, AuditEvent, Membership, Project
from annotation.roles import ADMIN, PROJECT_ROLES, ROLE_LABELS, assign_role, forget_roles, is_admin
from annotation.tokens import ExpiringTokenAuthentication

SESSION_KEY = "minicex_project"
HEADER = "HTTP_X_PROJECT"
PARAM = "project"


class ProjectError(ValueError):
    """A project command or form that cannot be carried out; the message says why."""


def projects_of(user, role: str | None = None) -> QuerySet[Project]:
    """The projects a user may enter ("Default" first, then by name); with ``role``, those where they hold it.
    Administrators may enter every project."""
    if not getattr(user, "is_authenticated", False):
        return Project.objects.none()
    if is_admin(user) and role is None:
        qs = Project.objects.all()
    else:
        memberships = Membership.objects.filter(user=user, **({"role": role} if role else {}))
        qs = Project.objects.filter(pk__in=memberships.values("project"))
    return qs.annotate(first=Case(When(name=DEFAULT_PROJECT, then=Value(0)), default=Value(1),
                                  output_field=IntegerField())).order_by("first", "name")


def find(user, value) -> Project | None:
    """A project the user may enter, named by its name or id; None when there is none (or it is not theirs)."""
    text = str(value).strip()
    qs = projects_of(user)
    if text.isdigit():
        found = qs.filter(pk=int(text)).first()
        if found is not None:
            return found
    return qs.filter(name=text).first()


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
    return projects_of(user).first()


def enter(request, user, project: Project | None) -> None:
    """Make ``project`` the request's project: its rows, its roles and the default for rows it creates."""
    request.project = project
    request._project_entered = True
    user._minicex_project = project.pk if project is not None else None
    forget_roles(user)
    WORKING_PROJECT.set(project.pk if project is not None else None)


def enter_once(request) -> None:
    """Resolve and enter the request's project unless that was done (or nobody is logged in)."""
    user = getattr(request, "user", None)
    if getattr(user, "is_authenticated", False) and not getattr(request, "_project_entered", False):
        enter(request, user, resolve(request, user))


def project_free(view):
    """Mark a view that reads no project: not ``request.project``, no roles, no working project for new rows (the
    label save, which checks the rater's membership in its own locking query). The middleware then does not
    resolve the project, which on the busiest request of the app would be two queries more than the save itself."""
    view.project_free = True
    return view


class ProjectMiddleware:
    """Sets ``request.project`` for pages (after AuthenticationMiddleware) just before their view runs, unless the
    view is ``project_free``; for the API, its authentication classes below do it (sessions and tokens alike).
    The working project is reset after each request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = WORKING_PROJECT.set(None)
        try:
            request.project = None
            return self.get_response(request)
        finally:
            WORKING_PROJECT.reset(token)

    def process_view(self, request, view_func, view_args, view_kwargs):
        from rest_framework.views import APIView  # not at import: DRF's settings import this module

        api_view = getattr(view_func, "cls", None)
        if api_view is not None and issubclass(api_view, APIView):
            return None  # its authentication classes enter the project (for sessions and tokens alike)
        if not getattr(view_func, "project_free", False):
            enter_once(request)
        return None


def _enter_api(request, result):
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


class ProjectSessionScheme(SessionScheme):
    """The API schema describes the project-entering session authentication as the session cookie it is."""

    target_class = "annotation.projects.ProjectSessionAuthentication"


def current(request) -> Project:
    """The request's project; 404 when the user has none (no membership anywhere)."""
    project = getattr(request, "project", None)
    user = getattr(request, "user", None)
    if project is None and getattr(user, "is_authenticated", False):
        # Authenticated after the middleware ran (e.g. DRF's force_authenticate in tests): resolve it now.
        target = getattr(request, "_request", request)
        project = resolve(target, user)
        if project is not None:
            enter(target, user, project)
    if project is None:
        raise Http404("You are not a member of any project.")
    return project


@contextlib.contextmanager
def working_in(project: Project | int | None) -> Iterator[None]:
    """Run code (a command, a task, a test) in a project: rows it creates default to it, roles are read in it."""
    token = WORKING_PROJECT.set(getattr(project, "pk", project))
    try:
        yield
    finally:
        WORKING_PROJECT.reset(token)


# --- commands -------------------------------------------------------------------------------------------------


def add_argument(parser) -> None:
    """``--project NAME`` for a management command."""
    parser.add_argument("--project", default=None,
                        help='The project to work in (default: the only project, or "Default").')


def for_command(name: str | None) -> Project:
    """The project a command works in, made the working project for the rest of the command.
    Default: the only project, else "Default"."""
    from django.core.management.base import CommandError

    if name:
        project = Project.objects.filter(name=name).first()
        if project is None:
            names = ", ".join(Project.objects.values_list("name", flat=True)) or "none"
            raise CommandError(f"No project named {name!r} (projects: {names}). Create it with "
                               f"`manage.py project create {name!r}`.")
    else:
        projects = list(Project.objects.all()[:2])
        single = len(projects) == 1
        project = projects[0] if single else Project.objects.get_or_create(name=DEFAULT_PROJECT)[0]
    WORKING_PROJECT.set(project.pk)
    return project


# --- members --------------------------------------------------------------------------------------------------


def create_project(name: str, *, by=None, description: str = "") -> Project:
    name = name.strip()
    if not name:
        raise ProjectError("A project needs a name.")
    if len(name) > Project._meta.get_field("name").max_length:
        raise ProjectError("A project name has at most 100 characters.")
    if Project.objects.filter(name=name).exists():
        raise ProjectError(f"A project named {name!r} exists already.")
    with transaction.atomic():
        project = Project.objects.create(name=name, description=description, created_by=by)
        AuditEvent.record(by, "project-create", project)
    return project


def may_manage_members(user, project: Project) -> bool:
    """Administrators and the project's coordinators add and remove its members."""
    return is_admin(user) or Membership.objects.filter(user=user, project=project, role="coordinator").exists()


def add_member(project: Project, user, role: str, *, by=None) -> bool:
    """Give ``user`` ``role`` in ``project``; False when they held it already."""
    if role not in PROJECT_ROLES:
        allowed = ", ".join(PROJECT_ROLES)
        hint = " (administrators are instance-wide: Django admin)" if role == ADMIN else ""
        raise ProjectError(f"Unknown project role {role!r}{hint}; roles: {allowed}.")
    if not user.is_active:
        raise ProjectError(f"{user.get_username()} is deactivated.")
    if Membership.objects.filter(project=project, user=user, role=role).exists():
        return False
    with transaction.atomic():
        assign_role(user, role, project, by=by)
        AuditEvent.record(by, "member-add", project, user=user.get_username(), role=role)
    return True


def remove_member(project: Project, user, role: str | None = None, *, by=None) -> int:
    """Take ``user``'s roles (or one role) in ``project`` away; their labels and other work stay. Returns how many
    roles were removed. The last coordinator of a project cannot be removed by a coordinator (only an
    administrator)."""
    memberships = Membership.objects.filter(project=project, user=user, **({"role": role} if role else {}))
    roles = sorted(memberships.values_list("role", flat=True))
    if not roles:
        return 0
    if ("coordinator" in roles and by is not None and not is_admin(by)
            and not Membership.objects.filter(project=project, role="coordinator").exclude(user=user).exists()):
        raise ProjectError("The project's last coordinator can only be removed by an administrator.")
    with transaction.atomic():
        memberships.delete()
        AuditEvent.record(by, "member-remove", project, user=user.get_username(), roles=roles)
    forget_roles(user)
    return len(roles)


def members(project: Project) -> list[dict]:
    """The project's members, one row per user with their roles in it."""
    rows: dict[int, dict] = {}
    for membership in (Membership.objects.filter(project=project).select_related("user")
                       .order_by("user__username", "role")):
        row = rows.setdefault(membership.user_id, {"user": membership.user, "roles": []})
        row["roles"].append(ROLE_LABELS[membership.role])
    return list(rows.values())


# --- scoping --------------------------------------------------------------------------------------------------

DEMO_PROJECT = "Demo (synthetic)"


def scope(queryset: QuerySet, project, path: str = "project") -> QuerySet:
    """``queryset`` restricted to one project's rows; ``path`` leads from the model to its project
    (``"corpus__project"`` for dialogues, ``"campaign__project"`` for labels...)."""
    return queryset.filter(**{path: getattr(project, "pk", project)})


def visible_versions(project, queryset: QuerySet | None = None) -> QuerySet:
    """Scale versions a project may use: its own (drafts included) and every published or retired one (the
    library)."""
    from django.db.models import Q

    from annotation.models import ScaleVersion

    qs = ScaleVersion.objects.all() if queryset is None else queryset
    return qs.filter(Q(project=getattr(project, "pk", project)) | ~Q(status=ScaleVersion.Status.DRAFT))


def visible_scales(project, queryset: QuerySet | None = None) -> QuerySet:
    """Scales a project sees: its own, and those with a published or retired version (the library, read-only)."""
    from django.db.models import Q

    from annotation.models import Scale

    qs = Scale.objects.all() if queryset is None else queryset
    return qs.filter(Q(pk__in=visible_versions(project).values("scale")) | Q(project=getattr(project, "pk", project)))


def demo_project() -> Project:
    """The demo study's own project; the demo accounts are its members."""
    project, created = Project.objects.get_or_create(
        name=DEMO_PROJECT, defaults={"is_demo": True, "description": "The synthetic demo study: every part of it is "
                                                                     "synthetic and marked so."})
    if not project.is_demo:
        Project.objects.filter(pk=project.pk).update(is_demo=True)
    return project
