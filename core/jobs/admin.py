"""Admin pages: background jobs."""

from django.contrib import admin

from core.jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "project", "status", "requested_by", "created_at", "finished_at"]
    list_filter = ["project", "kind", "status"]  # no project: an instance-wide job (the worker check)
    readonly_fields = ["result", "error", "started_at", "finished_at", "attempts"]
