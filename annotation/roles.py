"""Roles. Physician, coordinator and analyst are held per project (``Membership``); the administrator is
instance-wide (the admin group, or a superuser) and sees every project. The groups keep the Django permission sets
each app declares in its AppConfig (``role_permissions``), so this module never imports the apps that build on
annotation."""

from __future__ import annotations

from collections.abc import Iterable

from django.apps import apps

PHYSICIAN = "physician"
COORDINATOR = "coordinator"
ANALYST = "analyst"
ADMIN = "admin"
ROLES = (PHYSICIAN, COORDINATOR, ANALYST, ADMIN)
ROLE_LABELS = {
    PHYSICIAN: "Physician (annotator)",
    COORDINATOR: "Coordinator",
    ANALYST: "Analyst",
    ADMIN: "Administrator",
}


def declared_permissions() -> dict[str, set[str]]:
    """Role -> {"app_label.codename"} collected from every app's ``role_permissions``."""
    result: dict[str, set[str]] = {role: set() for role in ROLES}
    for config in apps.get_app_configs():
        for role, codenames in getattr(config, "role_permissions", {}).items():
            result[role].update(f"{config.label}.{codename}" for codename in codenames)
    return result


def sync_roles(verbosity: int = 0) -> None:
    """Create the role groups and give them exactly their declared permissions (idempotent)."""
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Group, Permission

    for config in apps.get_app_configs():
        create_permissions(config, verbosity=0)
    declared = declared_permissions()
    for role in ROLES:
        group, _ = Group.objects.get_or_create(name=role)
        if role == ADMIN:
            perms = Permission.objects.all()
        else:
            perms = [_permission(Permission, name) for name in sorted(declared[role])]
        group.permissions.set(perms)
        if verbosity:
            print(f"role {role}: {len(perms)} permissions")


def _permission(model, dotted: str):
    app_label, codename = dotted.split(".", 1)
    try:
        return model.objects.get(content_type__app_label=app_label, codename=codename)
    except model.DoesNotExist:
        raise LookupError(f"role permission {dotted} does not exist") from None


PROJECT_ROLES = (PHYSICIAN, COORDINATOR, ANALYST)


def is_admin(user) -> bool:
    """Instance administrators (the admin group, or superusers) see and manage every project."""
    if not getattr(user, "is_authenticated", False):
        return False
    cached = getattr(user, "_minicex_admin", None)
    if cached is None:
        cached = user.is_superuser or user.groups.filter(name=ADMIN).exists()
        user._minicex_admin = cached
    return cached


def _project_id(project) -> int | None:
    return getattr(project, "pk", project)


def working_project_id(user=None) -> int | None:
    """The project a user's rights are read in: the request's (``annotation.projects``), else the working one."""
    from annotation.models import DEFAULT_PROJECT, WORKING_PROJECT, Project

    project = getattr(user, "_minicex_project", None) if user is not None else None
    if project is None:
        project = WORKING_PROJECT.get()
    if project is None:
        project = Project.objects.filter(name=DEFAULT_PROJECT).values_list("pk", flat=True).first()
    return project


def roles_in(user, project) -> set[str]:
    """The roles a user holds in one project (admins: the admin role as well)."""
    from annotation.models import Membership

    if not getattr(user, "is_authenticated", False):
        return set()
    held = set(Membership.objects.filter(user=user, project=_project_id(project)).values_list("role", flat=True))
    if is_admin(user):
        held.add(ADMIN)
    return held


def roles_of(user) -> set[str]:
    """The roles a user holds in the working project; administrators hold the admin role everywhere."""
    if not getattr(user, "is_authenticated", False):
        return set()
    project = working_project_id(user)
    cached = getattr(user, "_minicex_roles", None)
    if cached is None or cached[0] != project:
        cached = (project, roles_in(user, project) if project is not None else ({ADMIN} if is_admin(user) else set()))
        user._minicex_roles = cached
    return cached[1]


def effective_roles(user) -> set[str]:
    """Roles whose work a user sees: admins see every role's work."""
    held = roles_of(user)
    return set(ROLES) if ADMIN in held else held


def has_role(user, *roles: str) -> bool:
    """True when the user holds one of ``roles`` in the working project; admins hold every role."""
    held = roles_of(user)
    return ADMIN in held or bool(held.intersection(roles))


def forget_roles(user) -> None:
    for name in ("_minicex_roles", "_minicex_admin"):
        user.__dict__.pop(name, None)


def assign_role(user, role: str, project=None, *, by=None) -> None:
    """Give a user a role: administrator instance-wide (also staff, for the Django admin), any other role in one
    project (default: the working project, else "Default")."""
    from django.contrib.auth.models import Group

    from annotation.models import Membership, default_project_id

    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    if role == ADMIN:
        user.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
    else:
        project_id = _project_id(project) if project is not None else default_project_id()
        Membership.objects.get_or_create(project_id=project_id, user=user, role=role, defaults={"added_by": by})
    forget_roles(user)


def role_required(*roles: str):
    """View decorator: 403 unless the logged-in user holds one of ``roles``."""
    from functools import wraps

    from django.contrib.auth.decorators import login_required
    from django.core.exceptions import PermissionDenied

    def decorator(view):
        @wraps(view)
        @login_required
        def wrapper(request, *args, **kwargs):
            if not has_role(request.user, *roles):
                raise PermissionDenied(f"This page is for: {', '.join(roles)}.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def users_with_role(role: str, project=None) -> Iterable:
    """Active users holding ``role`` in a project (default: the working project)."""
    from django.contrib.auth import get_user_model

    project_id = _project_id(project) if project is not None else working_project_id()
    return get_user_model().objects.filter(memberships__role=role, memberships__project=project_id,
                                           is_active=True).distinct().order_by("username")
