"""Forms of the dialogue generation pages."""

from __future__ import annotations

from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from scoring.generation import prompts as gp
from scoring.generation import services as generation
from scoring.generation.models import CaseSet
from scoring.llm.endpoints import EndpointChoiceField, limit_to
from scoring.llm.forms import SpendCapsForm, name_cost_cap_currency
from scoring.llm.models import LLMEndpoint


def endpoint_limits(doctor: LLMEndpoint, patient: LLMEndpoint) -> dict:
    """One job has one set of limits: the stricter of its two endpoints' (the longer timeout)."""
    def stricter(a, b):
        values = [v for v in (a, b) if v]
        return min(values) if values else None

    return {"concurrency": min(doctor.concurrency, patient.concurrency),
            "requests_per_minute": stricter(doctor.requests_per_minute, patient.requests_per_minute),
            "tokens_per_minute": stricter(doctor.tokens_per_minute, patient.tokens_per_minute),
            "timeout_seconds": max(doctor.timeout_seconds, patient.timeout_seconds)}


class CaseImportForm(forms.Form):
    file = forms.FileField(label=_("Cases file (JSON Lines)"))
    case_set = forms.CharField(max_length=200, label=_("Case set"),
                               help_text=_("An existing case set adds to it; a new name creates it."))
    description = forms.CharField(required=False, label=_("Description"), widget=forms.Textarea(attrs={"rows": 2}))


#: AgentClinic's bias conditions by name (the prompts' keys, scoring.generation.prompts), as the form names them.
BIAS_NAMES = {
    "recency": pgettext_lazy("bias", "recency"), "frequency": pgettext_lazy("bias", "frequency"),
    "false_consensus": pgettext_lazy("bias", "false consensus"),
    "self_diagnosis": pgettext_lazy("bias", "self diagnosis"), "status_quo": pgettext_lazy("bias", "status quo"),
    "confirmation": pgettext_lazy("bias", "confirmation"), "gender": pgettext_lazy("bias", "gender"),
    "race": pgettext_lazy("bias", "race"), "sexual_orientation": pgettext_lazy("bias", "sexual orientation"),
    "cultural": pgettext_lazy("bias", "cultural"), "education": pgettext_lazy("bias", "education"),
    "religion": pgettext_lazy("bias", "religion"), "socioeconomic": pgettext_lazy("bias", "socioeconomic"),
}


def _bias_choices(table: dict[str, str]) -> list[tuple[str, str]]:
    return [(gp.NO_BIAS, _("No bias"))] + [
        (name, format_lazy("{} ({})", BIAS_NAMES.get(name, name.replace("_", " ")),
                           _("cognitive") if name in gp.COGNITIVE else _("implicit"))) for name in table]


#: The prompts are the models', in English whatever the page's language: marked so (screen readers, translators).
PROMPT = {"lang": "en", "translate": "no"}


class GenerationJobForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, label=_("Name"), help_text=_("Empty: the models' names."))
    case_set = forms.ModelChoiceField(queryset=CaseSet.objects.none(), label=_("Case set"))
    corpus_name = forms.CharField(max_length=200, label=_("Output corpus"),
                                  help_text=_("The dialogues go into this corpus (created if new; an existing "
                                              "corpus gets them added)."))
    doctor_models = forms.CharField(max_length=500, label=_("Doctor model(s) under test"),
                                    help_text=_("Comma-separated model names at the doctor endpoint."))
    doctor_endpoint = EndpointChoiceField(label=_("Doctor endpoint"))
    patient_model = forms.CharField(max_length=200, label=_("Patient simulator model"))
    patient_endpoint = EndpointChoiceField(
        label=_("Patient endpoint"), help_text=_("Also used by the measurement agent and the moderator. Defined by "
                                                 "an administrator (URL, key variable and limits)."))
    measurement_model = forms.CharField(max_length=200, required=False, label=_("Measurement model"),
                                        help_text=_("Empty: the patient model."))
    moderator_model = forms.CharField(max_length=200, required=False, label=_("Moderator model"),
                                      help_text=_("Empty: the patient model."))
    temperatures = forms.CharField(max_length=200, initial="0.2, 0.8", label=_("Doctor temperatures"),
                                   help_text=_("Comma-separated; low and high temperatures give better and worse "
                                               "dialogues (Shi et al., LLM-Mini-CEX, sec. 4.4)."))
    doctor_biases = forms.MultipleChoiceField(choices=_bias_choices(gp.DOCTOR_BIASES), initial=[gp.NO_BIAS],
                                              widget=forms.CheckboxSelectMultiple, label=_("Doctor biases"),
                                              help_text=_("Each checked condition is generated (AgentClinic)."))
    patient_biases = forms.MultipleChoiceField(choices=_bias_choices(gp.PATIENT_BIASES), initial=[gp.NO_BIAS],
                                               widget=forms.CheckboxSelectMultiple, label=_("Patient biases"))
    repeats = forms.IntegerField(min_value=1, max_value=100, initial=1, label=_("Repeats"),
                                 help_text=_("Dialogues per case, model and condition."))
    max_turns = forms.IntegerField(min_value=1, max_value=100, initial=10, label=_("Turn limit"),
                                   help_text=_("Most doctor turns; a test request counts as one."))
    end_marker = forms.CharField(max_length=60, initial=gp.END_MARKER, label=_("End marker"))
    reveal_diagnosis = forms.BooleanField(required=False, label=_("Tell the patient simulator its diagnosis"),
                                          help_text=_("Off by default: the diagnosis is for the moderator only."))
    patient_temperature = forms.FloatField(min_value=0, max_value=2, initial=0.2, label=_("Patient temperature"))
    max_tokens = forms.IntegerField(min_value=16, max_value=8000, initial=300, label=_("Max tokens per turn"))
    split = forms.ChoiceField(required=False, label=pgettext_lazy("the corpus's train/validation/test part", "Split"),
                              choices=[("", _("None")), ("train", _("Train")), ("validation", _("Validation")),
                                       ("test", _("Test"))])
    max_attempts = forms.IntegerField(min_value=1, max_value=50, initial=6, label=_("Max attempts"))
    doctor_price_in = forms.DecimalField(min_value=0, decimal_places=6, initial=0,
                                         label=_("Doctor price per 1,000 prompt tokens"))
    doctor_price_out = forms.DecimalField(min_value=0, decimal_places=6, initial=0,
                                          label=_("Doctor price per 1,000 completion tokens"))
    patient_price_in = forms.DecimalField(min_value=0, decimal_places=6, initial=0,
                                          label=_("Patient endpoint price per 1,000 prompt tokens"))
    patient_price_out = forms.DecimalField(min_value=0, decimal_places=6, initial=0,
                                           label=_("Patient endpoint price per 1,000 completion tokens"))
    cost_cap = SpendCapsForm.base_fields["cost_cap"]
    token_cap = SpendCapsForm.base_fields["token_cap"]
    doctor_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 7, **PROMPT}), initial=gp.DOCTOR_PROMPT,
                                    label=_("Doctor prompt"),
                                    help_text=_("Slots: {information} {end_marker} {max_turns} {tests} {bias}."))
    patient_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 7, **PROMPT}), initial=gp.PATIENT_PROMPT,
                                     label=_("Patient prompt"),
                                     help_text=_("Slots: {information} {bias}. The information never contains the "
                                                 "diagnosis unless it is revealed above."))
    measurement_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 5, **PROMPT}),
                                         initial=gp.MEASUREMENT_PROMPT, label=_("Measurement prompt"),
                                         help_text=_("Slot: {information} (examination findings and test results)."))
    moderator_prompt = forms.CharField(widget=forms.Textarea(attrs={"rows": 3, **PROMPT}),
                                       initial=gp.MODERATOR_PROMPT, label=_("Moderator prompt"))

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["case_set"].queryset = CaseSet.objects.alive()
        limit_to(self, project)
        # a job's costs are in its doctor endpoint's currency
        name_cost_cap_currency(self, self.fields["doctor_endpoint"].queryset.values_list("currency", flat=True))

    def clean_doctor_models(self):
        models = [m.strip() for m in self.cleaned_data["doctor_models"].split(",") if m.strip()]
        if not models:
            raise forms.ValidationError(_("Give at least one model."))
        return models

    def clean_temperatures(self):
        values = generation.parse_list(self.cleaned_data["temperatures"])
        try:
            return generation._floats(values)
        except generation.GenerationError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        for name in ("doctor_prompt", "patient_prompt", "measurement_prompt", "moderator_prompt"):
            if data.get(name):
                problem = gp.check_prompt(name, data[name])
                if problem:
                    self.add_error(name, problem)
        return data

    def job_kwargs(self) -> dict:
        d = self.cleaned_data
        keys = ["name", "case_set", "corpus_name", "doctor_models", "patient_model", "measurement_model",
                "moderator_model", "temperatures", "doctor_biases", "patient_biases", "repeats", "max_turns",
                "end_marker", "reveal_diagnosis", "patient_temperature", "max_tokens", "split", "max_attempts",
                "doctor_price_in", "doctor_price_out", "patient_price_in", "patient_price_out", "cost_cap",
                "token_cap"]
        kwargs = {k: d[k] for k in keys}
        doctor, patient = d["doctor_endpoint"], d["patient_endpoint"]
        kwargs["currency"] = doctor.currency
        kwargs.update(doctor_base_url=doctor.base_url, doctor_api_key_env=doctor.api_key_env,
                      patient_base_url=patient.base_url, patient_api_key_env=patient.api_key_env,
                      **endpoint_limits(doctor, patient))
        kwargs["prompt_texts"] = {k: d[k] for k in ("doctor_prompt", "patient_prompt", "measurement_prompt",
                                                     "moderator_prompt")}
        return kwargs
