from __future__ import annotations

from django import forms

from annotation.models import Corpus
from scoring.judges.models import JudgeConfig, PromptSet
from scoring.llm.endpoints import EndpointChoiceField


class JudgeConfigForm(forms.ModelForm):
    """A coordinator's judge: an administrator's endpoint (URL, key variable, limits) and a model; the endpoint's
    settings are copied into the configuration when it is saved."""

    endpoint = EndpointChoiceField(label="Endpoint")

    class Meta:
        model = JudgeConfig
        fields = ["name", "endpoint", "model", "mode", "temperature", "max_tokens", "seed", "structured_output",
                  "request_logprobs", "max_attempts", "price_input_per_1k", "price_output_per_1k", "prompt_set"]
        help_texts = {"price_input_per_1k": "Price per 1,000 prompt tokens (your currency).",
                      "price_output_per_1k": "Price per 1,000 completion tokens."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prompt_set"].queryset = PromptSet.objects.select_related("scale_version__scale")


class JudgeRunForm(forms.Form):
    config = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), label="Judge")
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none())
    filter_split = forms.ChoiceField(required=False, label="Split", choices=[
        ("", "All"), ("train", "Train"), ("validation", "Validation"), ("test", "Test")])
    filter_model = forms.CharField(required=False, max_length=200, label="Doctor model")
    filter_language = forms.CharField(required=False, max_length=16, label="Language")
    items = forms.CharField(required=False, help_text="Comma-separated item codes, e.g. 1.1,2.1 (empty: all items).")
    batch = forms.BooleanField(required=False, label="Use the Batch API",
                               help_text="Send the requests as one provider batch (/v1/batches): half the price, "
                                         "results within 24 hours. Needs an endpoint that offers the Batch API.")
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.alive()

    def item_codes(self) -> list[str]:
        return [c.strip() for c in self.cleaned_data["items"].split(",") if c.strip()]


class VerdictSettingsForm(forms.Form):
    """The judge report's verdict settings, set per report by the coordinator (GET parameters; printed with it)."""

    floor = forms.FloatField(min_value=-1, max_value=1, initial=0.40, label="Reliability floor",
                             help_text="Physicians' own agreement (kappa, or AC1 at extreme prevalence; weighted "
                                       "kappa on levels and scale items, AC2 at extreme prevalence) below this: item "
                                       "unreliable.")
    min_dialogues = forms.IntegerField(min_value=2, max_value=1_000_000, initial=30, label="Minimum dialogues",
                                       help_text="Fewer dialogues with judge and physician labels: not enough data.")
    margin = forms.FloatField(min_value=0, max_value=1, initial=0.10, label="Non-inferiority margin",
                              help_text="The judge may replace physicians when the lower 95% limit of (judge minus "
                                        "physician agreement) is above minus this margin.")
    ci = forms.ChoiceField(choices=[("percentile", "Percentile bootstrap"), ("bca", "BCa bootstrap")],
                           initial="percentile", label="Intervals")

    @classmethod
    def from_query(cls, params) -> VerdictSettingsForm:
        """Bound to the query string's settings, defaults for the ones left out."""
        data = {name: params.get(name, field.initial) for name, field in cls.base_fields.items()}
        return cls(data)

    def settings(self):
        from scoring.judges.report import VerdictSettings

        data = self.cleaned_data
        return VerdictSettings(floor=data["floor"], min_dialogues=data["min_dialogues"], margin=data["margin"],
                               ci_method=data["ci"])

    def query(self) -> str:
        from urllib.parse import urlencode

        data = self.cleaned_data
        return urlencode({"floor": f"{data['floor']:g}", "min_dialogues": data["min_dialogues"],
                          "margin": f"{data['margin']:g}", "ci": data["ci"]})
