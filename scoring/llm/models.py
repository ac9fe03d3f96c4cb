"""The engine's records: every request sent to an LLM endpoint and its answer (the request cache), and the
endpoints administrators define."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from projects.models import ProjectOwned, ProjectScoped
from scoring.llm.keys import DEFAULT_KEY_VARIABLE, validate_base_url, validate_key_variable


class LLMCall(ProjectScoped):
    """One request to an endpoint and its raw response, keyed by a hash of the project, endpoint, model, messages
    and parameters: an identical request of the same project is answered from here and never paid twice.

    The cache is per project: another project's identical request is sent and paid again, so no project learns what
    another has judged. An administrator may share it across projects (setting ``LLM_CACHE_SHARED``); the key then
    leaves the project out. ``project`` is the project that paid for the call; cost and token estimates count only
    a project's own calls. The engine reads calls by key (``unscoped``: the key already holds the project)."""

    key = models.CharField(max_length=64, unique=True, verbose_name=_("key"))
    project = models.ForeignKey("projects.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="+", help_text=_("The project that sent (and paid for) the request."),
                                verbose_name=_("project"))
    endpoint = models.CharField(max_length=300, verbose_name=_("endpoint"))
    model = models.CharField(max_length=200, verbose_name=_("model"))
    request = models.JSONField(verbose_name=_("request"))
    response = models.JSONField(null=True, blank=True, verbose_name=_("response"))
    content = models.TextField(blank=True, verbose_name=_("content"))
    prompt_tokens = models.PositiveIntegerField(default=0, verbose_name=_("prompt tokens"))
    completion_tokens = models.PositiveIntegerField(default=0, verbose_name=_("completion tokens"))
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0, verbose_name=_("cost"))
    latency_ms = models.PositiveIntegerField(default=0, verbose_name=_("latency ms"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))

    class Meta:
        verbose_name_plural = _("LLM calls")
        ordering = ["-created_at"]
        verbose_name = _("LLM call")

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"


class WorkUnit(models.Model):
    """What the engine needs on a unit of LLM work (a judge result, a preference verdict, a generated dialogue):
    a claim naming the engine that holds it, a lease as a last resort, and a retry time after a failure."""

    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    claimed_by = models.CharField(max_length=100, blank=True, default="",
                                  help_text=_("The engine (or provider batch) that holds the unit now."),
                                  verbose_name=_("claimed by"))
    claimed_until = models.DateTimeField(null=True, blank=True, verbose_name=_("claimed until"))
    not_before = models.DateTimeField(null=True, blank=True, help_text=_("Retry no earlier than this (backoff)."),
                                      verbose_name=_("not before"))
    updated_at = models.DateTimeField(default=timezone.now, verbose_name=_("updated at"))

    class Meta:
        abstract = True


class EngineJob(models.Model):
    """What the engine needs on a run or job (judge runs, preference judging, dialogue generation): its state, when it
    last made progress and was last woken (so the reconciler can tell a stalled job from a busy one), and what it
    spent against its limits.

    Every request is counted in ``requests_sent`` *before* it is sent (or handed to a provider batch), and none is
    sent once the count reaches ``request_limit`` (the job's request units x its attempts per unit, grown only by a
    coordinator's "retry"), so a job never sends more than that, whatever fails afterwards. ``spent_cost`` and
    ``spent_tokens`` add up the paid answers; reaching an optional cap pauses the job."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        PAUSED = "paused", _("Paused")
        CANCELLED = "cancelled", _("Cancelled")
        SUCCEEDED = "succeeded", _("Finished")
        PROBLEMS = "problems", _("Finished with problems")
        FAILED = "failed", _("Failed")

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    # Ended with answers stored (the reports use them); "problems" says how many units failed or were unscored.
    FINISHED = (Status.SUCCEEDED, Status.PROBLEMS)
    ENDED = (Status.SUCCEEDED, Status.PROBLEMS, Status.FAILED, Status.CANCELLED)

    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True,
                              verbose_name=_("status"))
    error = models.TextField(blank=True, help_text=_("Why the job failed, paused or finished with problems."),
                             verbose_name=_("error"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    activity_at = models.DateTimeField(null=True, blank=True, help_text=_("Last stored answer."),
                                       verbose_name=_("last activity at"))
    woken_at = models.DateTimeField(null=True, blank=True, help_text=_("Last wake-up message sent to the workers."),
                                    verbose_name=_("woken at"))
    requests_sent = models.PositiveBigIntegerField(
        default=0, help_text=_("Requests sent or handed to a provider batch, counted before they go out."),
        verbose_name=_("requests sent"))
    request_limit = models.PositiveBigIntegerField(
        null=True, blank=True, help_text=_("Most requests the job may send: its request units x attempts per unit "
                                           "(set when it starts; a retry adds the units it asks again)."),
        verbose_name=_("request limit"))
    spent_cost = models.DecimalField(max_digits=14, decimal_places=6, default=0,
                                     help_text=_("Cost of the paid answers, in the endpoint's currency."),
                                     verbose_name=_("cost spent"))
    spent_tokens = models.PositiveBigIntegerField(default=0, help_text=_("Prompt + completion tokens of paid answers."),
                                                  verbose_name=_("tokens spent"))
    cost_cap = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True,
                                   help_text=_("Optional: pause the job when its cost reaches this (endpoint's "
                                               "currency)."), verbose_name=_("cost cap"))
    token_cap = models.PositiveBigIntegerField(null=True, blank=True,
                                               help_text=_("Optional: pause the job when its tokens reach this."),
                                               verbose_name=_("token cap"))

    class Meta:
        abstract = True

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class LLMWorker(models.Model):
    """A live engine (one per worker process) and its heartbeat. Claims and limiter slots of an engine whose
    heartbeat stopped are freed, so a killed worker's units are taken up again within seconds."""

    owner = models.CharField(max_length=100, unique=True, verbose_name=_("owner"))
    hostname = models.CharField(max_length=200, verbose_name=_("hostname"))
    pid = models.PositiveIntegerField(verbose_name=_("pid"))
    started_at = models.DateTimeField(default=timezone.now, verbose_name=_("started at"))
    seen_at = models.DateTimeField(default=timezone.now, db_index=True, verbose_name=_("seen at"))
    in_flight = models.PositiveIntegerField(default=0, verbose_name=_("in flight"))
    jobs = models.JSONField(default=list, blank=True, help_text=_('The jobs it works on ("kind:id").'),
                            verbose_name=_("jobs"))

    class Meta:
        verbose_name_plural = _("LLM workers")
        ordering = ["-seen_at"]
        verbose_name = _("LLM worker")

    def __str__(self) -> str:
        return self.owner


class LLMBatch(models.Model):
    """One provider Batch API job (``/v1/files`` + ``/v1/batches``): half the price, results within 24 hours.
    Its units are claimed by ``batch:<id>`` until the results are in."""

    class Status(models.TextChoices):
        SUBMITTED = "submitted", _("Submitted")
        COMPLETED = "completed", _("Results stored")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")

    OPEN = (Status.SUBMITTED,)

    kind = models.CharField(max_length=20, verbose_name=_("kind"))
    job_id = models.PositiveBigIntegerField(verbose_name=_("job id"))
    base_url = models.CharField(max_length=300, verbose_name=_("base url"))
    api_key_env = models.CharField(max_length=100, verbose_name=_("api key env"))
    timeout_seconds = models.FloatField(default=60.0, verbose_name=_("timeout seconds"))
    provider_id = models.CharField(max_length=200, blank=True, verbose_name=_("provider id"))
    provider_status = models.CharField(max_length=40, blank=True, help_text=_("As the provider reports it."),
                                       verbose_name=_("provider status"))
    input_file_id = models.CharField(max_length=200, blank=True, verbose_name=_("input file id"))
    output_file_id = models.CharField(max_length=200, blank=True, verbose_name=_("output file id"))
    error_file_id = models.CharField(max_length=200, blank=True, verbose_name=_("error file id"))
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.SUBMITTED, db_index=True,
                              verbose_name=_("status"))
    requests = models.JSONField(default=dict, help_text=_("custom_id -> request key and unit ids."),
                                verbose_name=_("requests"))
    counts = models.JSONField(default=dict, blank=True, help_text=_("The provider's request counts."),
                              verbose_name=_("counts"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    polled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("polled at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "job_id"])]
        verbose_name = _("LLM batch")
        verbose_name_plural = _("LLM batches")

    def __str__(self) -> str:
        return gettext("batch %(id)s (%(status)s) for %(kind)s %(job)s") % {
            "id": self.pk, "status": self.provider_status or self.status, "kind": self.kind, "job": self.job_id}

    @property
    def owner(self) -> str:
        return f"batch:{self.pk}"


class LLMEndpoint(models.Model):
    """An OpenAI-compatible endpoint defined by an administrator (Django admin only): where requests go, which
    environment variable holds the key, and the limits. Coordinators choose one of these and a model; they never
    type a URL or a variable name, so nobody but an administrator decides where a key is sent."""

    name = models.CharField(max_length=120, unique=True, verbose_name=_("name"))
    base_url = models.CharField(max_length=300, blank=True, validators=[validate_base_url],
                                help_text=_("Empty: OPENAI_BASE_URL from the environment."), verbose_name=_("base url"))
    api_key_env = models.CharField(
        max_length=100, default=DEFAULT_KEY_VARIABLE, validators=[validate_key_variable],
        help_text=_("Name of the environment variable holding the key (never the key): OPENAI_API_KEY, a name "
                    "starting with LLM_KEY_, or one listed in the setting LLM_KEY_VARIABLES."),
                                   verbose_name=_("api key env"))
    concurrency = models.PositiveIntegerField(default=8, help_text=_("Most requests in flight at once to this endpoint "
                                                                     "and key, all workers and all jobs together."),
                                              verbose_name=_("concurrency"))
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("requests per minute"))
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True, verbose_name=_("tokens per minute"))
    timeout_seconds = models.FloatField(default=60.0, verbose_name=_("timeout seconds"))
    currency = models.CharField(max_length=8, default="USD",
                                help_text=_("Currency of the judges' prices and of every cost shown for this "
                                            "endpoint."), verbose_name=_("currency"))
    note = models.TextField(blank=True, help_text=_("Shown to coordinators when they choose the endpoint."),
                            verbose_name=_("note"))
    is_active = models.BooleanField(default=True, help_text=_("Inactive endpoints cannot be chosen for new judges "
                                                              "or jobs; existing ones keep their settings."),
                                    verbose_name=_("is active"))
    projects = models.ManyToManyField("projects.Project", blank=True, related_name="endpoints",
                                      help_text=_("The projects whose coordinators may choose this endpoint."),
                                      verbose_name=_("projects"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        verbose_name_plural = _("LLM endpoints")
        ordering = ["name"]
        verbose_name = _("LLM endpoint")

    def __str__(self) -> str:
        return self.name

    def settings_dict(self) -> dict:
        """The endpoint's part of a judge configuration or a job snapshot (the keys the engine reads)."""
        return {"base_url": self.base_url, "api_key_env": self.api_key_env, "concurrency": self.concurrency,
                "requests_per_minute": self.requests_per_minute, "tokens_per_minute": self.tokens_per_minute,
                "timeout_seconds": self.timeout_seconds, "currency": self.currency}


class ProjectBudget(ProjectOwned):
    """A project's monthly budget for LLM work, beside each job's own caps: requests (counted before they are sent)
    and cost (answers' cost from the jobs' prices, in ``currency``). A job that would cross it pauses with a message
    naming the budget; only administrators set it (the Django admin)."""

    month_requests = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=_("requests per month"),
        help_text=_("Most LLM requests the project's jobs may send in a calendar month (UTC); empty: no limit."))
    month_cost = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True, verbose_name=_("cost per month"),
        help_text=_("Most the project's jobs may spend in a calendar month (UTC), by their prices; empty: no limit."))
    currency = models.CharField(max_length=3, default="USD",
                                help_text=_("The currency of the cost budget (the judges' prices are in it)."),
                                verbose_name=_("currency"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", verbose_name=_("updated by"))

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project"], name="llm_budget_one_per_project")]
        verbose_name = _("project LLM budget")
        verbose_name_plural = _("project LLM budgets")

    def __str__(self) -> str:
        return gettext("LLM budget of project %(project)s") % {"project": self.project_id}


class MonthlySpend(ProjectOwned):
    """What a project's LLM jobs sent and spent in a calendar month (UTC), per endpoint: requests counted before
    they are sent (and given back when released unsent), answers, their cost and tokens. The engine keeps these
    counters as it charges jobs; the budget is checked against their sums."""

    month = models.DateField(help_text=_("The first day of the month (UTC)."), verbose_name=_("month"))
    endpoint = models.CharField(max_length=300, verbose_name=_("endpoint"))
    currency = models.CharField(max_length=3, default="USD", verbose_name=_("currency"))
    requests = models.PositiveBigIntegerField(default=0, verbose_name=_("requests"))
    answers = models.PositiveBigIntegerField(default=0, verbose_name=_("answers"))
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0, verbose_name=_("cost"))
    tokens = models.PositiveBigIntegerField(default=0, verbose_name=_("tokens"))

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "month", "endpoint", "currency"],
                                               name="llm_monthly_spend_unique")]
        ordering = ["-month", "endpoint"]
        verbose_name = _("monthly LLM spend")
        verbose_name_plural = _("monthly LLM spending")

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} {self.endpoint}"
