"""Judge configurations, versioned prompt sets, runs and their per-item results."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.signals import post_save
from django.dispatch import receiver
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.scores import ScoreField
from projects.models import ProjectOwned, ProjectScoped, SoftDeletable
from scoring.llm.keys import validate_key_variable
from scoring.llm.models import EngineJob, LLMCall, LLMEndpoint, WorkUnit


class PromptSet(ProjectOwned):
    """A versioned set of judge prompts for one scale version. Used sets are immutable; edits make a new version."""

    name = models.CharField(max_length=120, verbose_name=_("name"))
    version = models.PositiveIntegerField(default=1, verbose_name=_("version"))
    scale_version = models.ForeignKey("annotation.ScaleVersion", on_delete=models.PROTECT, related_name="+",
                                      verbose_name=_("scale version"))
    system_prompt = models.TextField(verbose_name=_("system prompt"))
    dialogue_template = models.TextField(
        help_text=_("How the dialogue is shown; {self_report} and {turns} are filled."),
        verbose_name=_("dialogue template"))
    per_dialogue_instruction = models.TextField(help_text=_("Question for the one-call-per-dialogue mode."),
                                                verbose_name=_("per-dialogue instruction"))
    note = models.TextField(blank=True, verbose_name=_("note"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    locked_at = models.DateTimeField(null=True, blank=True, help_text=_("Set when a run first uses it."),
                                     verbose_name=_("locked at"))

    class Meta:
        verbose_name = _("prompt set")
        verbose_name_plural = _("prompt sets")
        ordering = ["name", "-version"]
        constraints = [models.UniqueConstraint(fields=["project", "name", "version"], name="unique_prompt_set_version")]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class Prompt(ProjectScoped):
    """The per-item question (the paper's "Does the doctor ... in the following dialogue?")."""

    project_path = "prompt_set__project"

    prompt_set = models.ForeignKey(PromptSet, on_delete=models.CASCADE, related_name="prompts",
                                   verbose_name=_("prompt set"))
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="+", verbose_name=_("item"))
    question = models.TextField(verbose_name=_("question"))

    class Meta:
        verbose_name = _("prompt")
        verbose_name_plural = _("prompts")
        ordering = ["prompt_set", "item__order"]
        constraints = [models.UniqueConstraint(fields=["prompt_set", "item"], name="unique_prompt_per_item")]

    def __str__(self) -> str:
        return f"{self.prompt_set} {self.item.code}"


class JudgeConfig(ProjectOwned):
    """An LLM judge: an OpenAI-compatible endpoint, a model, parameters and a prompt set.

    The API key is never stored: ``api_key_env`` names the environment variable that holds it. Judges made in the
    browser use an administrator's ``endpoint``, whose URL, key variable and limits are copied into the fields
    below on every save (of either), which are what runs read; ``run_judge`` fills them from its options.
    """

    class Mode(models.TextChoices):
        PER_ITEM = "per-item", _("One call per dialogue and item (the paper's method)")
        PER_DIALOGUE = "per-dialogue", _("One structured call per dialogue returning every item")

    name = models.CharField(max_length=120, verbose_name=_("name"))
    endpoint = models.ForeignKey(LLMEndpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="judges",
                                 help_text=_("Defined by an administrator; empty for judges made by run_judge."),
                                 verbose_name=_("endpoint"))
    base_url = models.CharField(max_length=300, blank=True, help_text=_("Empty: OPENAI_BASE_URL from the environment."),
                                verbose_name=_("base url"))
    api_key_env = models.CharField(max_length=100, default="OPENAI_API_KEY", validators=[validate_key_variable],
                                   help_text=_("Name of the environment variable holding the key."),
                                   verbose_name=_("api key env"))
    model = models.CharField(max_length=200, verbose_name=_("model"))
    temperature = models.FloatField(default=0.0, verbose_name=_("temperature"))
    max_tokens = models.PositiveIntegerField(default=256, verbose_name=_("maximum tokens"))
    seed = models.BigIntegerField(null=True, blank=True, verbose_name=_("seed"))
    mode = models.CharField(max_length=14, choices=Mode.choices, default=Mode.PER_ITEM, verbose_name=_("mode"))
    structured_output = models.BooleanField(default=True, help_text=_("Ask for JSON-schema output (response_format)."),
                                            verbose_name=_("structured output"))
    request_logprobs = models.BooleanField(default=True, help_text=_("Ask for logprobs to store P(yes)."),
                                           verbose_name=_("request logprobs"))
    draws = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(20)],
        help_text=_("Per-item mode: answers asked for in each request (the API's n) at the draw temperature; more "
                    "than 1 stores their spread as the judge's uncertainty (self-consistency). Each costs its tokens."),
        verbose_name=_("draws"))
    draw_temperature = models.FloatField(default=1.0, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)],
                                         help_text=_("The temperature of the repeated draws (used when draws > 1)."),
                                         verbose_name=_("draw temperature"))
    concurrency = models.PositiveIntegerField(default=8, help_text=_("Most requests in flight at once, all workers."),
                                              verbose_name=_("concurrency"))
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("requests per minute"))
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("tokens per minute"))
    timeout_seconds = models.FloatField(default=60.0, verbose_name=_("timeout seconds"))
    max_attempts = models.PositiveIntegerField(default=6, verbose_name=_("maximum attempts"))
    price_input_per_1k = models.DecimalField(max_digits=10, decimal_places=6, default=0,
                                             verbose_name=_("input price per 1k tokens"))
    price_output_per_1k = models.DecimalField(max_digits=10, decimal_places=6, default=0,
                                              verbose_name=_("output price per 1k tokens"))
    currency = models.CharField(max_length=8, default="USD", help_text=_("Currency of the prices (and of the costs "
                                                                         "shown); from the endpoint when it has one."),
                                verbose_name=_("currency"))
    prompt_set = models.ForeignKey(PromptSet, on_delete=models.PROTECT, related_name="configs",
                                   verbose_name=_("prompt set"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("judge config")
        verbose_name_plural = _("judge configs")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_judge_name_per_project")]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self.endpoint_id:
            for field, value in self.endpoint.settings_dict().items():
                setattr(self, field, value)
        super().save(*args, **kwargs)


@receiver(post_save, sender=LLMEndpoint, dispatch_uid="judges-follow-endpoint")
def follow_endpoint(sender, instance: LLMEndpoint, **kwargs) -> None:
    """An administrator's change to an endpoint applies to every judge using it (runs keep their snapshot)."""
    JudgeConfig.objects.filter(endpoint=instance).update(**instance.settings_dict())


class JudgeRun(ProjectOwned, EngineJob):
    """One judge configuration applied to (part of) a corpus. State and results live in the database.

    An *imported* run (``source`` "imported") holds an existing judge's scores read from a label file
    (``import_labels`` rows with ``rater_kind`` judge): no configuration and no endpoint, finished when created,
    never sent to the LLM engine; its snapshot names the judge and its model, and ``source_file`` /
    ``source_sha256`` / ``created_at`` / ``created_by`` say where it came from, when and who imported it."""

    class Source(models.TextChoices):
        LIVE = "live", _("Run by the app")
        IMPORTED = "imported", _("Imported scores")

    config = models.ForeignKey(JudgeConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="runs",
                               help_text=_("Empty for imported runs."), verbose_name=_("config"))
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LIVE, verbose_name=_("source"))
    scale_version = models.ForeignKey("annotation.ScaleVersion", null=True, blank=True, on_delete=models.PROTECT,
                                      related_name="+", help_text=_("Imported runs: the version their items belong to "
                                                                    "(live runs: their prompt set's)."),
                                      verbose_name=_("scale version"))
    source_file = models.CharField(max_length=255, blank=True, help_text=_("Imported runs: the file's name."),
                                   verbose_name=_("source file"))
    source_sha256 = models.CharField(max_length=64, blank=True, db_index=True,
                                     help_text=_("Imported runs: the SHA-256 of the file."),
                                     verbose_name=_("source SHA-256"))
    corpus = models.ForeignKey("annotation.Corpus", on_delete=models.PROTECT, related_name="judge_runs",
                               verbose_name=_("corpus"))
    filter_split = models.CharField(max_length=12, blank=True, verbose_name=_("split (filter)"))
    filter_model = models.CharField(max_length=200, blank=True, verbose_name=_("doctor model (filter)"))
    filter_language = models.CharField(max_length=16, blank=True, verbose_name=_("language (filter)"))
    item_codes = models.JSONField(default=list, blank=True, help_text=_("Empty = every rating item."),
                                  verbose_name=_("item codes"))
    batch = models.BooleanField(default=False, help_text=_("Send the requests through the provider's Batch API "
                                "(half the price, results within 24 hours) instead of one by one."),
                                verbose_name=_("batch"))
    snapshot = models.JSONField(default=dict, help_text=_("The configuration and prompts as they were at the start."),
                                verbose_name=_("snapshot"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("judge run")
        verbose_name_plural = _("judge runs")
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return gettext("Run #%(id)s %(name)s on %(corpus)s") % {"id": self.pk, "name": self.name, "corpus": self.corpus}

    @property
    def name(self) -> str:
        """The judge's name as the run recorded it (stable if the configuration is renamed later)."""
        return (self.snapshot or {}).get("name") or (self.config.name if self.config_id else f"run {self.pk}")

    is_jury = False

    @property
    def is_imported(self) -> bool:
        return self.source == self.Source.IMPORTED


class JudgeResult(ProjectScoped, WorkUnit):
    """The judge's answer on one item of one dialogue in a run; upserted, so retries never duplicate."""

    project_path = "run__project"

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        DONE = "done", _("Scored")
        UNSCORED = "unscored", _("Unscored (unparseable answer)")
        FAILED = "failed", _("Failed")

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="results", verbose_name=_("run"))
    dialogue = models.ForeignKey("annotation.Dialogue", on_delete=models.PROTECT, related_name="judge_results",
                                 verbose_name=_("dialogue"))
    item = models.ForeignKey("annotation.Item", on_delete=models.PROTECT, related_name="judge_results",
                             verbose_name=_("item"))
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True,
                              verbose_name=_("status"))
    value = ScoreField(null=True, blank=True, verbose_name=_("value"))
    p_yes = models.FloatField(null=True, blank=True, verbose_name=_("p yes"))
    uncertainty = models.FloatField(null=True, blank=True, help_text=_("The judge's expected error size on this "
                                    "answer (from log-probabilities, or the spread of repeated draws)."),
                                    verbose_name=_("uncertainty"))
    rationale = models.TextField(blank=True, verbose_name=_("rationale"))
    call = models.ForeignKey(LLMCall, null=True, blank=True, on_delete=models.PROTECT, related_name="results",
                             verbose_name=_("call"))
    from_cache = models.BooleanField(default=False, verbose_name=_("from cache"))
    retry_round = models.PositiveIntegerField(default=0, help_text=_("Bumped by 'retry': asks the endpoint again "
                                                                     "instead of reusing the cached answer."),
                                              verbose_name=_("retry round"))

    class Meta:
        verbose_name = _("judge result")
        verbose_name_plural = _("judge results")
        ordering = ["run", "dialogue", "item__order"]
        constraints = [models.UniqueConstraint(fields=["run", "dialogue", "item"], name="unique_judge_result")]
        # Claims take pending units in id order (per item) or dialogue order (per dialogue) straight from these.
        indexes = [models.Index(fields=["run", "status"]), models.Index(fields=["run", "status", "id"]),
                   models.Index(fields=["run", "status", "dialogue"])]

    def __str__(self) -> str:
        return f"{self.run_id} {self.dialogue_id} {self.item_id}: {self.status}"


class ImportedPrompt(ProjectScoped):
    """What an imported judge was asked for one of its answers (the ``prompt`` column of the label file); the
    answer's raw text is the result's ``rationale``."""

    project_path = "result__run__project"

    result = models.OneToOneField(JudgeResult, on_delete=models.CASCADE, related_name="imported_prompt",
                                  verbose_name=_("result"))
    text = models.TextField(verbose_name=_("text"))

    class Meta:
        verbose_name = _("imported prompt")
        verbose_name_plural = _("imported prompts")

    def __str__(self) -> str:
        return gettext("prompt of %(result)s") % {"result": self.result}


class Jury(ProjectOwned, SoftDeletable):
    """Two or more finished judge runs (the app's own or imported) on one corpus and scale version whose answers are
    combined per unit by a declared rule (:mod:`core.stats.juries`). A jury is read wherever a run is (the
    judge-vs-physicians report, model estimates and PPI, run comparison, exports, API, ``judge_report``): it has
    the attributes those read (``corpus``, ``scale_version_id``, ``name``, ``snapshot``, ``status``...), and
    :mod:`scoring.judges.juries` gives its combined answers. Members are fixed when it is made; deleting is soft."""

    class Rule(models.TextChoices):
        MAJORITY = "majority", _("Majority vote (the most frequent answer)")
        MEDIAN = "median", _("Median of the answers")
        MEAN = "mean", _("Mean of the answers")

    class TieRule(models.TextChoices):
        LOWER = "lower", _("The lower value (binary items: not done)")
        HIGHER = "higher", _("The higher value")
        UNSCORED = "unscored", _("Leave the answer unscored")

    is_jury = True
    source = "jury"
    is_imported = False
    is_finished = True
    config_id = None
    item_codes: list = []

    name = models.CharField(max_length=120, verbose_name=_("name"))
    corpus = models.ForeignKey("annotation.Corpus", on_delete=models.PROTECT, related_name="juries",
                               verbose_name=_("corpus"))
    scale_version = models.ForeignKey("annotation.ScaleVersion", on_delete=models.PROTECT, related_name="+",
                                      verbose_name=_("scale version"))
    rule = models.CharField(max_length=10, choices=Rule.choices, default=Rule.MAJORITY, verbose_name=_("rule"))
    tie_rule = models.CharField(max_length=10, choices=TieRule.choices, default=TieRule.LOWER,
                                help_text=_("How a tied vote, or a median or mean exactly half-way between two "
                                            "allowed values, is settled."), verbose_name=_("tie rule"))
    round_to_grid = models.BooleanField(default=True, help_text=_("Median and mean: round to the item's allowed "
                                                                  "values (the report's agreement figures need them)."),
                                        verbose_name=_("round to grid"))
    note = models.TextField(blank=True, verbose_name=_("note"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("created by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("jury")
        ordering = ["name", "pk"]
        verbose_name_plural = _("juries")
        constraints = [models.UniqueConstraint(fields=["project", "name"], condition=models.Q(deleted_at__isnull=True),
                                               name="unique_live_jury_name_per_project")]

    def __str__(self) -> str:
        return f"Jury {self.name}"

    @property
    def status(self) -> str:
        return EngineJob.Status.SUCCEEDED

    def get_status_display(self) -> str:
        return "Finished"

    def member_runs(self) -> list[JudgeRun]:
        return [m.run for m in self.members.select_related("run", "run__config", "run__corpus").order_by("position")]

    @property
    def snapshot(self) -> dict:
        runs = self.member_runs()
        return {"name": self.name, "model": " + ".join(r.snapshot.get("model") or r.name for r in runs),
                "mode": "jury", "rule": self.rule, "tie_rule": self.tie_rule, "round_to_grid": self.round_to_grid,
                "members": [r.pk for r in runs]}


class JuryMember(ProjectScoped):
    """One run of a jury, in the order it was given."""

    project_path = "jury__project"

    jury = models.ForeignKey(Jury, on_delete=models.CASCADE, related_name="members", verbose_name=_("jury"))
    run = models.ForeignKey(JudgeRun, on_delete=models.PROTECT, related_name="jury_memberships", verbose_name=_("run"))
    position = models.PositiveIntegerField(default=0, verbose_name=_("position"))

    class Meta:
        verbose_name = _("jury member")
        verbose_name_plural = _("jury members")
        ordering = ["jury", "position"]
        constraints = [models.UniqueConstraint(fields=["jury", "run"], name="unique_jury_member")]

    def __str__(self) -> str:
        return gettext("%(jury)s member run %(run)s") % {"jury": self.jury, "run": self.run_id}


class SelectionSettings(ProjectOwned):
    """A campaign's judge selection settings (:mod:`scoring.judges.selection_figures`): the held-out share, the seed of
    the split and the bootstrap, and the verdict settings. Stored, not given per request, so a worker computes the
    selection once for them and every reader sees the same table; changed on the selection page, each change in
    the audit trail (before and after)."""

    campaign = models.OneToOneField("annotation.Campaign", on_delete=models.PROTECT, related_name="+",
                                    verbose_name=_("campaign"))
    held_out_share = models.FloatField(default=0.3, verbose_name=_("held out share"))
    seed = models.PositiveBigIntegerField(default=20240501, verbose_name=_("seed"))
    verdict = models.JSONField(default=dict, blank=True, help_text=_("The verdict settings (floor, minimum dialogues, "
                                                                     "margin, interval method)."),
                               verbose_name=_("verdict settings"))
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                   related_name="+", verbose_name=_("updated by"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("selection settings")
        verbose_name_plural = _("selection settings")

    def __str__(self) -> str:
        return gettext("selection settings of campaign %(campaign)s") % {"campaign": self.campaign_id}

    def as_dict(self) -> dict:
        return {"held_out_share": self.held_out_share, "seed": self.seed, "verdict": dict(self.verdict)}
