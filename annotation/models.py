"""The instrument (Scale, ScaleVersion, Dimension, Item), dialogue corpora and the audit trail."""

from __future__ import annotations

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone


class SoftDeleteQuerySet(models.QuerySet):
    def alive(self):
        return self.filter(deleted_at__isnull=True)


class SoftDeletable(models.Model):
    """Study data is never removed: a delete records who, when and why and hides the row."""

    deleted_at = models.DateTimeField(null=True, blank=True, editable=False)
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+", editable=False
    )
    delete_reason = models.TextField(blank=True, editable=False)

    objects = SoftDeleteQuerySet.as_manager()

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


class Language(models.TextChoices):
    EN = "en", "English"
    ZH = "zh", "中文"


class Scale(models.Model):
    """A rating instrument, e.g. the LLM-specific Mini-CEX; its content lives in versions."""

    slug = models.SlugField(unique=True)
    name_en = models.CharField(max_length=200)
    name_zh = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["name_en"]

    def __str__(self) -> str:
        return self.name_en

    def name(self, lang: str = "en") -> str:
        return (self.name_zh if lang == "zh" else "") or self.name_en

    def latest_version(self) -> ScaleVersion | None:
        return self.versions.order_by("-number").first()

    def current_version(self) -> ScaleVersion | None:
        """The newest published version, else the newest draft."""
        published = self.versions.filter(status=ScaleVersion.Status.PUBLISHED).order_by("-number").first()
        return published or self.latest_version()


class LockedVersionError(ValidationError):
    """Raised when something tries to change a version that has been published or used."""


class ScaleVersion(models.Model):
    """One fixed content of a scale. Published or used versions are immutable; edits make a new version."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        RETIRED = "retired", "Retired"

    scale = models.ForeignKey(Scale, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT)
    note = models.TextField(blank=True, help_text="What changed in this version and why.")
    based_on = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    published_at = models.DateTimeField(null=True, blank=True)
    locked_at = models.DateTimeField(null=True, blank=True, help_text="Set when the version is first used.")
    locked_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["scale", "number"]
        constraints = [models.UniqueConstraint(fields=["scale", "number"], name="unique_scale_version_number")]

    def __str__(self) -> str:
        return f"{self.scale} v{self.number}"

    @property
    def is_locked(self) -> bool:
        return self.locked_at is not None

    def ensure_editable(self) -> None:
        if self.is_locked:
            raise LockedVersionError(
                f"{self} is locked ({self.locked_reason or 'in use'}); create a new version to change it."
            )

    def rating_items(self) -> models.QuerySet[Item]:
        """Items a rater answers on a dialogue: the binary items and the ordinal overall rating."""
        return self.items.filter(response_type__in=[Item.ResponseType.BINARY, Item.ResponseType.ORDINAL])

    def secondary_items(self) -> models.QuerySet[Item]:
        """The scale's secondary items, rated for importance in Delphi and validation surveys."""
        return self.items.filter(response_type__in=[Item.ResponseType.BINARY, Item.ResponseType.LEVEL])


class Dimension(models.Model):
    """A primary item (e.g. 2 Humanistic care) grouping secondary items."""

    version = models.ForeignKey(ScaleVersion, on_delete=models.CASCADE, related_name="dimensions")
    code = models.CharField(max_length=16)
    order = models.PositiveIntegerField(default=0)
    name_en = models.CharField(max_length=300)
    name_zh = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["version", "order"]
        constraints = [models.UniqueConstraint(fields=["version", "code"], name="unique_dimension_code")]

    def __str__(self) -> str:
        return f"{self.code} {self.name_en}"

    def save(self, *args, **kwargs):
        self.version.ensure_editable()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        self.version.ensure_editable()
        return super().delete(*args, **kwargs)

    def name(self, lang: str = "en") -> str:
        return (self.name_zh if lang == "zh" else "") or self.name_en


class Item(models.Model):
    """A secondary item with its code, bilingual text and guidance, and how it is answered.

    ``binary``: 1 = done / met, 0 = not. ``ordinal``: one choice among the item's levels (children of
    type ``level``, e.g. 4.1-4.3 of item 4). Surveys rate binary items and levels for importance.
    """

    class ResponseType(models.TextChoices):
        BINARY = "binary", "Binary (1 = met, 0 = not met)"
        ORDINAL = "ordinal", "Ordinal (one of its levels)"
        LEVEL = "level", "Level of an ordinal item"

    version = models.ForeignKey(ScaleVersion, on_delete=models.CASCADE, related_name="items")
    dimension = models.ForeignKey(Dimension, on_delete=models.CASCADE, related_name="items")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="levels")
    code = models.CharField(max_length=16)
    order = models.PositiveIntegerField(default=0)
    response_type = models.CharField(max_length=10, choices=ResponseType.choices)
    value = models.SmallIntegerField(null=True, blank=True, help_text="The value a level stands for (1, 2, 3).")
    text_en = models.TextField()
    text_zh = models.TextField(blank=True)
    guidance_en = models.TextField(blank=True)
    guidance_zh = models.TextField(blank=True)

    class Meta:
        ordering = ["version", "order"]
        constraints = [models.UniqueConstraint(fields=["version", "code"], name="unique_item_code")]

    def __str__(self) -> str:
        return f"{self.code} {self.text_en}"

    def save(self, *args, **kwargs):
        self.version.ensure_editable()
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        self.version.ensure_editable()
        return super().delete(*args, **kwargs)

    def text(self, lang: str = "en") -> str:
        return (self.text_zh if lang == "zh" else "") or self.text_en

    def guidance(self, lang: str = "en") -> str:
        return (self.guidance_zh if lang == "zh" else "") or self.guidance_en

    def allowed_values(self) -> list[int]:
        """Values a dialogue label on this item may take."""
        if self.response_type == self.ResponseType.BINARY:
            return [0, 1]
        if self.response_type == self.ResponseType.ORDINAL:
            return sorted(level.value for level in self.levels.all())
        return []

    def clean(self) -> None:
        if self.response_type == self.ResponseType.LEVEL and (self.parent_id is None or self.value is None):
            raise ValidationError("A level needs its ordinal parent item and a value.")
        if self.response_type != self.ResponseType.LEVEL and self.parent_id is not None:
            raise ValidationError("Only levels have a parent item.")


class Corpus(SoftDeletable):
    """A named collection of dialogues (imported, generated, or the demo corpus)."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    is_demo = models.BooleanField(default=False, help_text="Written for the demo; not study data.")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name


class Dialogue(SoftDeletable):
    """A doctor-patient dialogue: the patient's self-report and ordered turns."""

    class Split(models.TextChoices):
        TRAIN = "train", "Train"
        VALIDATION = "validation", "Validation"
        TEST = "test", "Test"
        NONE = "", "None"

    ROLES = ("doctor", "patient", "measurement")

    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="dialogues")
    external_id = models.CharField(max_length=200)
    self_report = models.TextField()
    turns = models.JSONField(help_text='[{"role": "doctor"|"patient"|"measurement", "text": "..."}]')
    source_model = models.CharField(max_length=200, blank=True, help_text="The doctor model that produced it.")
    language = models.CharField(max_length=16, default="en")
    split = models.CharField(max_length=12, choices=Split.choices, blank=True, default="")
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["corpus", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "external_id"], name="unique_dialogue_external_id")
        ]
        indexes = [models.Index(fields=["corpus", "split", "language"])]

    def __str__(self) -> str:
        return f"{self.corpus.name}/{self.external_id}"

    def clean(self) -> None:
        if not isinstance(self.turns, list) or not self.turns:
            raise ValidationError({"turns": "A dialogue needs at least one turn."})
        for n, turn in enumerate(self.turns, start=1):
            if (not isinstance(turn, dict) or turn.get("role") not in self.ROLES
                    or not str(turn.get("text", "")).strip()):
                raise ValidationError({"turns": f"Turn {n} needs a role ({', '.join(self.ROLES)}) and text."})


class AuditEvent(models.Model):
    """Who did what to which object, when and why. Append-only."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    action = models.CharField(max_length=64)
    target_type = models.ForeignKey(ContentType, null=True, blank=True, on_delete=models.PROTECT)
    target_id = models.CharField(max_length=64, blank=True)
    target = GenericForeignKey("target_type", "target_id")
    target_repr = models.CharField(max_length=300, blank=True)
    reason = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target_repr}"

    @classmethod
    def record(cls, actor, action: str, target=None, reason: str = "", **data) -> AuditEvent:
        kwargs = {}
        if target is not None:
            kwargs = {
                "target_type": ContentType.objects.get_for_model(target),
                "target_id": str(target.pk),
                "target_repr": str(target)[:300],
            }
        user = actor if getattr(actor, "is_authenticated", False) else None
        return cls.objects.create(actor=user, action=action, reason=reason, data=data, **kwargs)
