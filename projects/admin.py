"""The Django admin of projects, members, pseudonyms and the audit trail, and the admin bases the other apps'
study data use. The admin works across projects (``projects.access.ProjectMiddleware`` disables the scope on its
pages; only administrators reach them)."""

from django.contrib import admin
from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property

from projects.models import AuditEvent, Membership, Project, Pseudonym


class CappedCountPaginator(Paginator):
    """A paginator that counts at most :attr:`cap` rows (one index scan that stops there), and beyond that, on
    PostgreSQL with no filter, takes the planner's estimate of the table's rows (``pg_class.reltuples``, kept by
    autovacuum); else the cap. Counting every row of a 643,200-label table took most of a change list's second;
    the last pages of a list that long are reached by filtering, not by paging."""

    cap = 10_000

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        capped = queryset.order_by().values("pk")[: self.cap + 1].count()
        if capped <= self.cap:
            return capped
        connection = connections[queryset.db]
        if connection.vendor == "postgresql" and not queryset.query.where:
            with connection.cursor() as cursor:
                cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                               [queryset.model._meta.db_table])
                row = cursor.fetchone()
            if row and row[0] and row[0] > self.cap:
                return int(row[0])
        return self.cap


class LargeTableAdmin(admin.ModelAdmin):
    """The change list of a table that grows with the studies (labels, judge answers): no count of every row
    (``show_full_result_count``), a capped count for the pages (:class:`CappedCountPaginator`); subclasses order
    by an indexed column and select the relations their columns show, so a page is one query whatever the rows."""

    show_full_result_count = False
    paginator = CappedCountPaginator
    sortable_by = ["id"]  # the other columns are not indexed for ordering: each would sort every row


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
