"""Delphi studies: rounds over scale versions, panelists, their answers, and the focus group's decisions.

Everything here is study data: deletes are soft (SoftDeletable) and changes are recorded in
projects.AuditEvent (who, when, why) or, for answers, in ResponseChange.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from annotation.status import Stage, stages
from projects.models import ProjectOwned, ProjectScoped, SoftDeletable


class Familiarity(models.IntegerChoices):
    """Self-rated familiarity with the topic; the value is also the level used by the threshold."""

    VERY_FAMILIAR = 5, _("Very familiar")
    FAMILIAR = 4, _("Familiar")
    GENERALLY = 3, _("Generally familiar")
    LESS = 2, _("Less familiar")
    VERY_UNFAMILIAR = 1, _("Very unfamiliar")


class Influence(models.TextChoices):
    HIGH = "high", _("High")
    MEDIUM = "medium", _("Medium")
    LOW = "low", _("Low")


class DelphiStudy(ProjectOwned, SoftDeletable):
    """A Delphi study over a scale: rounds, a panel, a consensus rule fixed before round 1."""

    Status = stages(Stage.SETUP, Stage.RUNNING, Stage.VALIDATION, Stage.PUBLISHED, RUNNING=_("Delphi rounds"),
                    PUBLISHED=_("Agreed version published"))

    title = models.CharField(max_length=200, verbose_name=_("title"))
    scale = models.ForeignKey("annotation.Scale", on_delete=models.PROTECT, related_name="delphi_studies",
                              verbose_name=_("scale"))
    base_version = models.ForeignKey("annotation.ScaleVersion", on_delete=models.PROTECT, related_name="+",
                                     verbose_name=_("base version"))
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.SETUP, verbose_name=_("status"))
    invitation = models.TextField(blank=True, help_text=_("The e-mail text sent with each personal link."),
                                  verbose_name=_("invitation text"))
    instructions = models.TextField(blank=True, help_text=_("Shown at the top of the questionnaire."),
                                    verbose_name=_("instructions"))
    # Consensus rule: every condition that is set must hold.
    consensus_min_mean = models.DecimalField(max_digits=4, decimal_places=2, null=True, blank=True, default=3.5,
                                             help_text=_("Mean importance at least this (empty: not used)."),
                                             verbose_name=_("consensus: minimum mean"))
    consensus_max_cv = models.DecimalField(max_digits=4, decimal_places=2, null=True, blank=True, default=0.25,
                                           help_text=_("Coefficient of variation at most this (empty: not used)."),
                                           verbose_name=_("consensus: maximum coefficient of variation"))
    consensus_min_agreement = models.DecimalField(
        max_digits=5, decimal_places=1, null=True, blank=True,
        help_text=_("At least this % of panelists rate the item at or above the agreement level (empty: not "
                    "used)."), verbose_name=_("consensus: minimum agreement (%)"))
    agreement_level = models.PositiveSmallIntegerField(default=4,
                                                       help_text=_("Ratings at or above this agree (4 = 4-5)."),
                                                       verbose_name=_("agreement level"))
    consensus_fixed_at = models.DateTimeField(null=True, blank=True, help_text=_("Last change of the rule."),
                                              verbose_name=_("consensus rule changed at"))
    consensus_locked_at = models.DateTimeField(null=True, blank=True, help_text=_("Set when round 1 opens."),
                                               verbose_name=_("consensus locked at"))
    planned_rounds = models.PositiveSmallIntegerField(default=3, verbose_name=_("planned rounds"))
    familiarity_threshold = models.PositiveSmallIntegerField(
        choices=Familiarity.choices, default=Familiarity.FAMILIAR,
        help_text=_("Panelists who rate their familiarity below this are not invited to the next round."),
        verbose_name=_("familiarity threshold"))
    reminder_days = models.PositiveSmallIntegerField(
        default=7, help_text=_("Remind non-responders every N days (0: no automatic reminders)."),
        verbose_name=_("reminder interval (days)"))
    link_valid_days = models.PositiveSmallIntegerField(default=60, help_text=_("Personal links expire after N days."),
                                                       verbose_name=_("link validity (days)"))
    site_url = models.CharField(max_length=300, blank=True, help_text=_("Base address used in e-mailed links."),
                                verbose_name=_("site URL"))
    agreed_version = models.ForeignKey("annotation.ScaleVersion", null=True, blank=True, on_delete=models.PROTECT,
                                       related_name="+", verbose_name=_("agreed version"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", verbose_name=_("created by"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("Delphi study")
        verbose_name_plural = _("Delphi studies")
        constraints = [models.UniqueConstraint(fields=["project", "title"], name="unique_delphi_title_per_project")]

    def __str__(self) -> str:
        return self.title

    @property
    def consensus_locked(self) -> bool:
        return self.consensus_locked_at is not None

    def consensus_rule(self) -> dict:
        return {
            "min_mean": float(self.consensus_min_mean) if self.consensus_min_mean is not None else None,
            "max_cv": float(self.consensus_max_cv) if self.consensus_max_cv is not None else None,
            "min_agreement": float(self.consensus_min_agreement) if self.consensus_min_agreement is not None else None,
            "agreement_level": self.agreement_level,
        }


class Round(ProjectScoped):
    """One questionnaire round over one scale version; ``validation`` is the final validation survey."""

    project_path = "study__project"

    class Kind(models.TextChoices):
        DELPHI = "delphi", _("Delphi round")
        VALIDATION = "validation", _("Validation survey")

    Status = stages(Stage.DRAFT, Stage.OPEN, Stage.CLOSED, DRAFT=_("Not opened"))

    study = models.ForeignKey(DelphiStudy, on_delete=models.PROTECT, related_name="rounds", verbose_name=_("study"))
    number = models.PositiveSmallIntegerField(verbose_name=_("number"))
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.DELPHI, verbose_name=_("kind"))
    version = models.ForeignKey("annotation.ScaleVersion", on_delete=models.PROTECT, related_name="delphi_rounds",
                                verbose_name=_("version"))
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.DRAFT, verbose_name=_("status"))
    deadline = models.DateField(null=True, blank=True, verbose_name=_("deadline"))
    opened_at = models.DateTimeField(null=True, blank=True, verbose_name=_("opened at"))
    closed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("closed at"))
    closed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="+", verbose_name=_("closed by"))
    close_note = models.TextField(blank=True, verbose_name=_("closing note"))
    next_version = models.ForeignKey("annotation.ScaleVersion", null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+", help_text=_("The version the focus group's decisions produced."),
                                     verbose_name=_("next version"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("round")
        verbose_name_plural = _("rounds")
        ordering = ["study", "number"]
        constraints = [models.UniqueConstraint(fields=["study", "number"], name="unique_delphi_round_number")]

    def __str__(self) -> str:
        label = (gettext("Validation survey") if self.kind == self.Kind.VALIDATION
                 else gettext("Round %(n)s") % {"n": self.number})
        return f"{self.study} · {label}"

    @property
    def label(self) -> str:
        """The round's name in the active language ("Round 2", "第 2 轮"; exports write it in English)."""
        if self.kind == self.Kind.VALIDATION:
            return gettext("Validation survey")
        return gettext("Round %(number)d") % {"number": self.number}

    @property
    def is_validation(self) -> bool:
        return self.kind == self.Kind.VALIDATION


class Panelist(ProjectScoped, SoftDeletable):
    """An expert on a study's panel: invited by e-mail (personal signed link) or as a user account."""

    project_path = "study__project"

    study = models.ForeignKey(DelphiStudy, on_delete=models.PROTECT, related_name="panelists", verbose_name=_("study"))
    pseudonym = models.CharField(max_length=12, help_text=_("Shown in exports instead of the name, e.g. P007."),
                                 verbose_name=_("pseudonym"))
    name = models.CharField(max_length=200, blank=True, verbose_name=_("name"))
    email = models.EmailField(blank=True, verbose_name=_("email"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                             related_name="delphi_panelists", verbose_name=_("user"))
    token_version = models.PositiveIntegerField(default=1, help_text=_("Raising it revokes every link sent so far."),
                                                verbose_name=_("link version"))
    gender = models.CharField(max_length=40, blank=True, verbose_name=_("gender"))
    age = models.PositiveSmallIntegerField(null=True, blank=True, verbose_name=_("age"))
    education = models.CharField(max_length=100, blank=True, verbose_name=_("education"))
    professional_title = models.CharField(max_length=100, blank=True, verbose_name=_("professional title"))
    working_years = models.PositiveSmallIntegerField(null=True, blank=True, verbose_name=_("working years"))
    language = models.CharField(
        max_length=16, blank=True,
        help_text=_("The language the panel link's pages and e-mails are in (a code of settings.LANGUAGES); empty: "
                    "the language the panellist's browser asks for."), verbose_name=_("language"))
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+", verbose_name=_("added by"))
    added_at = models.DateTimeField(default=timezone.now, verbose_name=_("added at"))

    class Meta:
        verbose_name = _("panelist")
        verbose_name_plural = _("panelists")
        ordering = ["study", "pseudonym"]
        constraints = [models.UniqueConstraint(fields=["study", "pseudonym"], name="unique_panelist_pseudonym")]

    def __str__(self) -> str:
        return f"{self.pseudonym} ({self.study})"

    @property
    def contact(self) -> str:
        return self.email or (self.user.email if self.user_id and self.user.email else "")


class Participation(ProjectScoped):
    """A panelist's place in one round: invitation, reminders, self-assessment and completion."""

    project_path = "round__study__project"

    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="participations", verbose_name=_("round"))
    panelist = models.ForeignKey(Panelist, on_delete=models.PROTECT, related_name="participations",
                                 verbose_name=_("panelist"))
    invited_at = models.DateTimeField(null=True, blank=True, verbose_name=_("invited at"))
    last_reminded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last reminded at"))
    reminders_sent = models.PositiveSmallIntegerField(default=0, verbose_name=_("reminders sent"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    completed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("completed at"))
    familiarity = models.PositiveSmallIntegerField(choices=Familiarity.choices, null=True, blank=True,
                                                   verbose_name=_("familiarity"))
    basis_practice = models.CharField(max_length=6, choices=Influence.choices, blank=True,
                                      verbose_name=_("basis: practical experience"))
    basis_theory = models.CharField(max_length=6, choices=Influence.choices, blank=True,
                                    verbose_name=_("basis: theoretical analysis"))
    basis_literature = models.CharField(max_length=6, choices=Influence.choices, blank=True,
                                        verbose_name=_("basis: literature"))
    basis_intuition = models.CharField(max_length=6, choices=Influence.choices, blank=True,
                                       verbose_name=_("basis: intuition"))
    withdrawn_at = models.DateTimeField(null=True, blank=True, verbose_name=_("withdrawn at"))
    withdrawn_reason = models.TextField(blank=True, verbose_name=_("reason for withdrawal"))

    class Meta:
        verbose_name = _("participation")
        verbose_name_plural = _("participations")
        ordering = ["round", "panelist__pseudonym"]
        constraints = [models.UniqueConstraint(fields=["round", "panelist"], name="unique_participation")]

    def __str__(self) -> str:
        return gettext("%(panelist)s in %(round)s") % {"panelist": self.panelist.pseudonym, "round": self.round}

    @property
    def is_complete(self) -> bool:
        return self.completed_at is not None


class Response(ProjectScoped):
    """A panelist's answer on one item in one round: importance 1-5, comment, proposed rewording.
    The focus group records whether the opinion (comment / rewording) is adopted."""

    project_path = "participation__round__study__project"

    class Adoption(models.TextChoices):
        UNDECIDED = "", _("Not decided")
        ADOPT = "adopt", _("Adopt")
        NOT_ADOPT = "not_adopt", _("Not adopt")

    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="responses",
                                      verbose_name=_("participation"))
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="delphi_responses",
                             verbose_name=_("item"))
    importance = models.PositiveSmallIntegerField(null=True, blank=True, verbose_name=_("importance"))
    comment = models.TextField(blank=True, verbose_name=_("comment"))
    proposed_wording = models.TextField(blank=True, verbose_name=_("proposed wording"))
    adoption = models.CharField(max_length=10, choices=Adoption.choices, blank=True, default="",
                                verbose_name=_("adoption"))
    adoption_note = models.TextField(blank=True, verbose_name=_("adoption note"))
    adoption_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+", verbose_name=_("adoption decided by"))
    adoption_at = models.DateTimeField(null=True, blank=True, verbose_name=_("adoption decided at"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("response")
        verbose_name_plural = _("responses")
        ordering = ["participation", "item__order"]
        constraints = [models.UniqueConstraint(fields=["participation", "item"], name="unique_delphi_response")]

    def __str__(self) -> str:
        return f"{self.participation} {self.item.code}={self.importance}"

    @property
    def has_opinion(self) -> bool:
        return bool(self.comment.strip() or self.proposed_wording.strip())


class ResponseChange(ProjectScoped):
    """History of an answer: every save that changed it, with when."""

    project_path = "response__participation__round__study__project"

    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="changes", verbose_name=_("response"))
    changed_at = models.DateTimeField(default=timezone.now, verbose_name=_("changed at"))
    old_importance = models.PositiveSmallIntegerField(null=True, blank=True, verbose_name=_("old importance"))
    new_importance = models.PositiveSmallIntegerField(null=True, blank=True, verbose_name=_("new importance"))
    old_comment = models.TextField(blank=True, verbose_name=_("old comment"))
    new_comment = models.TextField(blank=True, verbose_name=_("new comment"))
    old_wording = models.TextField(blank=True, verbose_name=_("old wording"))
    new_wording = models.TextField(blank=True, verbose_name=_("new wording"))

    class Meta:
        verbose_name = _("response change")
        verbose_name_plural = _("response changes")
        ordering = ["response", "changed_at", "id"]

    def __str__(self) -> str:
        return f"{self.response_id}: {self.old_importance} -> {self.new_importance}"


class Proposal(ProjectScoped, SoftDeletable):
    """A new item a panelist proposes in a round; the focus group adopts it (an Add decision) or not."""

    project_path = "participation__round__study__project"

    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="proposals",
                                      verbose_name=_("participation"))
    dimension_code = models.CharField(max_length=16, blank=True, help_text=_("The dimension it belongs to."),
                                      verbose_name=_("dimension code"))
    text = models.TextField(verbose_name=_("text"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))
    adoption = models.CharField(max_length=10, choices=Response.Adoption.choices, blank=True, default="",
                                verbose_name=_("adoption"))
    adoption_note = models.TextField(blank=True, verbose_name=_("adoption note"))
    adoption_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                    related_name="+", verbose_name=_("adoption decided by"))
    adoption_at = models.DateTimeField(null=True, blank=True, verbose_name=_("adoption decided at"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("proposal")
        verbose_name_plural = _("proposals")
        ordering = ["participation__round", "created_at", "id"]

    def __str__(self) -> str:
        return gettext("proposal by %(panelist)s: %(text)s") % {"panelist": self.participation.panelist.pseudonym,
                                                                 "text": self.text[:60]}


class ItemDecision(ProjectScoped, SoftDeletable):
    """The focus group's decision on an item after a round (Keep / Revise / Delete / Merge / Add; the paper's
    "Reserve" is keep)."""

    project_path = "round__study__project"

    class Action(models.TextChoices):
        RESERVE = "reserve", _("Reserve")
        REVISE = "revise", _("Revise")
        DELETE = "delete", _("Delete")
        MERGE = "merge", _("Merge")
        ADD = "add", _("Add")

    #: How pages and exports name the actions: Shi et al. (LLM-Mini-CEX, appendix) write "Reserve" for keeping an
    #: item as it is, which readers took for "set aside"; the stored value stays "reserve".
    NAMES = {"reserve": pgettext_lazy("a focus-group decision", "Keep"),
             "revise": pgettext_lazy("a focus-group decision", "Revise"),
             "delete": pgettext_lazy("a focus-group decision", "Delete"),
             "merge": pgettext_lazy("a focus-group decision", "Merge"),
             "add": pgettext_lazy("a focus-group decision", "Add")}

    @classmethod
    def action_name(cls, action: str) -> str:
        return str(cls.NAMES.get(str(action), str(action)))

    @classmethod
    def action_choices(cls) -> list[tuple[str, str]]:
        return [(value, cls.action_name(value)) for value, _ in cls.Action.choices]

    def get_action_display(self) -> str:
        return self.action_name(self.action)

    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="decisions", verbose_name=_("round"))
    item = models.ForeignKey("annotation.Item", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                             help_text=_("The item decided on (empty for Add)."), verbose_name=_("item"))
    action = models.CharField(max_length=8, choices=Action.choices, verbose_name=_("action"))
    new_code = models.CharField(max_length=16, blank=True, help_text=_("Code of an added item."),
                                verbose_name=_("new code"))
    dimension_code = models.CharField(max_length=16, blank=True, help_text=_("Dimension of an added item."),
                                      verbose_name=_("dimension code"))
    new_text_en = models.TextField(blank=True, verbose_name=_("new text (English)"))
    new_text_zh = models.TextField(blank=True, verbose_name=_("new text (Chinese)"))
    new_guidance_en = models.TextField(blank=True, verbose_name=_("new guidance (English)"))
    merge_into = models.ForeignKey("annotation.Item", null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", help_text=_("Merge: the item that absorbs this one."),
                                   verbose_name=_("merge into"))
    proposal = models.ForeignKey(Proposal, null=True, blank=True, on_delete=models.PROTECT, related_name="decisions",
                                 verbose_name=_("proposal"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", verbose_name=_("decided by"))
    decided_at = models.DateTimeField(default=timezone.now, verbose_name=_("decided at"))

    class Meta:
        verbose_name = _("item decision")
        verbose_name_plural = _("item decisions")
        ordering = ["round", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "item"],
                                    condition=models.Q(item__isnull=False, deleted_at__isnull=True),
                                    name="unique_item_decision"),
        ]

    def __str__(self) -> str:
        target = self.item.code if self.item_id else self.new_code or gettext("new item")
        return f"{self.round}: {self.get_action_display()} {target}"
