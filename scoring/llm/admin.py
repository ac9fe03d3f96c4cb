"""Admin pages: llm call records."""

from django.contrib import admin

from scoring.llm.models import LLMCall


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "prompt_tokens", "completion_tokens", "cost", "latency_ms", "created_at"]
    search_fields = ["key", "model"]

    def has_change_permission(self, request, obj=None):
        return False
