"""Forms of the Delphi pages."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from annotation.models import ScaleVersion
from delphi.models import DelphiStudy, Familiarity


class SettingsForm(forms.ModelForm):
    reason = forms.CharField(required=False, label=_("Why (kept in the history)"))

    class Meta:
        model = DelphiStudy
        fields = ["invitation", "instructions", "consensus_min_mean", "consensus_max_cv", "consensus_min_agreement",
                  "agreement_level", "planned_rounds", "familiarity_threshold", "reminder_days", "link_valid_days"]
        labels = {
            "invitation": _("Invitation"),
            "instructions": _("Instructions"),
            "consensus_min_mean": _("Consensus: mean importance at least"),
            "consensus_max_cv": _("Consensus: coefficient of variation at most"),
            "consensus_min_agreement": _("Consensus: percentage rating at or above the agreement level, at least"),
            "agreement_level": _("Agreement level (ratings at or above it agree)"),
            "planned_rounds": _("Planned Delphi rounds"),
            "familiarity_threshold": _("Familiarity needed to stay on the panel"),
            "reminder_days": _("Remind non-responders every (days)"),
            "link_valid_days": _("Personal links valid for (days)"),
        }
        widgets = {"invitation": forms.Textarea(attrs={"rows": 4}), "instructions": forms.Textarea(attrs={"rows": 4})}

    def __init__(self, *args, locked: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["familiarity_threshold"].choices = Familiarity.choices
        if locked:
            for name in ("consensus_min_mean", "consensus_max_cv", "consensus_min_agreement", "agreement_level"):
                self.fields[name].disabled = True
                self.fields[name].help_text = _("Locked: round 1 has opened.")


class NewStudyForm(SettingsForm):
    title = forms.CharField(max_length=200, label=_("Title"))
    source = forms.ChoiceField(choices=[("version", _("An existing scale version")),
                                        ("draft", _("A new draft scale (type its items)"))],
                               widget=forms.RadioSelect, initial="version")
    version = forms.ModelChoiceField(queryset=ScaleVersion.objects.none(), required=False, label=_("Scale version"))
    scale_name = forms.CharField(max_length=200, required=False, label=_("Name of the new scale"))
    item_lines = forms.CharField(
        required=False, label=_("Items of the new scale"), widget=forms.Textarea(attrs={"rows": 8}),
        help_text=_("One per line: '1 Medical interviewing' starts a dimension, '1.1 Ask open questions | "
                    "guidance' adds an item to it."))

    class Meta(SettingsForm.Meta):
        fields = ["title", *SettingsForm.Meta.fields]

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        # The scoped manager: the project's own versions and the published library, never another project's drafts.
        self.fields["version"].queryset = ScaleVersion.objects.select_related("scale").order_by("scale__name_en",
                                                                                                "-number")

    field_order = ["title", "source", "version", "scale_name", "item_lines"]

    def clean(self):
        data = super().clean()
        if data.get("source") == "version" and not data.get("version"):
            self.add_error("version", _("Choose the scale version the panel starts from."))
        if data.get("source") == "draft" and not (data.get("item_lines") or "").strip():
            self.add_error("item_lines", _("Type the items of the draft scale."))
        return data
