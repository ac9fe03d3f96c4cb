"""The engine's records: every request sent to an LLM endpoint and its answer (the request cache)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class LLMCall(models.Model):
    """One request to an endpoint and its raw response, keyed by a hash of endpoint, model, messages and
    parameters: an identical request is answered from here and never paid twice."""

    key = models.CharField(max_length=64, unique=True)
    endpoint = models.CharField(max_length=300)
    model = models.CharField(max_length=200)
    request = models.JSONField()
    response = models.JSONField(null=True, blank=True)
    content = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.model} {self.key[:12]}"


class WorkUnit(models.Model):
    """What the engine needs on a unit of LLM work (a judge result, a preference verdict, a generated dialogue):
    a claim naming the engine that holds it, a lease as a last resort, and a retry time after a failure."""

    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    claimed_by = models.CharField(max_length=100, blank=True, default="",
                                  help_text="The engine (or provider batch) that holds the unit now.")
    claimed_until = models.DateTimeField(null=True, blank=True)
    not_before = models.DateTimeField(null=True, blank=True, help_text="Retry no earlier than this (backoff).")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class EngineJob(models.Model):
    """What the engine needs on a run or job: when it last made progress and when it was last woken, so the
    reconciler can tell a stalled job (its wake-up message lost with the broker) from a busy one."""

    activity_at = models.DateTimeField(null=True, blank=True, help_text="Last stored answer.")
    woken_at = models.DateTimeField(null=True, blank=True, help_text="Last wake-up message sent to the workers.")

    class Meta:
        abstract = True


class LLMWorker(models.Model):
    """A live engine (one per worker process) and its heartbeat. Claims and limiter slots of an engine whose
    heartbeat stopped are freed, so a killed worker's units are taken up again within seconds."""

    owner = models.CharField(max_length=100, unique=True)
    hostname = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now, db_index=True)
    in_flight = models.PositiveIntegerField(default=0)
    jobs = models.JSONField(default=list, blank=True, help_text='The jobs it works on ("kind:id").')

    class Meta:
        ordering = ["-seen_at"]

    def __str__(self) -> str:
        return self.owner


class LLMBatch(models.Model):
    """One provider Batch API job (``/v1/files`` + ``/v1/batches``): half the price, results within 24 hours.
    Its units are claimed by ``batch:<id>`` until the results are in."""

    class Status(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        COMPLETED = "completed", "Results stored"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    OPEN = (Status.SUBMITTED,)

    kind = models.CharField(max_length=20)
    job_id = models.PositiveBigIntegerField()
    base_url = models.CharField(max_length=300)
    api_key_env = models.CharField(max_length=100)
    timeout_seconds = models.FloatField(default=60.0)
    provider_id = models.CharField(max_length=200, blank=True)
    provider_status = models.CharField(max_length=40, blank=True, help_text="As the provider reports it.")
    input_file_id = models.CharField(max_length=200, blank=True)
    output_file_id = models.CharField(max_length=200, blank=True)
    error_file_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.SUBMITTED, db_index=True)
    requests = models.JSONField(default=dict, help_text="custom_id -> request key and unit ids.")
    counts = models.JSONField(default=dict, blank=True, help_text="The provider's request counts.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    polled_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["kind", "job_id"])]

    def __str__(self) -> str:
        return f"batch {self.pk} ({self.provider_status or self.status}) for {self.kind} {self.job_id}"

    @property
    def owner(self) -> str:
        return f"batch:{self.pk}"
