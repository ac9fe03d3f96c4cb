from django.contrib import admin

from annotation.models import (
    Adjudication,
    Assignment,
    Campaign,
    CampaignRater,
    Corpus,
    Dialogue,
    Dimension,
    GoldLabel,
    Item,
    Label,
    LabelChange,
    RandomSample,
    RaterProfile,
    Redaction,
    Scale,
    ScaleVersion,
)
from projects.admin import LargeTableAdmin, ReadOnlyHistoryAdmin, StudyDataAdmin


class LockedVersionMixin:
    """Published or used versions are read-only in the admin too."""

    def _locked(self, obj) -> bool:
        version = obj if isinstance(obj, ScaleVersion) else getattr(obj, "version", None)
        return bool(version and version.is_locked)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and not self._locked(obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and not self._locked(obj)


class DimensionInline(LockedVersionMixin, admin.TabularInline):
    model = Dimension
    extra = 0


class ItemInline(LockedVersionMixin, admin.StackedInline):
    model = Item
    extra = 0
    fk_name = "version"
    fields = [("code", "order", "response_type", "value"), ("scale_min", "scale_max", "anchors"),
              ("dimension", "parent"), ("text_en", "text_zh"), ("guidance_en", "guidance_zh")]


@admin.register(Scale)
class ScaleAdmin(admin.ModelAdmin):
    list_display = ["name_en", "name_zh", "slug", "target", "project", "created_at"]
    list_filter = ["project", "target"]
    prepopulated_fields = {"slug": ["name_en"]}


@admin.register(ScaleVersion)
class ScaleVersionAdmin(LockedVersionMixin, admin.ModelAdmin):
    list_display = ["scale", "number", "status", "project", "published_at", "locked_at", "created_by"]
    list_filter = ["project", "scale", "status"]
    readonly_fields = ["created_at", "created_by", "published_at", "locked_at", "locked_reason"]
    inlines = [DimensionInline, ItemInline]


@admin.register(Dimension)
class DimensionAdmin(LockedVersionMixin, admin.ModelAdmin):
    list_display = ["code", "name_en", "name_zh", "version"]
    list_filter = ["version__scale", "version"]


@admin.register(Item)
class ItemAdmin(LockedVersionMixin, admin.ModelAdmin):
    list_display = ["code", "text_en", "response_type", "dimension", "version"]
    list_filter = ["version__scale", "version", "response_type"]
    search_fields = ["code", "text_en", "text_zh"]


@admin.register(Corpus)
class CorpusAdmin(StudyDataAdmin):
    list_display = ["name", "project", "kind", "is_demo", "created_at", "deleted_at"]
    list_filter = ["project", "kind", "is_demo"]
    readonly_fields = ["deleted_at", "deleted_by", "delete_reason"]


@admin.register(Dialogue)
class DialogueAdmin(StudyDataAdmin):
    list_display = ["external_id", "corpus", "source_model", "language", "split", "deleted_at"]
    list_filter = ["corpus__project", "corpus", "language", "split"]
    search_fields = ["external_id", "self_report"]
    readonly_fields = ["deleted_at", "deleted_by", "delete_reason"]


class CampaignRaterInline(admin.TabularInline):
    model = CampaignRater
    extra = 0
    raw_id_fields = ["user", "added_by"]


@admin.register(Campaign)
class CampaignAdmin(StudyDataAdmin):
    list_display = ["name", "project", "phase", "status", "corpus", "scale_version", "overlap", "deadline",
                    "deleted_at"]
    list_filter = ["project", "phase", "status"]
    readonly_fields = ["deleted_at", "deleted_by", "delete_reason", "scale_version", "corpus"]
    inlines = [CampaignRaterInline]


@admin.register(RandomSample)
class RandomSampleAdmin(ReadOnlyHistoryAdmin):
    """A sample is drawn or declared once (annotation.sampling), never edited."""

    list_display = ["campaign", "kind", "size", "seed", "stratified", "created_by", "created_at"]
    list_filter = ["campaign__project", "kind"]


@admin.register(CampaignRater)
class CampaignRaterAdmin(admin.ModelAdmin):
    list_display = ["campaign", "user", "team", "capacity", "available_until", "active"]
    list_filter = ["campaign__project", "campaign", "active"]


@admin.register(Assignment)
class AssignmentAdmin(StudyDataAdmin):
    list_display = ["campaign", "dialogue", "rater", "status", "flagged", "submitted_at"]
    list_filter = ["campaign__project", "campaign", "status", "flagged"]
    raw_id_fields = ["dialogue", "rater"]
    readonly_fields = ["campaign", "dialogue", "rater"]


@admin.register(Label)
class LabelAdmin(LargeTableAdmin, ReadOnlyHistoryAdmin):
    list_display = ["id", "campaign", "dialogue", "rater", "item", "value", "updated_at"]
    list_filter = ["campaign__project", "campaign"]
    list_select_related = ["campaign", "dialogue__corpus", "rater", "item"]
    ordering = ["-id"]  # the primary key's index (the model's order joins items and sorts every label)
    raw_id_fields = ["assignment", "campaign", "dialogue", "rater", "item"]


@admin.register(LabelChange)
class LabelChangeAdmin(ReadOnlyHistoryAdmin):
    list_display = ["label", "old_value", "new_value", "changed_by", "changed_at", "source", "reason"]
    list_filter = ["source"]


@admin.register(GoldLabel)
class GoldLabelAdmin(ReadOnlyHistoryAdmin):
    list_display = ["campaign", "dialogue", "item", "value", "set_by", "set_at"]


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyHistoryAdmin):
    list_display = ["campaign", "dialogue", "item", "value", "decided_by", "decided_at", "reason"]


@admin.register(Redaction)
class RedactionAdmin(ReadOnlyHistoryAdmin):
    list_display = ["dialogue", "field", "turn", "start", "end", "source", "created_by", "created_at", "revoked_at"]
    list_filter = ["source"]


@admin.register(RaterProfile)
class RaterProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "is_external", "created_at"]
