"""Admin pages: preference studies."""

from django.contrib import admin

from scoring.preference.models import (
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
)


@admin.register(PreferenceStudy)
class PreferenceStudyAdmin(admin.ModelAdmin):
    """Read-mostly: lock and unblind happen on the study page, where they are audited."""

    list_display = ["name", "project", "kind", "status", "overlap", "seed", "created_at", "locked_at",
                    "unblinded_at"]
    list_filter = ["project", "kind", "status"]
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
    list_display = ["id", "project", "study", "config", "status", "created_at", "finished_at"]
    list_filter = ["project"]
    readonly_fields = ["snapshot", "error"]


@admin.register(PreferenceVerdict)
class PreferenceVerdictAdmin(admin.ModelAdmin):
    list_display = ["run", "pair", "order", "status", "choices", "from_cache", "attempts"]
    list_filter = ["status", "order"]
    raw_id_fields = ["run", "pair", "call"]


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
