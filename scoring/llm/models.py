"""The engine's records: every request sent to an LLM endpoint and its answer (the request cache), and the
endpoints administrators define."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from scoring.llm.keys import DEFAULT_KEY_VARIABLE, validate_base_url, validate_key_variable


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


class LLMEndpoint(models.Model):
    """An OpenAI-compatible endpoint defined by an administrator (Django admin only): where requests go, which
    environment variable holds the key, and the limits. Coordinators choose one of these and a model; they never
    type a URL or a variable name, so nobody but an administrator decides where a key is sent."""

    name = models.CharField(max_length=120, unique=True)
    base_url = models.CharField(max_length=300, blank=True, validators=[validate_base_url],
                                help_text="Empty: OPENAI_BASE_URL from the environment.")
    api_key_env = models.CharField(
        max_length=100, default=DEFAULT_KEY_VARIABLE, validators=[validate_key_variable],
        help_text="Name of the environment variable holding the key (never the key): OPENAI_API_KEY, a name "
                  "starting with LLM_KEY_, or one listed in the setting LLM_KEY_VARIABLES.")
    concurrency = models.PositiveIntegerField(default=8, help_text="Most requests in flight at once per judge or "
                                                                   "generation job, all workers.")
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    timeout_seconds = models.FloatField(default=60.0)
    note = models.TextField(blank=True, help_text="Shown to coordinators when they choose the endpoint.")
    is_active = models.BooleanField(default=True, help_text="Inactive endpoints cannot be chosen for new judges "
                                                            "or jobs; existing ones keep their settings.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM endpoint"

    def __str__(self) -> str:
        return self.name

    def settings_dict(self) -> dict:
        """The endpoint's part of a judge configuration or a job snapshot (the keys the engine reads)."""
        return {"base_url": self.base_url, "api_key_env": self.api_key_env, "concurrency": self.concurrency,
                "requests_per_minute": self.requests_per_minute, "tokens_per_minute": self.tokens_per_minute,
                "timeout_seconds": self.timeout_seconds}
