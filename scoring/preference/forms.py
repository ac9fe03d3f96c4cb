"""Forms of the preference study pages."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.models import Corpus
from projects.roles import PHYSICIAN, users_with_role
from scoring.judges.models import JudgeConfig, JudgeRun
from scoring.llm import gateway
from scoring.llm.forms import SpendCapsForm, name_cost_cap_currency
from scoring.preference.models import PreferenceStudy
from scoring.preference.services import CRITERIA_PRESETS, PreferenceError, parse_criteria

PRESET_CHOICES = [
    ("evaluation", _("Zhang et al., AutoMedEval, evaluations: knowledge correctness, reference correctness, "
                    "fluency")),
    ("response", _("Zhang et al., AutoMedEval, responses: relevancy, knowledge correctness, fluency")),
    ("overall", _("One overall preference")),
    ("custom", _("Custom (below)")),
]


class StudyForm(forms.Form):
    name = forms.CharField(max_length=200, label=_("Name"))
    kind = forms.ChoiceField(choices=PreferenceStudy.Kind.choices, label=_("What is compared"))
    criteria_preset = forms.ChoiceField(choices=PRESET_CHOICES, label=_("Criteria"), initial="evaluation")
    custom_criteria = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                      label=_("Custom criteria"), help_text=_('One per line: "Name: description".'))
    overlap = forms.IntegerField(min_value=1, max_value=50, initial=3, label=_("Raters per comparison"))
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), label=_("Instructions"),
                                   help_text=_("Shown to raters above every comparison."))
    item_codes = forms.CharField(required=False, label=_("Scale items shown (evaluation studies)"),
                                 help_text=_("Comma-separated codes, e.g. 1.1,3.2,4; empty: every item judged."))

    def clean(self):
        data = super().clean()
        if data.get("criteria_preset") == "custom":
            try:
                data["criteria"] = parse_criteria(data.get("custom_criteria", ""))
            except PreferenceError as exc:
                self.add_error("custom_criteria", str(exc))
                return data
            if not data["criteria"]:
                self.add_error("custom_criteria", gettext("Write at least one criterion."))
        elif data.get("criteria_preset") in CRITERIA_PRESETS:
            data["criteria"] = data["criteria_preset"]
        data["codes"] = [c.strip() for c in (data.get("item_codes") or "").split(",") if c.strip()]
        return data


class JudgeRunsForm(forms.Form):
    runs = forms.ModelMultipleChoiceField(queryset=JudgeRun.objects.none(), widget=forms.CheckboxSelectMultiple,
                                          label=_("Finished judge runs to compare"))

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["runs"].queryset = (JudgeRun.objects.filter(status__in=JudgeRun.FINISHED)
                                        .select_related("config", "corpus"))
        self.fields["runs"].label_from_instance = lambda r: gettext("#%(pk)s %(name)s on %(corpus)s") % {
            "pk": r.pk, "name": r.name, "corpus": r.corpus.name}


class DialoguesForm(forms.Form):
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none(), label=_("Corpus"))
    group_key = forms.CharField(max_length=100, initial="case_id", label=_("Case key in dialogue metadata"))
    models = forms.CharField(required=False, label=_("Doctor models"),
                             help_text=_("Comma-separated; empty: all models."))

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.alive()


class AnswersForm(forms.Form):
    file = forms.FileField(label=_("Answers (JSON Lines)"),
                           help_text=_('One answer a line: {"item": "q1", "prompt": "...", "source": "model-x", '
                                       '"answer": "..."}'))


class RatersForm(forms.Form):
    users = forms.ModelMultipleChoiceField(queryset=get_user_model().objects.none(),
                                           widget=forms.CheckboxSelectMultiple, label=_("Physicians"))
    capacity = forms.IntegerField(min_value=1, required=False, label=_("Capacity"),
                                  help_text=_("Most comparisons per rater; empty = no limit."))

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        # the project's physicians
        self.fields["users"].queryset = get_user_model().objects.filter(
            pk__in=users_with_role(PHYSICIAN, project).values("pk")).order_by("username")


class JudgeForm(forms.Form):
    config = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), label=_("Judge"))
    cost_cap = SpendCapsForm.base_fields["cost_cap"]
    token_cap = SpendCapsForm.base_fields["token_cap"]

    def __init__(self, *args, study: PreferenceStudy, **kwargs):
        from scoring.llm.endpoints import active_endpoints

        super().__init__(*args, **kwargs)
        excluded = study.sources.exclude(judge_run=None).values_list("judge_run__config_id", flat=True)
        self.fields["config"].queryset = JudgeConfig.objects.exclude(
            pk__in=list(excluded))
        name_cost_cap_currency(self, self.fields["config"].queryset.values_list("currency", flat=True))
        self.granted = set(active_endpoints(study.project_id).values_list("pk", flat=True))

    def clean_config(self):
        config = self.cleaned_data["config"]
        if config.endpoint_id is not None and config.endpoint_id not in self.granted:
            raise forms.ValidationError(gettext("Judge %(name)s cannot be used now: its endpoint is not granted to "
                                                "this project (or was deactivated).") % {"name": config.name})
        problem = gateway.endpoint_problem(config.base_url, config.api_key_env)
        if problem:
            raise forms.ValidationError(gettext("Judge %(name)s cannot be used now: %(problem)s")
                                        % {"name": config.name, "problem": problem})
        return config


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=2000, label=_("Reason"))
