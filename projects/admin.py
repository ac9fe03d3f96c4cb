"""The Django admin of projects, members, pseudonyms and the audit trail, and the admin bases the other apps'
study data use. The admin works across projects (``projects.access.ProjectMiddleware`` disables the scope on its
pages; only administrators reach them)."""

from django.contrib import admin

from projects.models import AuditEvent, Membership, Project, Pseudonym


class StudyDataAdmin(admin.ModelAdmin):
    """Study data is soft-deleted from the application with a reason, never deleted here."""

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyHistoryAdmin(admin.ModelAdmin):
    """History rows are written by the application only."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    fk_name = "project"
    extra = 0
    fields = ["user", "role", "added_at", "added_by"]
    readonly_fields = ["added_at", "added_by"]
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    """Projects and their members (the browser's project pages and ``manage.py project`` do the same, with
    audit events)."""

    list_display = ["name", "is_demo", "created_at", "created_by"]
    list_filter = ["is_demo"]
    search_fields = ["name"]
    readonly_fields = ["created_at", "created_by"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "role", "added_at", "added_by", "last_used_at"]
    list_filter = ["project", "role"]
    search_fields = ["user__username", "project__name"]
    readonly_fields = ["added_at", "added_by", "last_used_at"]
    autocomplete_fields = ["user"]


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyHistoryAdmin):
    list_display = ["at", "actor", "project", "action", "target_repr", "reason"]
    list_filter = ["project", "action"]
    search_fields = ["target_repr", "reason"]


@admin.register(Pseudonym)
class PseudonymAdmin(ReadOnlyHistoryAdmin):
    list_display = ["code", "project", "user", "created_at"]
    list_filter = ["project"]
    search_fields = ["code", "user__username"]
