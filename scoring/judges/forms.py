from __future__ import annotations

from django import forms

from annotation.models import Corpus
from scoring.judges.models import JudgeConfig, PromptSet


class JudgeConfigForm(forms.ModelForm):
    class Meta:
        model = JudgeConfig
        fields = ["name", "base_url", "api_key_env", "model", "mode", "temperature", "max_tokens", "seed",
                  "structured_output", "request_logprobs", "concurrency", "requests_per_minute", "tokens_per_minute",
                  "timeout_seconds", "max_attempts", "price_input_per_1k", "price_output_per_1k", "prompt_set"]
        help_texts = {"price_input_per_1k": "Price per 1,000 prompt tokens (your currency).",
                      "price_output_per_1k": "Price per 1,000 completion tokens."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["prompt_set"].queryset = PromptSet.objects.select_related("scale_version__scale")

    def clean_api_key_env(self):
        value = self.cleaned_data["api_key_env"].strip()
        if not value.replace("_", "").isalnum() or value[0].isdigit():
            raise forms.ValidationError("Give the NAME of an environment variable (e.g. OPENAI_API_KEY), "
                                        "never the key itself.")
        return value


class JudgeRunForm(forms.Form):
    config = forms.ModelChoiceField(queryset=JudgeConfig.objects.all(), label="Judge")
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none())
    filter_split = forms.ChoiceField(required=False, label="Split", choices=[
        ("", "All"), ("train", "Train"), ("validation", "Validation"), ("test", "Test")])
    filter_model = forms.CharField(required=False, max_length=200, label="Doctor model")
    filter_language = forms.CharField(required=False, max_length=16, label="Language")
    items = forms.CharField(required=False, help_text="Comma-separated item codes, e.g. 1.1,2.1 (empty: all items).")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.alive()

    def item_codes(self) -> list[str]:
        return [c.strip() for c in self.cleaned_data["items"].split(",") if c.strip()]


class VerdictSettingsForm(forms.Form):
    """The judge report's verdict settings, set per report by the coordinator (GET parameters; printed with it)."""

    floor = forms.FloatField(min_value=-1, max_value=1, initial=0.40, label="Reliability floor",
                             help_text="Physicians' own agreement (kappa, or AC1 at extreme prevalence) below this: "
                                       "item unreliable.")
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
