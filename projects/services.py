"""Projects and their members: create a project, add and remove members (with audit entries), and the project a
management command works in."""

from __future__ import annotations

import contextlib

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from projects import names, scoping
from projects.models import AuditEvent, Membership, Project
from projects.roles import ADMIN, COORDINATOR, PROJECT_ROLES, ROLE_LABELS, assign_role, forget_roles, is_admin

DEMO_PROJECT = "Demo (synthetic)"


class ProjectError(ValueError):
    """A project command or form that cannot be carried out; the message says why."""


def taken(name: str, *, exclude: int | None = None) -> Project | None:
    """The project whose name cannot be told apart from ``name`` (see :mod:`projects.names`), if any."""
    qs = Project.objects.filter(name_key=names.key(name))
    if exclude is not None:
        qs = qs.exclude(pk=exclude)
    return qs.first()


def create_project(name: str, *, by=None, description: str = "", is_demo: bool = False) -> Project:
    try:
        name = names.clean(name)
    except names.NameError_ as exc:
        raise ProjectError(str(exc)) from None
    clash = taken(name)
    if clash is not None:
        same = clash.name == name
        raise ProjectError(f"A project named {clash.name!r} exists already" + ("." if same else
                           f"; {name!r} cannot be told apart from it (case, width or look-alike letters)."))
    try:
        with transaction.atomic():
            project = Project.objects.create(name=name, name_key=names.key(name), description=description,
                                             created_by=by, is_demo=is_demo)
            AuditEvent.record(by, "project-create", project)
    except IntegrityError:
        raise ProjectError(f"A project named {name!r} exists already.") from None
    return project


def may_manage_members(user, project: Project) -> bool:
    """Administrators and the project's coordinators add and remove its members."""
    return is_admin(user) or Membership.objects.filter(user=user, project=project, role=COORDINATOR).exists()


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
    if (COORDINATOR in roles and by is not None and not is_admin(by)
            and not Membership.objects.filter(project=project, role=COORDINATOR).exclude(user=user).exists()):
        raise ProjectError("The project's last coordinator can only be removed by an administrator.")
    with transaction.atomic():
        AuditEvent.record(by, "member-remove", project, user=user.get_username(), roles=roles)
        memberships.delete()
    forget_roles(user)
    return len(roles)


def members(project: Project) -> list[dict]:
    """The project's members, one row per user with their roles in it."""
    rows: dict[int, dict] = {}
    for membership in (Membership.objects.filter(project=project).select_related("user")
                       .order_by("user__username", "role")):
        row = rows.setdefault(membership.user_id, {"user": membership.user, "roles": []})
        row["roles"].append(str(ROLE_LABELS[membership.role]))
    return list(rows.values())


def member_users(project, *, role: str | None = None) -> QuerySet:
    """The active accounts holding a role (or ``role``) in ``project``."""
    from django.contrib.auth import get_user_model

    filters = {"memberships__project": getattr(project, "pk", project)}
    if role:
        filters["memberships__role"] = role
    return get_user_model().objects.filter(is_active=True, **filters).distinct()


def demo_project() -> Project:
    """The demo study's own project; the demo accounts are its members."""
    project = Project.objects.filter(name=DEMO_PROJECT).first()
    if project is None:
        project = create_project(DEMO_PROJECT, is_demo=True, description="The synthetic demo study: every part of "
                                                                         "it is synthetic and marked so.")
    elif not project.is_demo:
        Project.objects.filter(pk=project.pk).update(is_demo=True)
    return project


# --- commands -------------------------------------------------------------------------------------------------


def add_argument(parser) -> None:
    """``--project NAME`` for a management command."""
    parser.add_argument("--project", default=None,
                        help="The project to work in (may be left out when the instance has only one project).")


def for_command(name: str | None) -> Project:
    """The project a command works in: the one named, else the only project; otherwise the command stops and names
    the choices. Never a project created on the way."""
    from django.core.management.base import CommandError

    all_names = list(Project.objects.order_by("name").values_list("name", flat=True))
    listing = ", ".join(repr(n) for n in all_names) or "none yet"
    if name:
        project = Project.objects.filter(name=name).first() or taken(name)
        if project is None:
            raise CommandError(f"No project named {name!r} (projects: {listing}). Create it with "
                               f"`manage.py project create {name!r}`.")
        return project
    if len(all_names) == 1:
        return Project.objects.get(name=all_names[0])
    if not all_names:
        raise CommandError("There is no project yet: create one with `manage.py project create NAME`, then pass "
                           "--project NAME.")
    raise CommandError(f"This instance has several projects ({listing}): name one with --project NAME.")


@contextlib.contextmanager
def command_project(name: str | None):
    """``with command_project(options["project"]) as project:`` the command's body runs in that project."""
    project = for_command(name)
    with scoping.in_project(project):
        yield project


class ProjectCommand:
    """Mix into a management command that works in one project: it takes ``--project NAME`` (optional when the
    instance has only one project), and its ``handle`` runs in that project's scope with ``self.project`` set."""

    project = None

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        add_argument(parser)
        return parser

    def check_arguments(self, **options) -> None:
        """Refuse bad arguments before the project is looked up (a command that must say so without a database)."""

    def execute(self, *args, **options):
        self.check_arguments(**options)
        self.project = for_command(options.get("project"))  # a CommandError names the choices
        with scoping.in_project(self.project):
            return super().execute(*args, **options)


def in_demo_project(func):
    """A demo loader taking ``project`` (default: the demo project) runs in that project's scope."""
    import functools
    import inspect

    signature = inspect.signature(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if bound.arguments.get("project") is None:
            bound.arguments["project"] = demo_project()
        with scoping.in_project(bound.arguments["project"]):
            return func(*bound.args, **bound.kwargs)

    return wrapper
