"""Roles are Django groups with permission sets. Each app declares its share in its AppConfig
(``role_permissions``), so this module never imports the apps that build on annotation."""

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


def roles_of(user) -> set[str]:
    """The roles a user holds; superusers hold the admin role."""
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_minicex_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        if user.is_superuser:
            cached.add(ADMIN)
        user._minicex_roles = cached
    return cached


def effective_roles(user) -> set[str]:
    """Roles whose work a user sees: admins see every role's work."""
    held = roles_of(user)
    return set(ROLES) if ADMIN in held else held


def has_role(user, *roles: str) -> bool:
    """True when the user holds one of ``roles``; admins hold every role."""
    held = roles_of(user)
    return ADMIN in held or bool(held.intersection(roles))


def assign_role(user, role: str) -> None:
    """Put a user in a role group; admins are also staff (Django admin)."""
    from django.contrib.auth.models import Group

    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    user.groups.add(Group.objects.get(name=role))
    if role == ADMIN and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    user.__dict__.pop("_minicex_roles", None)


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


def users_with_role(role: str) -> Iterable:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.filter(groups__name=role, is_active=True).order_by("username")
