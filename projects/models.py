"""Projects, their members, the audit trail, per-project pseudonyms, and the bases every model of project data
builds on (:class:`ProjectOwned` for rows that name their project, :class:`ProjectScoped` for their children).

The tables of Project, Membership and AuditEvent keep the names they had in ``annotation`` (where they were
created before this app existed)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from projects.scoping import NoProjectError, ProjectManager, UnscopedManager, active_project_id, path_q


class Project(models.Model):
    """A study team's space: it owns corpora, scale drafts, campaigns, judges and their runs, preference and
    Delphi studies, generation and report jobs. Members hold a role per project (:class:`Membership`)."""

    name = models.CharField(max_length=100, unique=True, verbose_name=_("name"))
    name_key = models.CharField(max_length=400, unique=True, editable=False,
                                help_text=_("The name as compared (projects.names.key): no two projects' names can be "
                                            "mistaken for one another."), verbose_name=_("name key"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    is_demo = models.BooleanField(default=False, help_text=_("The synthetic demo study; not study data."),
                                  verbose_name=_("is demo"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )

    class Meta:
        verbose_name = _("project")
        verbose_name_plural = _("projects")
        db_table = "annotation_project"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        from projects.names import key

        self.name_key = key(self.name)
        super().save(*args, **kwargs)


class Membership(models.Model):
    """A user's role in one project: physician, coordinator or analyst (administrators are instance-wide). The
    access-control table itself: read by :mod:`projects.roles` with an explicit project, never scoped."""

    class Role(models.TextChoices):
        PHYSICIAN = "physician", _("Physician (annotator)")
        COORDINATOR = "coordinator", _("Coordinator")
        ANALYST = "analyst", _("Analyst")

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships",
                                verbose_name=_("project"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships",
                             verbose_name=_("user"))
    role = models.CharField(max_length=16, choices=Role.choices, verbose_name=_("role"))
    added_at = models.DateTimeField(default=timezone.now, verbose_name=_("added at"))
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        verbose_name=_("added by")
    )
    last_used_at = models.DateTimeField(null=True, blank=True, help_text=_("When the user last chose to work in the "
                                                                          "project: later logins open it."),
                                        verbose_name=_("last used at"))

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        db_table = "annotation_membership"
        ordering = ["project", "user__username", "role"]
        constraints = [models.UniqueConstraint(fields=["project", "user", "role"], name="unique_project_member_role")]

    def __str__(self) -> str:
        return gettext("%(user)s — %(role)s in %(project)s") % {"user": self.user, "role": self.get_role_display(),
                                                                "project": self.project}


def is_admin(user) -> bool:
    """Instance administrators (the "admin" group, or superusers) see and manage every project."""
    if not getattr(user, "is_authenticated", False):
        return False
    cached = getattr(user, "_minicex_admin", None)
    if cached is None:
        cached = user.is_superuser or user.groups.filter(name="admin").exists()
        user._minicex_admin = cached
    return cached


class ProjectField(models.ForeignKey):
    """The ``project`` of a row of project data. Left empty, it is the active scope's project when that is exactly
    one (a request's, a task's, a command's); otherwise saving raises :class:`NoProjectError` instead of guessing."""

    def pre_save(self, model_instance, add):
        if add and getattr(model_instance, self.attname) is None:
            project = active_project_id()
            if project is None:
                raise NoProjectError(
                    f"A new {model_instance._meta.verbose_name} needs its project: pass project=..., or create it "
                    "inside projects.scoping.in_project(...) (a request, task or command enters its project).")
            setattr(model_instance, self.attname, project)
        return super().pre_save(model_instance, add)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.ForeignKey", args, kwargs


class ProjectScoped(models.Model):
    """Project data: ``objects`` sees only the active scope's project(s) and raises without a scope (see
    :mod:`projects.scoping`); ``unscoped`` crosses projects where that is the point. A model declares how it
    reaches its project once, in ``project_path``."""

    project_path: ClassVar[str] = "project"

    objects = ProjectManager()
    unscoped = UnscopedManager()

    class Meta:
        abstract = True

    @classmethod
    def visible_q(cls, project_ids: tuple[int, ...]) -> Q:
        """The rows a scope of ``project_ids`` sees (library models widen it to published versions)."""
        return path_q(cls.project_path, project_ids)

    @property
    def owning_project_id(self) -> int | None:
        return project_id_of(self)


class ProjectOwned(ProjectScoped):
    """Project data that names its project (corpora, campaigns, studies, judges, runs, jobs...)."""

    project = ProjectField(Project, on_delete=models.PROTECT, related_name="+", verbose_name=_("project"))

    class Meta:
        abstract = True


def project_id_of(obj) -> int | None:
    """The id of the project ``obj`` belongs to, by its model's declared ``project_path`` (None for instance-wide
    objects such as users)."""
    if obj is None:
        return None
    if isinstance(obj, Project):
        return obj.pk
    path = getattr(type(obj), "project_path", None)
    if path is None:
        return getattr(obj, "project_id", None)
    target = obj
    for hop in path.split("__")[:-1]:
        target = getattr(target, hop, None)
        if target is None:
            return None
    return getattr(target, "project_id", None)


class SoftDeletable(models.Model):
    """Study data is never removed: a delete records who, when and why and hides the row."""

    deleted_at = models.DateTimeField(null=True, blank=True, editable=False, verbose_name=_("deleted at"))
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+", editable=False,
        verbose_name=_("deleted by")
    )
    delete_reason = models.TextField(blank=True, editable=False, verbose_name=_("reason for deletion"))

    class Meta:
        abstract = True

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    def soft_delete(self, user, reason: str) -> None:
        if not reason.strip():
            raise ValidationError("A reason is required to delete study data.")
        self.deleted_at = timezone.now()
        self.deleted_by = user
        self.delete_reason = reason.strip()
        self.save(update_fields=["deleted_at", "deleted_by", "delete_reason"])
        AuditEvent.record(user, "delete", self, reason=reason)


class NotAMemberError(PermissionError):
    """An audit entry naming someone who is neither a member of the event's project nor an administrator: the
    action it records should have been refused."""


def _english(target) -> str:
    """The target's name as the record keeps it: in English, whatever language the request that made it reads."""
    with translation.override("en"):
        return str(target)


class AuditEvent(ProjectScoped):
    """Who did what to which object, when and why. Append-only. Its project is the target's (or given); its actor
    is always a member of that project or an administrator."""

    at = models.DateTimeField(default=timezone.now, db_index=True, verbose_name=_("at"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("actor")
    )
    action = models.CharField(max_length=64, verbose_name=_("action"))
    target_type = models.ForeignKey(ContentType, null=True, blank=True, on_delete=models.PROTECT,
                                    verbose_name=_("target type"))
    target_id = models.CharField(max_length=64, blank=True, verbose_name=_("target id"))
    target = GenericForeignKey("target_type", "target_id")
    target_repr = models.CharField(max_length=300, blank=True, verbose_name=_("target repr"))
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                help_text=_("The project the event happened in (empty: instance-wide, e.g. an "
                                            "account)."), verbose_name=_("project"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))
    data = models.JSONField(default=dict, blank=True, verbose_name=_("data"))

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
        db_table = "annotation_auditevent"
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target_repr}"

    @classmethod
    def record(cls, actor, action: str, target=None, reason: str = "", *, project=None, **data) -> AuditEvent:
        kwargs = {}
        if target is not None:
            kwargs = {
                "target_type": ContentType.objects.get_for_model(target),
                "target_id": str(target.pk),
                "target_repr": _english(target)[:300],
            }
        project_id = getattr(project, "pk", project) if project is not None else project_id_of(target)
        user = actor if getattr(actor, "is_authenticated", False) else None
        if (user is not None and project_id is not None and not is_admin(user)
                and not Membership.objects.filter(user=user, project=project_id).exists()):
            raise NotAMemberError(f"{user.get_username()} is not a member of the project of {action!r}.")
        return cls.unscoped.create(actor=user, action=action, reason=reason, data=data, project_id=project_id,
                                   **kwargs)


class Pseudonym(ProjectOwned):
    """A rater's stable pseudonym in one project (random, so it neither counts raters nor links projects): what
    analysts see instead of names unless the campaign allows names."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="pseudonyms",
                             verbose_name=_("user"))
    code = models.CharField(max_length=16, verbose_name=_("code"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("pseudonym")
        verbose_name_plural = _("pseudonyms")
        ordering = ["project", "code"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="unique_pseudonym_per_user"),
            models.UniqueConstraint(fields=["project", "code"], name="unique_pseudonym_code"),
        ]

    def __str__(self) -> str:
        return self.code


class AccountSettings(models.Model):
    """A person's own settings, the same in every project: the language of their pages (``projects.language``).
    One row per user, made when they first choose; no row means the browser's language decides."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account_settings",
                                verbose_name=_("user"))
    language = models.CharField(
        max_length=16, blank=True,
        help_text=_("A code of settings.LANGUAGES (e.g. zh-hans); empty: the language the browser asks for."),
                                verbose_name=_("language"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("account settings")
        verbose_name_plural = _("account settings")

    def __str__(self) -> str:
        return f"{self.user} ({self.language or gettext('browser language')})"


class Invitation(models.Model):
    """An invitation to join a project in a role, sent (or handed) to an e-mail address as a one-time link.

    Made without looking any account up, so inviting tells the coordinator nothing about who has an account on the
    instance; whoever holds the link accepts it, by signing in or by making an account. Only the token's hash is
    stored: the link is shown (or mailed) once. Read by token before its holder is a member, so not scoped."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations",
                                verbose_name=_("project"))
    email = models.EmailField(verbose_name=_("email"))
    role = models.CharField(max_length=16, choices=Membership.Role.choices, verbose_name=_("role"))
    token_hash = models.CharField(max_length=64, unique=True, editable=False, verbose_name=_("token hash"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", verbose_name=_("created by"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    accepted_at = models.DateTimeField(null=True, blank=True, verbose_name=_("accepted at"))
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+", verbose_name=_("accepted by"))
    revoked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("revoked at"))
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", verbose_name=_("revoked by"))

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")
        ordering = ["project", "-created_at", "-id"]

    def __str__(self) -> str:
        return gettext("%(email)s (%(role)s) to %(project)s") % {"email": self.email, "role": self.get_role_display(),
                                                                  "project": self.project}

    @property
    def is_pending(self) -> bool:
        return self.accepted_at is None and self.revoked_at is None and self.expires_at > timezone.now()
