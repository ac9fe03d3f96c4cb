"""Admin pages for the Delphi models. Study data is never deleted here (soft deletes go through the app);
answers and their history are read-only (they come from the panelists)."""

from django.contrib import admin

from delphi.models import (
    DelphiStudy,
    ItemDecision,
    Panelist,
    Participation,
    Proposal,
    Response,
    ResponseChange,
    Round,
)

SOFT = ["deleted_at", "deleted_by", "delete_reason"]


class NoDeleteAdmin(admin.ModelAdmin):
    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(NoDeleteAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0
    fields = ["number", "kind", "version", "status", "opened_at", "closed_at", "next_version"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(DelphiStudy)
class DelphiStudyAdmin(NoDeleteAdmin):
    list_display = ["title", "project", "scale", "status", "planned_rounds", "consensus_locked_at", "created_at",
                    "deleted_at"]
    list_filter = ["project", "status"]
    search_fields = ["title"]
    readonly_fields = ["consensus_fixed_at", "consensus_locked_at", "agreed_version", "created_at", *SOFT]
    inlines = [RoundInline]


@admin.register(Round)
class RoundAdmin(NoDeleteAdmin):
    list_display = ["study", "number", "kind", "status", "version", "opened_at", "closed_at"]
    list_filter = ["study__project", "kind", "status"]
    readonly_fields = ["opened_at", "closed_at", "closed_by", "next_version"]


@admin.register(Panelist)
class PanelistAdmin(NoDeleteAdmin):
    list_display = ["pseudonym", "study", "name", "email", "user", "professional_title", "deleted_at"]
    list_filter = ["study__project", "study"]
    search_fields = ["pseudonym", "name", "email"]
    readonly_fields = ["token_version", *SOFT]


@admin.register(Participation)
class ParticipationAdmin(NoDeleteAdmin):
    list_display = ["panelist", "round", "invited_at", "reminders_sent", "completed_at", "familiarity"]
    list_filter = ["round__study", "round"]


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdmin):
    list_display = ["participation", "item", "importance", "adoption", "updated_at"]
    list_filter = ["participation__round__study", "adoption"]


@admin.register(ResponseChange)
class ResponseChangeAdmin(ReadOnlyAdmin):
    list_display = ["response", "changed_at", "old_importance", "new_importance"]


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyAdmin):
    list_display = ["participation", "dimension_code", "text", "adoption", "created_at", "deleted_at"]


@admin.register(ItemDecision)
class ItemDecisionAdmin(ReadOnlyAdmin):
    list_display = ["round", "item", "action", "new_code", "decided_by", "decided_at", "deleted_at"]
    list_filter = ["round__study__project", "action", "round__study"]
