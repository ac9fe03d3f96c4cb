"""The instrument (Scale, ScaleVersion, Dimension, Item), dialogue corpora, campaigns, assignments and labels.

Every model is project data (:mod:`projects.scoping`): its default manager sees the active project only. Scales are
shared as a library: a project sees its own scales and versions, and every published or retired version of any
project's scale; another project's draft is never seen."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.queue import QueuedWork
from annotation.scores import ScoreField, grid, step_text
from annotation.status import Stage, stages
from projects.models import ProjectOwned, ProjectScoped, SoftDeletable
from projects.scoping import path_q


class Language(models.TextChoices):
    """The languages an instrument's texts are written in (its ``_en`` and ``_zh`` fields); each named in its own
    language, as a menu of languages shows them."""
    EN = "en", "English"
    ZH = "zh", "中文"


class Scale(ProjectOwned):
    """A rating instrument, e.g. the LLM-specific Mini-CEX; its content lives in versions.

    ``target`` says what it rates: doctor-patient dialogues, or answers to questions (question-answer items,
    shown with their reference answer when ``show_reference`` is set)."""

    class Target(models.TextChoices):
        DIALOGUE = "dialogue", _("Dialogues")
        ANSWER = "answer", _("Answers to questions")

    slug = models.SlugField(unique=True, verbose_name=_("slug"))
    name_en = models.CharField(max_length=200, verbose_name=_("name (English)"))
    name_zh = models.CharField(max_length=200, blank=True, verbose_name=_("name (Chinese)"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    source = models.TextField(blank=True, help_text=_("Where the instrument comes from (publication, section)."),
                              verbose_name=_("source"))
    target = models.CharField(max_length=10, choices=Target.choices, default=Target.DIALOGUE, verbose_name=_("target"))
    language = models.CharField(max_length=16, choices=Language.choices, default=Language.EN,
                                help_text=_("The language the instrument was written in."), verbose_name=_("language"))
    show_reference = models.BooleanField(default=True, help_text=_("Answers: show raters and judges the reference "
                                                                   "answer when an item has one."),
                                         verbose_name=_("show reference answer"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )

    class Meta:
        verbose_name = _("scale")
        verbose_name_plural = _("scales")
        ordering = ["name_en"]

    def __str__(self) -> str:
        return self.name_en

    @classmethod
    def visible_q(cls, project_ids: tuple[int, ...]) -> models.Q:
        """A project's own scales, and every scale with a published or retired version (the library)."""
        shared = ScaleVersion.unscoped.exclude(status=ScaleVersion.Status.DRAFT).values("scale")
        return path_q("project", project_ids) | models.Q(pk__in=shared)

    def editable_in(self, project) -> bool:
        """Only the owning project changes a scale; other projects use its published versions (the library)."""
        return self.project_id == getattr(project, "pk", project)

    def name(self, lang: str = "en") -> str:
        return (self.name_zh if lang == "zh" else "") or self.name_en or self.name_zh

    @property
    def rates_answers(self) -> bool:
        return self.target == self.Target.ANSWER

    def latest_version(self) -> ScaleVersion | None:
        return self.versions.order_by("-number").first()

    def current_version(self) -> ScaleVersion | None:
        """The newest published version, else the newest draft."""
        published = self.versions.filter(status=ScaleVersion.Status.PUBLISHED).order_by("-number").first()
        return published or self.latest_version()


class LockedVersionError(ValidationError):
    """Raised when something tries to change a version that has been published or used."""


class ScaleVersion(ProjectOwned):
    """One fixed content of a scale. Published or used versions are immutable; edits make a new version.
    A draft is seen only in its project; published and retired versions form a library every project may use."""

    Status = stages(Stage.DRAFT, Stage.PUBLISHED, Stage.RETIRED)

    scale = models.ForeignKey(Scale, on_delete=models.PROTECT, related_name="versions", verbose_name=_("scale"))
    number = models.PositiveIntegerField(verbose_name=_("number"))
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT, verbose_name=_("status"))
    note = models.TextField(blank=True, help_text=_("What changed in this version and why."), verbose_name=_("note"))
    based_on = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                 verbose_name=_("based on"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    published_at = models.DateTimeField(null=True, blank=True, verbose_name=_("published at"))
    locked_at = models.DateTimeField(null=True, blank=True, help_text=_("Set when the version is first used."),
                                     verbose_name=_("locked at"))
    locked_reason = models.CharField(max_length=200, blank=True, verbose_name=_("locked reason"))
    judge_keys = models.JSONField(
        default=dict, blank=True, help_text=_('How a judge\'s own answer keys map to item codes, e.g. {"question 1": '
                                              '"comprehension"}: its answers are read with these keys as well as the '
                                              "codes."), verbose_name=_("judge keys"))

    class Meta:
        verbose_name = _("scale version")
        verbose_name_plural = _("scale versions")
        ordering = ["scale", "number"]
        constraints = [models.UniqueConstraint(fields=["scale", "number"], name="unique_scale_version_number")]

    def __str__(self) -> str:
        return f"{self.scale} v{self.number}"

    @classmethod
    def visible_q(cls, project_ids: tuple[int, ...]) -> models.Q:
        """A project's own versions (drafts included) and every published or retired one; never another project's
        draft."""
        return path_q("project", project_ids) | ~models.Q(status=cls.Status.DRAFT)

    def editable_in(self, project) -> bool:
        """Only the project that drafted a version edits, publishes or copies it."""
        return self.project_id == getattr(project, "pk", project)

    @property
    def is_locked(self) -> bool:
        return self.locked_at is not None

    def ensure_editable(self) -> None:
        if self.is_locked:
            raise LockedVersionError(
                f"{self} is locked ({self.locked_reason or 'in use'}); create a new version to change it."
            )

    def rating_items(self) -> models.QuerySet[Item]:
        """Items answered with a number on a dialogue (or answer), judged and analysed: binary, levels (the
        Mini-CEX's ordinal overall rating) and scale items. Free-text items are :meth:`text_items`."""
        return self.items.filter(response_type__in=Item.SCORED_TYPES)

    def text_items(self) -> models.QuerySet[Item]:
        """Free-comment items: answered on the rating page, never judged or analysed."""
        return self.items.filter(response_type=Item.ResponseType.TEXT)

    def secondary_items(self) -> models.QuerySet[Item]:
        """The items rated for importance in Delphi and validation surveys: binary and scale items and the
        levels of levels items (the Mini-CEX's 4.1-4.3)."""
        return self.items.filter(response_type__in=[Item.ResponseType.BINARY, Item.ResponseType.LEVEL,
                                                    Item.ResponseType.SCALE])


class Dimension(ProjectScoped):
    """A primary item (e.g. 2 Humanistic care) grouping secondary items."""

    project_path = "version__project"

    @classmethod
    def visible_q(cls, project_ids: tuple[int, ...]) -> models.Q:
        """Parts of the versions the project sees (see :meth:`ScaleVersion.visible_q`)."""
        return path_q("version__project", project_ids) | ~models.Q(version__status=ScaleVersion.Status.DRAFT)

    version = models.ForeignKey(ScaleVersion, on_delete=models.CASCADE, related_name="dimensions",
                                verbose_name=_("version"))
    code = models.CharField(max_length=16, verbose_name=_("code"))
    order = models.PositiveIntegerField(default=0, verbose_name=_("order"))
    name_en = models.CharField(max_length=300, verbose_name=_("name (English)"))
    name_zh = models.CharField(max_length=300, blank=True, verbose_name=_("name (Chinese)"))

    class Meta:
        verbose_name = _("dimension")
        verbose_name_plural = _("dimensions")
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


class Item(ProjectScoped):
    """A secondary item with its code, bilingual text and guidance, and how it is answered.

    ``binary``: 1 = done / met, 0 = not. ``ordinal`` (called ``levels`` in instrument files): one choice among the
    item's named levels (children of type ``level`` with a value, e.g. 4.1-4.3 of item 4). ``scale``: a whole
    number from ``scale_min`` to ``scale_max`` (e.g. 0-5, 1-10), some points with anchor labels. ``text``: a free
    comment, kept with the labels but never judged or analysed. Surveys rate binary and scale items and levels
    for importance.
    """

    class ResponseType(models.TextChoices):
        BINARY = "binary", _("Binary (1 = met, 0 = not met)")
        ORDINAL = "ordinal", _("Levels (one of its named levels)")
        SCALE = "scale", _("Scale (a whole number from min to max)")
        TEXT = "text", _("Free text (a comment, not analysed)")
        LEVEL = "level", _("Level of a levels item")

    #: Response types answered with a number (rated, judged, analysed).
    SCORED_TYPES = ("binary", "ordinal", "scale")
    #: Response types a rater answers on the rating page.
    RATED_TYPES = ("binary", "ordinal", "scale", "text")

    project_path = "version__project"

    @classmethod
    def visible_q(cls, project_ids: tuple[int, ...]) -> models.Q:
        """Parts of the versions the project sees (see :meth:`ScaleVersion.visible_q`)."""
        return path_q("version__project", project_ids) | ~models.Q(version__status=ScaleVersion.Status.DRAFT)

    version = models.ForeignKey(ScaleVersion, on_delete=models.CASCADE, related_name="items", verbose_name=_("version"))
    dimension = models.ForeignKey(Dimension, on_delete=models.CASCADE, related_name="items",
                                  verbose_name=_("dimension"))
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="levels",
                               verbose_name=_("parent"))
    code = models.CharField(max_length=16, verbose_name=_("code"))
    order = models.PositiveIntegerField(default=0, verbose_name=_("order"))
    response_type = models.CharField(max_length=10, choices=ResponseType.choices, verbose_name=_("response type"))
    value = models.SmallIntegerField(null=True, blank=True, help_text=_("The value a level stands for (1, 2, 3)."),
                                     verbose_name=_("value"))
    scale_min = models.SmallIntegerField(null=True, blank=True, help_text=_("Scale items: the lowest point."),
                                         verbose_name=_("scale minimum"))
    scale_max = models.SmallIntegerField(null=True, blank=True, help_text=_("Scale items: the highest point."),
                                         verbose_name=_("scale maximum"))
    scale_step = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True,
                                     help_text=_("Scale items: the distance between points (e.g. 0.5); empty = 1."),
                                     verbose_name=_("scale step"))
    anchors = models.JSONField(default=dict, blank=True,
                               help_text=_('Scale items: labels of some points, {"0": {"en": "...", "zh": "..."}}.'),
                               verbose_name=_("anchors"))
    text_en = models.TextField(verbose_name=_("text (English)"))
    text_zh = models.TextField(blank=True, verbose_name=_("text (Chinese)"))
    guidance_en = models.TextField(blank=True, verbose_name=_("guidance (English)"))
    guidance_zh = models.TextField(blank=True, verbose_name=_("guidance (Chinese)"))

    class Meta:
        verbose_name = _("item")
        verbose_name_plural = _("items")
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
        """The item text in ``lang``, else in the other language."""
        return (self.text_zh if lang == "zh" else "") or self.text_en or self.text_zh

    def guidance(self, lang: str = "en") -> str:
        if self.text_zh and not self.text_en:  # a Chinese-only item: its guidance is Chinese too
            return self.guidance_zh or self.guidance_en
        return (self.guidance_zh if lang == "zh" else "") or self.guidance_en

    def allowed_values(self) -> list[int]:
        """Values a dialogue label on this item may take (none for free-text items)."""
        if self.response_type == self.ResponseType.BINARY:
            return [0, 1]
        if self.response_type == self.ResponseType.ORDINAL:
            return sorted(level.value for level in self.levels.all())
        if self.response_type == self.ResponseType.SCALE and self.scale_min is not None and self.scale_max is not None:
            return grid(self.scale_min, self.scale_max, self.scale_step)
        return []

    @property
    def has_step(self) -> bool:
        """A scale whose points are not whole numbers only (e.g. 0-5 in steps of 0.5)."""
        return self.scale_step is not None and self.scale_step != 1

    @property
    def step_text(self) -> str:
        return step_text(self.scale_step) if self.has_step else ""

    def anchor_label(self, value: int | float, lang: str = "en") -> str:
        """The anchor label of a scale point ("" when the point has none)."""
        from annotation.scores import text

        entry = (self.anchors or {}).get(text(value)) or {}
        if isinstance(entry, str):
            return entry
        return (entry.get("zh") if lang == "zh" else "") or entry.get("en") or entry.get("zh") or ""

    def clean(self) -> None:
        if self.response_type == self.ResponseType.LEVEL and (self.parent_id is None or self.value is None):
            raise ValidationError("A level needs its ordinal parent item and a value.")
        if self.response_type != self.ResponseType.LEVEL and self.parent_id is not None:
            raise ValidationError("Only levels have a parent item.")
        if self.response_type == self.ResponseType.SCALE and (
                self.scale_min is None or self.scale_max is None or self.scale_min >= self.scale_max):
            raise ValidationError("A scale item needs a lowest point below its highest point.")


class Corpus(ProjectOwned, SoftDeletable):
    """A named collection of dialogues (imported, generated, or the demo corpus), or of answers to questions
    (question-answer items): ``kind`` is set by the first import and every later import must match it."""

    class Kind(models.TextChoices):
        DIALOGUE = "dialogue", _("Dialogues")
        ANSWER = "answer", _("Answers to questions")

    name = models.CharField(max_length=200, verbose_name=_("name"))
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.DIALOGUE, verbose_name=_("kind"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    is_demo = models.BooleanField(default=False, help_text=_("Written for the demo; not study data."),
                                  verbose_name=_("is demo"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )

    class Meta:
        verbose_name = _("corpus")
        ordering = ["name"]
        verbose_name_plural = _("corpora")
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_corpus_name_per_project")]

    def __str__(self) -> str:
        return self.name


class PrivacyStatus(models.TextChoices):
    CLEAR = "clear", _("Nothing found")
    FLAGGED = "flagged", _("Flagged for review")
    REDACTED = "redacted", _("Reviewed and redacted")
    ACCEPTED = "accepted", _("Reviewed, kept as is")
    EXCLUDED = "excluded", _("Excluded")


class Dialogue(ProjectScoped, SoftDeletable):
    """A doctor-patient dialogue: the patient's self-report and ordered turns.

    A question-answer item (in a corpus of kind "answer") is stored in the same row: an empty self-report and
    the parts as turns with the roles ``question``, ``answer`` and, when there is one, ``reference`` (in that
    order). Privacy filter, redactions, assignment and audit then work on its parts as on turns."""

    project_path = "corpus__project"

    class Split(models.TextChoices):
        TRAIN = "train", _("Train")
        VALIDATION = "validation", _("Validation")
        TEST = "test", _("Test")
        NONE = "", _("None")

    ROLES = ("doctor", "patient", "measurement")
    QA_ROLES = ("question", "answer", "reference")

    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="dialogues", verbose_name=_("corpus"))
    external_id = models.CharField(max_length=200, verbose_name=_("external id"))
    self_report = models.TextField(verbose_name=_("self-report"))
    turns = models.JSONField(
        help_text=_('A list of turns: [{"role": "doctor"|"patient"|"measurement", "text": "..."}].'),
        verbose_name=_("turns"))
    source_model = models.CharField(max_length=200, blank=True, help_text=_("The doctor model that produced it."),
                                    verbose_name=_("source model"))
    language = models.CharField(max_length=16, default="en", verbose_name=_("language"))
    split = models.CharField(max_length=12, choices=Split.choices, blank=True, default="", verbose_name=_("split"))
    meta = models.JSONField(default=dict, blank=True, verbose_name=_("metadata"))
    case = models.CharField(max_length=200, blank=True, default="",
                            help_text=_("The question or patient case this text answers; several texts of one model "
                                        "on the same case are its replicates."), verbose_name=_("case"))
    replicate = models.PositiveSmallIntegerField(null=True, blank=True,
                                                 help_text=_("Which repetition of the model's answer to the case "
                                                             "(1, 2, ...)."), verbose_name=_("replicate"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    privacy_status = models.CharField(max_length=10, choices=PrivacyStatus.choices, default=PrivacyStatus.CLEAR,
                                      db_index=True, verbose_name=_("privacy status"))
    privacy_matches = models.JSONField(default=list, blank=True, help_text=_("What the privacy filter found."),
                                       verbose_name=_("privacy matches"))

    class Meta:
        verbose_name = _("dialogue")
        verbose_name_plural = _("dialogues")
        ordering = ["corpus", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "external_id"], name="unique_dialogue_external_id")
        ]
        indexes = [models.Index(fields=["corpus", "split", "language"])]

    def __str__(self) -> str:
        return f"{self.corpus.name}/{self.external_id}"

    @property
    def is_answer(self) -> bool:
        """A question-answer item rather than a dialogue."""
        return bool(self.turns) and isinstance(self.turns[0], dict) and self.turns[0].get("role") == "question"

    def part(self, role: str) -> str:
        """A question-answer item's question, answer or reference ("" when absent); unredacted."""
        return next((t.get("text", "") for t in self.turns or () if isinstance(t, dict) and t.get("role") == role), "")

    def clean(self) -> None:
        if not isinstance(self.turns, list) or not self.turns:
            raise ValidationError({"turns": "A dialogue needs at least one turn."})
        roles = self.QA_ROLES if self.is_answer else self.ROLES
        for n, turn in enumerate(self.turns, start=1):
            if (not isinstance(turn, dict) or turn.get("role") not in roles
                    or not str(turn.get("text", "")).strip()):
                raise ValidationError({"turns": f"Turn {n} needs a role ({', '.join(roles)}) and text."})


class Redaction(ProjectScoped):
    """A span hidden wherever the dialogue is shown or exported. Kept as history: revoking sets a date."""

    project_path = "dialogue__corpus__project"

    class Source(models.TextChoices):
        FILTER = "filter", _("Privacy filter, confirmed by a coordinator")
        COORDINATOR = "coordinator", _("Coordinator")
        ANNOTATOR = "annotator", _("Annotator while rating")

    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="redactions",
                                 verbose_name=_("dialogue"))
    field = models.CharField(max_length=12, choices=[("self_report", _("Self-report")), ("turn", _("Turn"))],
                             verbose_name=_("field"))
    turn = models.PositiveIntegerField(null=True, blank=True, help_text=_("The turn's index (from 0)."),
                                       verbose_name=_("turn"))
    start = models.PositiveIntegerField(verbose_name=_("start"))
    end = models.PositiveIntegerField(verbose_name=_("end"))
    source = models.CharField(max_length=12, choices=Source.choices, verbose_name=_("source"))
    reason = models.CharField(max_length=300, blank=True, verbose_name=_("reason"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+",
                                   verbose_name=_("created by"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    revoked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("revoked at"))
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("revoked by")
    )

    class Meta:
        verbose_name = _("redaction")
        verbose_name_plural = _("redactions")
        ordering = ["dialogue", "field", "turn", "start"]

    def __str__(self) -> str:
        where = gettext("self-report") if self.field == "self_report" else gettext("turn %(n)s") % {"n": self.turn}
        return f"{self.dialogue} {where} [{self.start}:{self.end}]"

    def as_span(self) -> dict:
        return {"field": self.field, "turn": self.turn, "start": self.start, "end": self.end}


class RaterProfile(models.Model):
    """What the instance knows of a rater beyond their account: external raters come from imported labels and
    cannot log in. (Pseudonyms are per project: :class:`projects.models.Pseudonym`.)"""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="rater_profile",
                                verbose_name=_("user"))
    is_external = models.BooleanField(default=False, verbose_name=_("is external"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("rater profile")
        verbose_name_plural = _("rater profiles")

    def __str__(self) -> str:
        return gettext("%(user)s (external)") % {"user": self.user} if self.is_external else str(self.user)


class Campaign(ProjectOwned, SoftDeletable):
    """Physicians rate (part of) a corpus on one scale version, each dialogue by ``overlap`` raters."""

    class Phase(models.TextChoices):
        TRIAL = "trial", _("Trial")
        FORMAL = "formal", _("Formal")
        IMPORTED = "imported", _("Imported labels")

    Status = stages(Stage.OPEN, Stage.CLOSED)

    class RaterKind(models.TextChoices):
        """Who gave an imported campaign's labels, as the coordinator states it on importing them (the methods text
        says so); empty: not recorded. Campaigns rated in the app are rated by the project's physicians."""
        NOT_RECORDED = "", _("Not recorded")
        PHYSICIANS = "physicians", _("Physicians")
        EXPERTS = "experts", _("Other human experts")
        LLM = "llm", _("LLM scoring iterations")

    name = models.CharField(max_length=200, verbose_name=_("name"))
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="campaigns", verbose_name=_("corpus"))
    scale_version = models.ForeignKey(ScaleVersion, on_delete=models.PROTECT, related_name="campaigns",
                                      verbose_name=_("scale version"))
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.FORMAL, verbose_name=_("phase"))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, verbose_name=_("status"))
    overlap = models.PositiveSmallIntegerField(default=3, help_text=_("Raters per dialogue (k)."),
                                               verbose_name=_("overlap"))
    filter_split = models.CharField(max_length=12, blank=True, verbose_name=_("split (filter)"))
    filter_model = models.CharField(max_length=200, blank=True, verbose_name=_("doctor model (filter)"))
    filter_language = models.CharField(max_length=16, blank=True, verbose_name=_("language (filter)"))
    instructions = models.TextField(blank=True, verbose_name=_("instructions"))
    deadline = models.DateField(null=True, blank=True, verbose_name=_("deadline"))
    seed = models.PositiveIntegerField(default=0, help_text=_("Seeds the order of dialogues in each rater's queue."),
                                       verbose_name=_("seed"))
    rater_kind = models.CharField(max_length=12, choices=RaterKind.choices, default="", blank=True,
                                  help_text=_("Imported labels: who the raters are (physicians, other experts, LLM "
                                              "scoring iterations); empty: not recorded."),
                                  verbose_name=_("rater kind"))
    allow_names = models.BooleanField(default=False, help_text=_("Analysts may see raters' names instead of "
                                                                 "pseudonyms in reports and exports."),
                                      verbose_name=_("allow names"))
    #: The language every rater of the campaign rates in (the rating page's words and the instrument's texts), as a
    #: study protocol fixes it; empty: each rater's own language (account, browser, instance).
    rating_language = models.CharField(
        _("rating language"), max_length=8, choices=Language.choices, blank=True, default="",
        help_text=_("The language every rater sees the rating page and the items in; empty: each rater's own "
                    "language."))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("campaign")
        verbose_name_plural = _("campaigns")
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_campaign_name_per_project")]

    def __str__(self) -> str:
        return self.name

    def population(self) -> models.QuerySet[Dialogue]:
        """The corpus filtered by split/model/language, excluding private ones: what a random sample is drawn from."""
        qs = self.corpus.dialogues.alive().exclude(privacy_status=PrivacyStatus.EXCLUDED)
        if self.filter_split:
            qs = qs.filter(split=self.filter_split)
        if self.filter_model:
            qs = qs.filter(source_model=self.filter_model)
        if self.filter_language:
            qs = qs.filter(language=self.filter_language)
        return qs

    def dialogues(self) -> models.QuerySet[Dialogue]:
        """The dialogues in scope: the :meth:`population`, or the random (or active) sample drawn from it when the
        campaign has one (a sample declared for imported labels does not narrow the scope)."""
        qs = self.population()
        drawn = (RandomSample.objects.filter(campaign=self,
                                             kind__in=[RandomSample.Kind.DRAWN, RandomSample.Kind.ACTIVE])
                 .values_list("dialogues", flat=True).first())
        return qs if drawn is None else qs.filter(pk__in=drawn)


class RandomSample(ProjectScoped):
    """The random sample of a campaign's dialogues that physicians label, or the declaration that imported labels
    come from one: what prediction-powered estimates need (the labelled dialogues a random sample of the population
    the judge scored). Written once by :mod:`annotation.sampling`; a drawn sample is reproducible from ``seed`` and
    ``population`` (:func:`annotation.sampling.draw`)."""

    project_path = "campaign__project"

    class Kind(models.TextChoices):
        DRAWN = "drawn", _("Drawn here with a recorded seed")
        DECLARED = "declared", _("Declared for imported labels")
        ACTIVE = "active", _("Drawn here with a recorded seed, each dialogue with its own probability (active)")

    campaign = models.OneToOneField(Campaign, on_delete=models.PROTECT, related_name="random_sample",
                                    verbose_name=_("campaign"))
    kind = models.CharField(max_length=10, choices=Kind.choices, verbose_name=_("kind"))
    size = models.PositiveIntegerField(help_text=_("Dialogues in the sample."), verbose_name=_("size"))
    seed = models.BigIntegerField(null=True, blank=True, help_text=_("Drawn samples: the seed of the draw."),
                                  verbose_name=_("seed"))
    stratified = models.BooleanField(default=False, help_text=_("Drawn within each doctor model (equal allocation)."),
                                     verbose_name=_("stratified"))
    population = models.JSONField(default=list,
                                  help_text=_("The dialogues it was drawn from: [[id, doctor model], ...] ascending "
                                              "by id."),
                                  verbose_name=_("population"))
    dialogues = models.JSONField(default=list, help_text=_("Ids of the sampled dialogues, ascending."),
                                 verbose_name=_("dialogues"))
    strata = models.JSONField(default=dict, blank=True,
                              help_text=_('Per doctor model: {"population": N, "sample": n}.'),
                              verbose_name=_("strata"))
    probabilities = models.JSONField(default=dict, blank=True,
                                     help_text=_('Active samples: each dialogue\'s inclusion probability, {"id": pi}.'),
                                     verbose_name=_("inclusion probabilities"))
    rule = models.JSONField(default=dict, blank=True,
                            help_text=_("Active samples: the rule (budget, uniform share, pi_min, the judge run whose "
                                        "uncertainty it follows)."), verbose_name=_("rule"))
    note = models.TextField(blank=True, verbose_name=_("note"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("random sample")
        verbose_name_plural = _("random samples")

    def __str__(self) -> str:
        return gettext("random sample of %(campaign)s: %(size)s of %(population)s dialogues (%(kind)s)") % {
            "campaign": self.campaign, "size": self.size, "population": len(self.population),
            "kind": self.get_kind_display()}


class CampaignRater(ProjectScoped):
    """A physician on a campaign, with a team (trial phase) and availability."""

    project_path = "campaign__project"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="raters", verbose_name=_("campaign"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="campaign_roles",
                             verbose_name=_("user"))
    team = models.CharField(max_length=100, blank=True, verbose_name=_("team"))
    capacity = models.PositiveIntegerField(null=True, blank=True,
                                           help_text=_("Most dialogues to give; empty = no limit."),
                                           verbose_name=_("capacity"))
    available_until = models.DateField(null=True, blank=True, verbose_name=_("available until"))
    active = models.BooleanField(default=True, help_text=_("Unavailable raters get no new dialogues."),
                                 verbose_name=_("active"))
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("added by")
    )
    added_at = models.DateTimeField(default=timezone.now, verbose_name=_("added at"))

    class Meta:
        verbose_name = _("campaign rater")
        verbose_name_plural = _("campaign raters")
        ordering = ["campaign", "user__username"]
        constraints = [models.UniqueConstraint(fields=["campaign", "user"], name="unique_campaign_rater")]

    def __str__(self) -> str:
        return gettext("%(rater)s on %(campaign)s") % {"rater": self.user, "campaign": self.campaign}

    def is_available(self, today=None) -> bool:
        today = today or timezone.localdate()
        return self.active and (self.available_until is None or self.available_until >= today)


class Assignment(ProjectScoped, QueuedWork):
    """One rater's work on one dialogue of a campaign (:mod:`annotation.queue`). A rater never gets the same
    dialogue twice."""

    project_path = "campaign__project"

    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="assignments",
                                 verbose_name=_("campaign"))
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="assignments",
                                 verbose_name=_("dialogue"))
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments",
                              verbose_name=_("rater"))
    flagged = models.BooleanField(default=False, verbose_name=_("flagged"))
    flag_note = models.TextField(blank=True, verbose_name=_("flag note"))
    return_note = models.TextField(blank=True, help_text=_("Why the coordinator returned it."),
                                   verbose_name=_("return note"))

    class Meta:
        verbose_name = _("assignment")
        verbose_name_plural = _("assignments")
        ordering = ["campaign", "rater", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "dialogue", "rater"], name="unique_assignment")
        ]
        # (campaign, updated_at): the last change of a campaign's work in one index seek (study fingerprints)
        indexes = [models.Index(fields=["rater", "status"]), models.Index(fields=["campaign", "status"]),
                   models.Index(fields=["campaign", "updated_at"], name="assignment_campaign_changed")]

    def __str__(self) -> str:
        return f"{self.campaign} · {self.dialogue.external_id} · {self.rater}"


class Label(ProjectScoped):
    """A physician's answer to one item on one dialogue. Every change is kept in LabelChange."""

    project_path = "campaign__project"

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="labels",
                                   verbose_name=_("assignment"))
    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="labels", verbose_name=_("campaign"))
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="labels", verbose_name=_("dialogue"))
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="labels",
                              verbose_name=_("rater"))
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="labels", verbose_name=_("item"))
    value = ScoreField(null=True, blank=True, verbose_name=_("value"))
    comment = models.TextField(blank=True, verbose_name=_("comment"))
    client_seq = models.BigIntegerField(default=0, help_text=_("Last applied client sequence: older saves lose."),
                                        verbose_name=_("client sequence"))
    #: The language of the item's text the rater answered (what the rating page showed at the last save; "en" or
    #: "zh"); empty: not recorded (imported labels, saves through the API that do not say).
    item_language = models.CharField(max_length=8, choices=Language.choices, blank=True, default="",
                                     verbose_name=_("item language"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("label")
        verbose_name_plural = _("labels")
        ordering = ["assignment", "item__order"]
        constraints = [models.UniqueConstraint(fields=["assignment", "item"], name="unique_label_per_item")]
        # (campaign, updated_at): the last change of a campaign's labels in one index seek (study fingerprints)
        indexes = [models.Index(fields=["campaign", "item"]), models.Index(fields=["dialogue", "item"]),
                   models.Index(fields=["campaign", "updated_at"], name="label_campaign_changed")]

    def __str__(self) -> str:
        return f"{self.assignment} {self.item.code}={self.value}"


class LabelChange(ProjectScoped):
    """History of a label: who changed it, when, from what to what, and why."""

    project_path = "label__campaign__project"

    class Source(models.TextChoices):
        RATER = "rater", _("Rater")
        IMPORT = "import", _("Import")
        COORDINATOR = "coordinator", _("Coordinator")

    label = models.ForeignKey(Label, on_delete=models.PROTECT, related_name="changes", verbose_name=_("label"))
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("changed by")
    )
    changed_at = models.DateTimeField(default=timezone.now, verbose_name=_("changed at"))
    old_value = ScoreField(null=True, blank=True, verbose_name=_("old value"))
    new_value = ScoreField(null=True, blank=True, verbose_name=_("new value"))
    old_comment = models.TextField(blank=True, verbose_name=_("old comment"))
    new_comment = models.TextField(blank=True, verbose_name=_("new comment"))
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.RATER, verbose_name=_("source"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))

    class Meta:
        verbose_name = _("label change")
        verbose_name_plural = _("label changes")
        ordering = ["label", "changed_at", "id"]

    def __str__(self) -> str:
        return f"{self.label_id}: {self.old_value} -> {self.new_value}"


class GoldLabel(ProjectScoped):
    """The reference answer on a gold dialogue of a trial campaign."""

    project_path = "campaign__project"

    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="gold_labels",
                                 verbose_name=_("campaign"))
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="gold_labels",
                                 verbose_name=_("dialogue"))
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+", verbose_name=_("item"))
    value = ScoreField(verbose_name=_("value"))
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+",
                               verbose_name=_("set by"))
    set_at = models.DateTimeField(default=timezone.now, verbose_name=_("set at"))

    class Meta:
        verbose_name = _("gold label")
        verbose_name_plural = _("gold labels")
        constraints = [models.UniqueConstraint(fields=["campaign", "dialogue", "item"], name="unique_gold_label")]

    def __str__(self) -> str:
        return gettext("gold label %(dialogue)s %(item)s=%(value)s") % {
            "dialogue": self.dialogue.external_id, "item": self.item.code, "value": self.value}


class Adjudication(ProjectScoped):
    """The coordinator's final label for an item of a dialogue, after disagreement. Changes are audited."""

    project_path = "campaign__project"

    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="adjudications",
                                 verbose_name=_("campaign"))
    dialogue = models.ForeignKey(Dialogue, on_delete=models.PROTECT, related_name="adjudications",
                                 verbose_name=_("dialogue"))
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="+", verbose_name=_("item"))
    value = ScoreField(verbose_name=_("value"))
    reason = models.TextField(verbose_name=_("reason"))
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+",
                                   verbose_name=_("decided by"))
    decided_at = models.DateTimeField(default=timezone.now, verbose_name=_("decided at"))

    class Meta:
        verbose_name = _("adjudication")
        verbose_name_plural = _("adjudications")
        constraints = [
            models.UniqueConstraint(fields=["campaign", "dialogue", "item"], name="unique_adjudication")
        ]

    def __str__(self) -> str:
        return gettext("adjudicated %(dialogue)s %(item)s=%(value)s") % {
            "dialogue": self.dialogue.external_id, "item": self.item.code, "value": self.value}
