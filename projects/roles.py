"""Roles. Physician, coordinator and analyst are held per project (:class:`projects.models.Membership`); the
administrator is instance-wide (the admin group, or a superuser) and sees every project.

A role is always read in a named project: the project of the object at hand (:func:`projects.models.project_id_of`)
or, on a page about the request's project, ``request.project`` (which equals the object's, because objects are only
found in the request's project). There is no "current project" to fall back on.

The groups keep the Django permission sets each app declares in its AppConfig (``role_permissions``), so this
module never imports the apps that build on projects."""

from __future__ import annotations

from collections.abc import Iterable

from django.apps import apps
from django.utils.translation import gettext_lazy as _

from projects.models import Membership, is_admin

PHYSICIAN = "physician"
COORDINATOR = "coordinator"
ANALYST = "analyst"
ADMIN = "admin"
ROLES = (PHYSICIAN, COORDINATOR, ANALYST, ADMIN)
PROJECT_ROLES = (PHYSICIAN, COORDINATOR, ANALYST)
ROLE_LABELS = {
    PHYSICIAN: _("Physician (annotator)"),
    COORDINATOR: _("Coordinator"),
    ANALYST: _("Analyst"),
    ADMIN: _("Administrator"),
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


def _project_id(project) -> int | None:
    return getattr(project, "pk", project)


def roles_in(user, project) -> set[str]:
    """The roles a user holds in one project (a Project or its id); administrators hold the admin role as well.
    Cached on the user object per project for the rest of the request."""
    if not getattr(user, "is_authenticated", False) or project is None:
        return {ADMIN} if is_admin(user) else set()
    project_id = _project_id(project)
    cache = user.__dict__.setdefault("_minicex_roles", {})
    held = cache.get(project_id)
    if held is None:
        held = set(Membership.objects.filter(user=user, project=project_id).values_list("role", flat=True))
        if is_admin(user):
            held.add(ADMIN)
        cache[project_id] = held
    return held


def has_role(user, *roles: str, project) -> bool:
    """True when the user holds one of ``roles`` in ``project`` (a Project or its id; the object's project, see
    the module docstring); administrators hold every role."""
    held = roles_in(user, project)
    return ADMIN in held or bool(held.intersection(roles))


def effective_roles(user, project) -> set[str]:
    """Roles whose work a user sees in a project: administrators see every role's work."""
    held = roles_in(user, project)
    return set(ROLES) if ADMIN in held else held


def forget_roles(user) -> None:
    for name in ("_minicex_roles", "_minicex_admin"):
        user.__dict__.pop(name, None)


def assign_role(user, role: str, project=None, *, by=None) -> None:
    """Give a user a role: administrator instance-wide (also staff, for the Django admin), any other role in one
    project (default: the active scope's one project; there is no default project)."""
    from django.contrib.auth.models import Group

    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    if role == ADMIN:
        user.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
    else:
        from projects.scoping import chosen_project_id

        Membership.objects.get_or_create(project_id=chosen_project_id(project), user=user, role=role,
                                         defaults={"added_by": by})
    forget_roles(user)


def users_with_role(role: str, project) -> Iterable:
    """Active users holding ``role`` in a project."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(memberships__role=role, memberships__project=_project_id(project),
                                           is_active=True).distinct().order_by("username")
