"""Admin pages: llm call records and the endpoints (only administrators define endpoints)."""

from django.contrib import admin

from scoring.llm.models import LLMCall, LLMEndpoint


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "prompt_tokens", "completion_tokens", "cost", "latency_ms", "created_at"]
    search_fields = ["key", "model"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "base_url", "api_key_env", "concurrency", "requests_per_minute", "tokens_per_minute",
                    "timeout_seconds", "is_active", "updated_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "base_url"]
