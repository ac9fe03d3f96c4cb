"""Admin pages: LLM call records, the endpoints (only administrators define endpoints), the projects' monthly LLM
budgets and what they spent, live engines and provider batches."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from scoring.llm.models import LLMBatch, LLMCall, LLMEndpoint, LLMWorker, MonthlySpend, ProjectBudget


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "prompt_tokens", "completion_tokens", "cost", "latency_ms", "created_at"]
    search_fields = ["key", "model"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "base_url", "api_key_env", "concurrency", "requests_per_minute", "tokens_per_minute",
                    "timeout_seconds", "is_active", "granted_to", "updated_at"]
    list_filter = ["is_active", "projects"]
    filter_horizontal = ["projects"]  # the projects whose coordinators may choose the endpoint

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("projects")

    def get_changeform_initial_data(self, request):
        """A new endpoint on an instance with one project is offered to it (ticked; the administrator may untick)."""
        from projects.models import Project

        initial = super().get_changeform_initial_data(request)
        only = list(Project.objects.values_list("pk", flat=True)[:2])
        if len(only) == 1 and "projects" not in initial:
            initial["projects"] = only
        return initial

    @admin.display(description=_("projects"))
    def granted_to(self, endpoint) -> str:
        return ", ".join(project.name for project in endpoint.projects.all()) or "none"
    search_fields = ["name", "base_url"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the engine keeps itself: shown, never edited by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LLMWorker)
class LLMWorkerAdmin(ReadOnlyAdmin):
    list_display = ["owner", "hostname", "pid", "in_flight", "jobs", "started_at", "seen_at"]


@admin.register(LLMBatch)
class LLMBatchAdmin(ReadOnlyAdmin):
    list_display = ["id", "kind", "job_id", "provider_id", "provider_status", "status", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    search_fields = ["provider_id"]
    exclude = ["requests"]


@admin.register(ProjectBudget)
class ProjectBudgetAdmin(admin.ModelAdmin):
    """Administrators set each project's monthly budget (requests and cost); a job that would cross it pauses."""

    list_display = ["project", "month_requests", "month_cost", "currency", "updated_at", "updated_by"]
    fields = ["project", "month_requests", "month_cost", "currency"]
    list_select_related = ["project", "updated_by"]

    def save_model(self, request, obj, form, change):
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(MonthlySpend)
class MonthlySpendAdmin(ReadOnlyAdmin):
    list_display = ["project", "month", "endpoint", "currency", "requests", "answers", "cost", "tokens"]
    list_filter = ["month", "project"]
    list_select_related = ["project"]
