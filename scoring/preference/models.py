"""Double-blind preference studies (DESIGN.md section 3, Zhang et al., AutoMedEval, appendix E).

A study compares candidates of two or more sources (judge runs, doctor models, imported answers) on the same
items. Each pair of candidates of one item is a comparison; raters (physicians) and LLM judges answer it per
criterion with A better / tie / B better. Which candidate is shown as "A" is randomised per rater and task and
recorded (``PreferenceTask.swapped``); the identity of the sources is sealed until the coordinator locks the study
and unblinds it (an audited action).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.queue import QueuedWork
from annotation.status import Stage, stages
from projects.models import ProjectOwned, ProjectScoped, SoftDeletable
from scoring.llm.models import EngineJob, WorkUnit


class PreferenceStudy(ProjectOwned, SoftDeletable):
    """A double-blind side-by-side comparison study."""

    class Kind(models.TextChoices):
        EVALUATION = "evaluation", _("Judges' evaluations of the same dialogue")
        DIALOGUE = "dialogue", _("Doctor models' dialogues on the same case")
        ANSWER = "answer", _("Free-text answers to the same question")

    Status = stages(Stage.DRAFT, Stage.OPEN, Stage.LOCKED, Stage.UNBLINDED, DRAFT=_("Draft (setting up)"),
                    OPEN=_("Open (raters answering)"), LOCKED=_("Locked (answers final, identities sealed)"))

    name = models.CharField(max_length=200, verbose_name=_("name"))
    kind = models.CharField(max_length=12, choices=Kind.choices, verbose_name=_("kind"))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT, db_index=True,
                              verbose_name=_("status"))
    instructions = models.TextField(blank=True, help_text=_("Shown to raters above every task."),
                                    verbose_name=_("instructions"))
    overlap = models.PositiveSmallIntegerField(default=3, help_text=_("Raters per comparison."),
                                               verbose_name=_("overlap"))
    seed = models.PositiveIntegerField(default=0, help_text=_("Seeds side randomisation and assignment."),
                                       verbose_name=_("seed"))
    corpus = models.ForeignKey("annotation.Corpus", null=True, blank=True, on_delete=models.PROTECT,
                               related_name="+", verbose_name=_("corpus"))
    group_key = models.CharField(max_length=100, blank=True, default="case_id",
                                 help_text=_("Dialogue metadata key grouping dialogues of the same case."),
                                 verbose_name=_("group key"))
    item_codes = models.JSONField(default=list, blank=True,
                                  help_text=_("Evaluation studies: the scale items shown (empty = all)."),
                                  verbose_name=_("item codes"))
    allow_names = models.BooleanField(default=False, help_text=_("Analysts may see raters' names."),
                                      verbose_name=_("allow names"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", verbose_name=_("created by"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    opened_at = models.DateTimeField(null=True, blank=True, verbose_name=_("opened at"))
    locked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("locked at"))
    locked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="+", verbose_name=_("locked by"))
    unblinded_at = models.DateTimeField(null=True, blank=True, verbose_name=_("unblinded at"))
    unblinded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+", verbose_name=_("unblinded by"))
    unblind_reason = models.TextField(blank=True, verbose_name=_("reason for unblinding"))

    class Meta:
        verbose_name = _("preference study")
        ordering = ["-created_at", "-id"]
        verbose_name_plural = _("preference studies")
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_preference_name_per_project")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_unblinded(self) -> bool:
        return self.status == self.Status.UNBLINDED and self.unblinded_at is not None

    @property
    def is_editable(self) -> bool:
        return self.status == self.Status.DRAFT and not self.is_deleted


class PreferenceCriterion(ProjectScoped):
    """One question answered A better / tie / B better (e.g. knowledge correctness)."""

    project_path = "study__project"

    study = models.ForeignKey(PreferenceStudy, on_delete=models.CASCADE, related_name="criteria",
                              verbose_name=_("study"))
    code = models.SlugField(max_length=40, verbose_name=_("code"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    description = models.TextField(blank=True, verbose_name=_("description"))
    order = models.PositiveIntegerField(default=0, verbose_name=_("order"))

    class Meta:
        verbose_name = _("preference criterion")
        ordering = ["study", "order", "id"]
        constraints = [models.UniqueConstraint(fields=["study", "code"], name="unique_preference_criterion")]
        verbose_name_plural = _("preference criteria")

    def __str__(self) -> str:
        return f"{self.study}: {self.name}"


class PreferenceSource(ProjectScoped):
    """Where candidates come from: a judge run, a doctor model, or an imported answer source. ``label`` is the
    sealed identity; it is shown nowhere before the study is unblinded."""

    project_path = "study__project"

    study = models.ForeignKey(PreferenceStudy, on_delete=models.CASCADE, related_name="sources",
                              verbose_name=_("study"))
    label = models.CharField(max_length=200, verbose_name=_("label"))
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))
    judge_run = models.ForeignKey("scoring.JudgeRun", null=True, blank=True, on_delete=models.PROTECT,
                                  related_name="+", verbose_name=_("judge run"))
    tells = models.JSONField(default=list, blank=True, help_text=_("Strings that would reveal the source "
                                                                   "(model names, run ids); stripped from content."),
                             verbose_name=_("tells"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("preference source")
        verbose_name_plural = _("preference sources")
        ordering = ["study", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["study", "label"], name="unique_preference_source")]

    def __str__(self) -> str:
        return gettext("source %(position)s of %(study)s") % {"position": self.position, "study": self.study}


class PreferenceItem(ProjectScoped, SoftDeletable):
    """What the candidates answer: a question, a case (self-report) or the dialogue judges evaluated."""

    project_path = "study__project"

    study = models.ForeignKey(PreferenceStudy, on_delete=models.CASCADE, related_name="items", verbose_name=_("study"))
    external_id = models.CharField(max_length=200, verbose_name=_("external id"))
    prompt = models.TextField(blank=True, help_text=_("The question or case shown above both candidates."),
                              verbose_name=_("prompt"))
    reference = models.TextField(blank=True, help_text=_("A reference answer, if any (shown to raters)."),
                                 verbose_name=_("reference answer"))
    dialogue = models.ForeignKey("annotation.Dialogue", null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+", help_text=_("Evaluation studies: the dialogue both judges rated."),
                                 verbose_name=_("dialogue"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("preference item")
        verbose_name_plural = _("preference items")
        ordering = ["study", "external_id"]
        constraints = [models.UniqueConstraint(fields=["study", "external_id"], name="unique_preference_item")]

    def __str__(self) -> str:
        return f"{self.study} / {self.external_id}"


class PreferenceCandidate(ProjectScoped):
    """One source's candidate for an item. ``content`` is the blinded snapshot raters see; ``original`` keeps
    what was imported or read (never shown before unblinding)."""

    project_path = "item__study__project"

    item = models.ForeignKey(PreferenceItem, on_delete=models.CASCADE, related_name="candidates",
                             verbose_name=_("item"))
    source = models.ForeignKey(PreferenceSource, on_delete=models.PROTECT, related_name="candidates",
                               verbose_name=_("source"))
    dialogue = models.ForeignKey("annotation.Dialogue", null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+", verbose_name=_("dialogue"))
    content = models.JSONField(default=dict, verbose_name=_("content"))
    original = models.JSONField(default=dict, blank=True, verbose_name=_("original"))

    class Meta:
        verbose_name = _("preference candidate")
        verbose_name_plural = _("preference candidates")
        ordering = ["item", "source__position"]
        constraints = [models.UniqueConstraint(fields=["item", "source"], name="unique_preference_candidate")]

    def __str__(self) -> str:
        return gettext("candidate %(id)s of %(item)s") % {"id": self.pk, "item": self.item}


class PreferencePair(ProjectScoped):
    """Two candidates of the same item compared; ``first`` belongs to the source listed first in the study."""

    project_path = "study__project"

    study = models.ForeignKey(PreferenceStudy, on_delete=models.CASCADE, related_name="pairs", verbose_name=_("study"))
    item = models.ForeignKey(PreferenceItem, on_delete=models.CASCADE, related_name="pairs", verbose_name=_("item"))
    first = models.ForeignKey(PreferenceCandidate, on_delete=models.PROTECT, related_name="+", verbose_name=_("first"))
    second = models.ForeignKey(PreferenceCandidate, on_delete=models.PROTECT, related_name="+",
                               verbose_name=_("second"))

    class Meta:
        verbose_name = _("preference pair")
        verbose_name_plural = _("preference pairs")
        ordering = ["study", "item", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "first", "second"], name="unique_preference_pair")]

    def __str__(self) -> str:
        return gettext("pair %(id)s of %(item)s") % {"id": self.pk, "item": self.item}


class PreferenceRater(ProjectScoped):
    """A physician on a study."""

    project_path = "study__project"

    study = models.ForeignKey(PreferenceStudy, on_delete=models.CASCADE, related_name="raters", verbose_name=_("study"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+",
                             verbose_name=_("user"))
    capacity = models.PositiveIntegerField(null=True, blank=True, help_text=_("Most comparisons; empty = no limit."),
                                           verbose_name=_("capacity"))
    active = models.BooleanField(default=True, verbose_name=_("active"))
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="+", verbose_name=_("added by"))
    added_at = models.DateTimeField(default=timezone.now, verbose_name=_("added at"))

    class Meta:
        verbose_name = _("preference rater")
        verbose_name_plural = _("preference raters")
        ordering = ["study", "user__username"]
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="unique_preference_rater")]

    def __str__(self) -> str:
        return gettext("%(rater)s on %(study)s") % {"rater": self.user, "study": self.study}


class PreferenceTask(ProjectScoped, QueuedWork):
    """One rater's comparison of one pair. ``swapped`` records the side randomisation: False shows the pair's
    first candidate as A, True shows the second as A (:mod:`annotation.queue`)."""

    project_path = "study__project"

    study = models.ForeignKey(PreferenceStudy, on_delete=models.PROTECT, related_name="tasks", verbose_name=_("study"))
    pair = models.ForeignKey(PreferencePair, on_delete=models.PROTECT, related_name="tasks", verbose_name=_("pair"))
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="preference_tasks",
                              verbose_name=_("rater"))
    swapped = models.BooleanField(default=False, verbose_name=_("swapped"))

    class Meta:
        verbose_name = _("preference task")
        verbose_name_plural = _("preference tasks")
        ordering = ["study", "rater", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["study", "pair", "rater"], name="unique_preference_task")]
        indexes = [models.Index(fields=["rater", "status"])]

    def __str__(self) -> str:
        return gettext("task %(id)s (%(study)s)") % {"id": self.pk, "study": self.study}


class PreferenceAnswer(ProjectScoped):
    """A rater's choice on one criterion of a task, in side terms (A / tie / B)."""

    project_path = "task__study__project"

    class Choice(models.TextChoices):
        A = "A", _("A is better")
        TIE = "tie", _("Tie")
        B = "B", _("B is better")

    task = models.ForeignKey(PreferenceTask, on_delete=models.PROTECT, related_name="answers", verbose_name=_("task"))
    criterion = models.ForeignKey(PreferenceCriterion, on_delete=models.PROTECT, related_name="+",
                                  verbose_name=_("criterion"))
    choice = models.CharField(max_length=3, choices=Choice.choices, blank=True, verbose_name=_("choice"))
    comment = models.TextField(blank=True, verbose_name=_("comment"))
    client_seq = models.BigIntegerField(default=0, verbose_name=_("client sequence"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("preference answer")
        verbose_name_plural = _("preference answers")
        ordering = ["task", "criterion__order"]
        constraints = [models.UniqueConstraint(fields=["task", "criterion"], name="unique_preference_answer")]

    def __str__(self) -> str:
        return f"{self.task_id} {self.criterion_id}={self.choice}"


class PreferenceAnswerChange(ProjectScoped):
    """History of an answer: who changed it, when, from what to what, and why."""

    project_path = "answer__task__study__project"

    answer = models.ForeignKey(PreferenceAnswer, on_delete=models.PROTECT, related_name="changes",
                               verbose_name=_("answer"))
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", verbose_name=_("changed by"))
    changed_at = models.DateTimeField(default=timezone.now, verbose_name=_("changed at"))
    old_choice = models.CharField(max_length=3, blank=True, verbose_name=_("old choice"))
    new_choice = models.CharField(max_length=3, blank=True, verbose_name=_("new choice"))
    old_comment = models.TextField(blank=True, verbose_name=_("old comment"))
    new_comment = models.TextField(blank=True, verbose_name=_("new comment"))
    reason = models.TextField(blank=True, verbose_name=_("reason"))

    class Meta:
        verbose_name = _("preference answer change")
        verbose_name_plural = _("preference answer changes")
        ordering = ["answer", "changed_at", "id"]

    def __str__(self) -> str:
        return f"{self.answer_id}: {self.old_choice or '-'} -> {self.new_choice or '-'}"


class PreferenceJudgeRun(ProjectOwned, EngineJob):
    """An LLM judge answering every comparison of a study, each pair asked in both orders."""

    study = models.ForeignKey(PreferenceStudy, on_delete=models.PROTECT, related_name="judge_runs",
                              verbose_name=_("study"))
    config = models.ForeignKey("scoring.JudgeConfig", on_delete=models.PROTECT, related_name="+",
                               verbose_name=_("config"))
    snapshot = models.JSONField(default=dict, verbose_name=_("snapshot"))
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", verbose_name=_("created by"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("preference judge run")
        verbose_name_plural = _("preference judge runs")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return gettext("judge run %(id)s on %(study)s") % {"id": self.pk, "study": self.study}


class PreferenceVerdict(ProjectScoped, WorkUnit):
    """The judge's answer on one pair in one order. ``forward`` shows the pair's first candidate as A,
    ``reverse`` shows the second as A; ``choices`` maps criterion code to A / tie / B (side terms)."""

    project_path = "run__project"

    class Order(models.TextChoices):
        FORWARD = "forward", _("First candidate as A")
        REVERSE = "reverse", _("Second candidate as A")

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        DONE = "done", _("Answered")
        UNSCORED = "unscored", _("Unscored (unparseable answer)")
        FAILED = "failed", _("Failed")

    run = models.ForeignKey(PreferenceJudgeRun, on_delete=models.CASCADE, related_name="verdicts",
                            verbose_name=_("run"))
    pair = models.ForeignKey(PreferencePair, on_delete=models.PROTECT, related_name="+", verbose_name=_("pair"))
    order = models.CharField(max_length=8, choices=Order.choices, verbose_name=_("order"))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True,
                              verbose_name=_("status"))
    choices = models.JSONField(default=dict, blank=True, verbose_name=_("choices"))
    rationale = models.TextField(blank=True, verbose_name=_("rationale"))
    call = models.ForeignKey("scoring.LLMCall", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                             verbose_name=_("call"))
    from_cache = models.BooleanField(default=False, verbose_name=_("from cache"))

    class Meta:
        verbose_name = _("preference verdict")
        verbose_name_plural = _("preference verdicts")
        ordering = ["run", "pair", "order"]
        constraints = [models.UniqueConstraint(fields=["run", "pair", "order"], name="unique_preference_verdict")]

    def __str__(self) -> str:
        return gettext("%(run)s pair %(pair)s %(order)s: %(status)s") % {
            "run": self.run_id, "pair": self.pair_id, "order": self.get_order_display(),
            "status": self.get_status_display()}
