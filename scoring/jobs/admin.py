"""Admin pages: background jobs."""

from django.contrib import admin

from scoring.jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "requested_by", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = ["result", "error", "started_at", "finished_at", "attempts"]
