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
