"""Admin pages: judge configurations, prompt sets, runs and results, juries, judge selection settings."""

from django.contrib import admin

from projects.admin import LargeTableAdmin, ReadOnlyHistoryAdmin
from scoring.judges.models import (
    ImportedPrompt,
    JudgeConfig,
    JudgeResult,
    JudgeRun,
    Jury,
    JuryMember,
    Prompt,
    PromptSet,
    SelectionSettings,
)


class PromptInline(admin.TabularInline):
    model = Prompt
    extra = 0


@admin.register(PromptSet)
class PromptSetAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "project", "scale_version", "locked_at", "created_at"]
    list_filter = ["project"]
    inlines = [PromptInline]


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ["prompt_set", "item", "question"]


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "model", "base_url", "api_key_env", "mode", "concurrency", "created_at"]
    list_filter = ["project"]


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "config", "corpus", "status", "created_at", "finished_at"]
    list_filter = ["project", "status"]
    readonly_fields = ["snapshot", "error"]


class JuryMemberInline(admin.TabularInline):
    model = JuryMember
    extra = 0
    raw_id_fields = ["run"]


@admin.register(Jury)
class JuryAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "corpus", "rule", "created_at", "deleted_at"]
    list_filter = ["project", "rule"]
    inlines = [JuryMemberInline]


@admin.register(JuryMember)
class JuryMemberAdmin(admin.ModelAdmin):
    list_display = ["jury", "run", "position"]
    raw_id_fields = ["jury", "run"]


@admin.register(JudgeResult)
class JudgeResultAdmin(LargeTableAdmin):
    list_display = ["id", "run", "dialogue", "item", "status", "value", "p_yes", "from_cache", "attempts"]
    list_filter = ["status", "from_cache"]
    list_select_related = ["run__corpus", "run__config", "dialogue__corpus", "item"]
    ordering = ["-id"]  # the primary key's index (the model's order joins items and sorts every answer)
    raw_id_fields = ["run", "dialogue", "item", "call"]


@admin.register(ImportedPrompt)
class ImportedPromptAdmin(ReadOnlyHistoryAdmin):
    """What an imported judge was asked (from its label file): provenance, never edited."""

    list_display = ["result", "text"]
    raw_id_fields = ["result"]


@admin.register(SelectionSettings)
class SelectionSettingsAdmin(ReadOnlyHistoryAdmin):
    """A campaign's judge selection settings: shown here, changed only on the selection page, where each change is
    audited (before and after) and the worker recomputes the selection."""

    list_display = ["campaign", "project", "held_out_share", "seed", "updated_by", "updated_at"]
    list_filter = ["project"]
    list_select_related = ["campaign", "project", "updated_by"]
    ordering = ["-updated_at"]
