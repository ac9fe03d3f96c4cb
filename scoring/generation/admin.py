"""Admin pages: case sets, generation jobs, generated dialogues and their turns."""

from django.contrib import admin

from projects.admin import ReadOnlyHistoryAdmin
from scoring.generation.models import (
    CaseSet,
    GeneratedDialogue,
    GenerationCall,
    GenerationJob,
    GenerationTurn,
    PatientCase,
)


@admin.register(CaseSet)
class CaseSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "source", "created_by", "created_at", "deleted_at"]
    list_filter = ["project"]
    search_fields = ["name"]


@admin.register(PatientCase)
class PatientCaseAdmin(admin.ModelAdmin):
    list_display = ["external_id", "case_set", "kind", "language", "diagnosis"]
    list_filter = ["kind", "case_set"]
    search_fields = ["external_id", "self_report", "diagnosis"]


@admin.register(GenerationJob)
class GenerationJobAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "project", "case_set", "corpus", "patient_model", "status", "created_at",
                    "finished_at"]
    list_filter = ["project", "status"]
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


@admin.register(GenerationTurn)
class GenerationTurnAdmin(ReadOnlyHistoryAdmin):
    """Generated turns are written by the generation engine only (also shown inline on their dialogue)."""

    list_display = ["generated", "index", "role", "from_cache", "created_at"]
    list_filter = ["role"]
    raw_id_fields = ["generated", "call"]
