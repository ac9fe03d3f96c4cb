from django.contrib import admin

from annotation.admin import ReadOnlyHistoryAdmin
from scoring.models import (
    CaseSet,
    GeneratedDialogue,
    GenerationCall,
    GenerationJob,
    GenerationTurn,
    Job,
    JudgeConfig,
    JudgeResult,
    JudgeRun,
    LLMCall,
    PatientCase,
    PreferenceAnswer,
    PreferenceAnswerChange,
    PreferenceCandidate,
    PreferenceCriterion,
    PreferenceItem,
    PreferenceJudgeRun,
    PreferencePair,
    PreferenceRater,
    PreferenceSource,
    PreferenceStudy,
    PreferenceTask,
    PreferenceVerdict,
    Prompt,
    PromptSet,
)


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "requested_by", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["result", "error", "started_at", "finished_at", "attempts"]


class PromptInline(admin.TabularInline):
    model = Prompt
    extra = 0


@admin.register(PromptSet)
class PromptSetAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "scale_version", "locked_at", "created_at"]
    inlines = [PromptInline]


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ["prompt_set", "item", "question"]


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "model", "base_url", "api_key_env", "mode", "concurrency", "created_at"]


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "config", "corpus", "status", "created_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = ["snapshot", "error"]


@admin.register(JudgeResult)
class JudgeResultAdmin(admin.ModelAdmin):
    list_display = ["run", "dialogue", "item", "status", "value", "p_yes", "from_cache", "attempts"]
    list_filter = ["status", "from_cache"]
    raw_id_fields = ["run", "dialogue", "item", "call"]


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "prompt_tokens", "completion_tokens", "cost", "latency_ms", "created_at"]
    search_fields = ["key", "model"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PreferenceStudy)
class PreferenceStudyAdmin(admin.ModelAdmin):
    """Read-mostly: lock and unblind happen on the study page, where they are audited."""

    list_display = ["name", "kind", "status", "overlap", "seed", "created_at", "locked_at", "unblinded_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["status", "seed", "opened_at", "locked_at", "locked_by", "unblinded_at", "unblinded_by",
                       "unblind_reason"]


@admin.register(PreferenceTask)
class PreferenceTaskAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "rater", "position", "swapped", "status", "submitted_at"]
    list_filter = ["status"]
    raw_id_fields = ["study", "pair", "rater"]


class PreferenceAnswerChangeInline(admin.TabularInline):
    model = PreferenceAnswerChange
    extra = 0
    can_delete = False
    readonly_fields = ["changed_by", "changed_at", "old_choice", "new_choice", "old_comment", "new_comment", "reason"]


@admin.register(PreferenceAnswer)
class PreferenceAnswerAdmin(admin.ModelAdmin):
    list_display = ["task", "criterion", "choice", "updated_at"]
    raw_id_fields = ["task", "criterion"]
    inlines = [PreferenceAnswerChangeInline]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PreferenceJudgeRun)
class PreferenceJudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "config", "status", "created_at", "finished_at"]
    readonly_fields = ["snapshot", "error"]


@admin.register(PreferenceVerdict)
class PreferenceVerdictAdmin(admin.ModelAdmin):
    list_display = ["run", "pair", "order", "status", "choices", "from_cache", "attempts"]
    list_filter = ["status", "order"]
    raw_id_fields = ["run", "pair", "call"]


@admin.register(CaseSet)
class CaseSetAdmin(admin.ModelAdmin):
    list_display = ["name", "source", "created_by", "created_at", "deleted_at"]
    search_fields = ["name"]


@admin.register(PatientCase)
class PatientCaseAdmin(admin.ModelAdmin):
    list_display = ["external_id", "case_set", "kind", "language", "diagnosis"]
    list_filter = ["kind", "case_set"]
    search_fields = ["external_id", "self_report", "diagnosis"]


@admin.register(GenerationJob)
class GenerationJobAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "case_set", "corpus", "patient_model", "status", "created_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = ["snapshot", "error"]


class GenerationTurnInline(admin.TabularInline):
    model = GenerationTurn
    extra = 0
    raw_id_fields = ["call"]
    readonly_fields = ["index", "role", "text", "from_cache", "created_at"]


@admin.register(GeneratedDialogue)
class GeneratedDialogueAdmin(admin.ModelAdmin):
    list_display = ["id", "job", "case", "doctor_model", "temperature", "doctor_bias", "patient_bias", "status",
                    "turns_used", "ended_by", "correct"]
    list_filter = ["status", "ended_by", "correct"]
    raw_id_fields = ["job", "case", "dialogue", "moderator_call"]
    inlines = [GenerationTurnInline]


@admin.register(GenerationCall)
class GenerationCallAdmin(admin.ModelAdmin):
    list_display = ["job", "generated", "role", "call", "created_at"]
    raw_id_fields = ["job", "generated", "call"]


@admin.register(PreferenceCriterion)
class PreferenceCriterionAdmin(admin.ModelAdmin):
    list_display = ["study", "order", "code", "name"]


@admin.register(PreferenceSource)
class PreferenceSourceAdmin(admin.ModelAdmin):
    list_display = ["study", "position", "label", "judge_run"]
    raw_id_fields = ["judge_run"]


@admin.register(PreferenceItem)
class PreferenceItemAdmin(admin.ModelAdmin):
    list_display = ["study", "external_id", "deleted_at"]
    raw_id_fields = ["dialogue"]


@admin.register(PreferenceCandidate)
class PreferenceCandidateAdmin(admin.ModelAdmin):
    list_display = ["id", "item", "source"]
    raw_id_fields = ["item", "source", "dialogue"]


@admin.register(PreferencePair)
class PreferencePairAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "item", "first", "second"]
    raw_id_fields = ["item", "first", "second"]


@admin.register(PreferenceRater)
class PreferenceRaterAdmin(admin.ModelAdmin):
    list_display = ["study", "user", "capacity", "active", "added_at"]
    raw_id_fields = ["user"]


@admin.register(PreferenceAnswerChange)
class PreferenceAnswerChangeAdmin(admin.ModelAdmin):
    list_display = ["answer", "changed_by", "changed_at", "old_choice", "new_choice"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(GenerationTurn)
class GenerationTurnAdmin(ReadOnlyHistoryAdmin):
    """Generated turns are written by the generation engine only (also shown inline on their dialogue)."""

    list_display = ["generated", "index", "role", "from_cache", "created_at"]
    list_filter = ["role"]
    raw_id_fields = ["generated", "call"]
