from __future__ import annotations

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.models import Corpus
from scoring.judges.models import JudgeConfig, PromptSet
from scoring.llm import gateway
from scoring.llm.endpoints import EndpointChoiceField, limit_to
from scoring.llm.forms import SpendCapsForm, name_cost_cap_currency


class JudgeConfigForm(forms.ModelForm):
    """A coordinator's judge: an administrator's endpoint (URL, key variable, limits) and a model; the endpoint's
    settings are copied into the configuration when it is saved."""

    endpoint = EndpointChoiceField(label=_("Endpoint"))

    class Meta:
        model = JudgeConfig
        fields = ["name", "endpoint", "model", "mode", "temperature", "max_tokens", "seed", "structured_output",
                  "request_logprobs", "draws", "draw_temperature", "max_attempts", "price_input_per_1k",
                  "price_output_per_1k", "prompt_set"]
        help_texts = {"price_input_per_1k": _("Price per 1,000 prompt tokens, in the endpoint's currency (0 and 0: "
                                              "the cost is shown as unknown)."),
                      "price_output_per_1k": _("Price per 1,000 completion tokens, in the endpoint's currency.")}
        labels = {"name": _("Name"), "model": _("Model"), "mode": _("Mode"), "temperature": _("Temperature"),
                  "max_tokens": _("Max tokens"), "seed": _("Seed"), "structured_output": _("Structured output"),
                  "request_logprobs": _("Request logprobs"), "draws": _("Draws"),
                  "draw_temperature": _("Draw temperature"), "max_attempts": _("Max attempts"),
                  "price_input_per_1k": _("Price input per 1k"), "price_output_per_1k": _("Price output per 1k"),
                  "prompt_set": _("Prompt set")}

    def __init__(self, *args, project, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.instance.project = project
        limit_to(self, project)
        self.fields["prompt_set"].queryset = (PromptSet.objects
                                              .select_related("scale_version__scale"))
        for name in ("draws", "draw_temperature"):  # optional: left out, the model's default (one draw)
            self.fields[name].required = False

    def clean_draws(self):
        return self.cleaned_data.get("draws") or JudgeConfig._meta.get_field("draws").default

    def clean_draw_temperature(self):
        value = self.cleaned_data.get("draw_temperature")
        return JudgeConfig._meta.get_field("draw_temperature").default if value is None else value

    def _get_validation_exclusions(self):
        # the name is unique per project: check it with the project, which is not a field of the form
        exclude = super()._get_validation_exclusions()
        exclude.discard("project")
        return exclude


class JudgeRunForm(forms.Form):
    """A run of one of the project's judges on one of its corpora."""

    config = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), label=_("Judge"))
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none(), label=_("Corpus"))
    filter_split = forms.ChoiceField(required=False, label=_("Split"), choices=[
        ("", _("All")), ("train", _("Train")), ("validation", _("Validation")), ("test", _("Test"))])
    filter_model = forms.CharField(required=False, max_length=200, label=_("Doctor model"))
    filter_language = forms.CharField(required=False, max_length=16, label=_("Language"))
    items = forms.CharField(required=False, label=_("Items"),
                            help_text=_("Comma-separated item codes, e.g. 1.1,2.1 (empty: all items)."))
    batch = forms.BooleanField(required=False, label=_("Use the Batch API"),
                               help_text=_("Send the requests as one provider batch (/v1/batches): half the price, "
                                           "results within 24 hours. Needs an endpoint that offers the Batch API."))
    cost_cap = SpendCapsForm.base_fields["cost_cap"]
    token_cap = SpendCapsForm.base_fields["token_cap"]
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, project, **kwargs):
        from scoring.llm.endpoints import active_endpoints

        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.alive()
        configs = JudgeConfig.objects
        self.fields["config"].queryset = configs
        granted = set(active_endpoints(project).values_list("pk", flat=True))
        # Why each judge cannot send anything now ("" when it can): shown beside the choice, and Start stays off.
        # A judge on an endpoint no longer granted to the project (or deactivated) cannot start a run here.
        self.problems = {
            config.pk: (gateway.endpoint_problem(config.base_url, config.api_key_env)
                        if config.endpoint_id is None or config.endpoint_id in granted
                        else gettext("its endpoint is not granted to this project (or was deactivated)"))
            for config in configs.only("pk", "base_url", "api_key_env", "endpoint_id")}
        self.fields["config"].label_from_instance = (
            lambda config: gettext("%(judge)s (cannot be used: %(problem)s)")
            % {"judge": config.name, "problem": self.problems[config.pk]}
            if self.problems.get(config.pk) else config.name)
        chosen = configs.filter(pk=self.data.get("config")) if str(self.data.get("config", "")).isdigit() else None
        name_cost_cap_currency(self, (chosen if chosen else configs).values_list("currency", flat=True))

    @property
    def usable(self) -> bool:
        """Some judge can send requests."""
        return any(not problem for problem in self.problems.values())

    def reasons(self) -> list[tuple[str, str]]:
        """(judge, why it cannot be used) for every judge that cannot send requests."""
        names = dict(JudgeConfig.objects.filter(pk__in=list(self.problems)).values_list("pk", "name"))
        return [(names[pk], problem) for pk, problem in self.problems.items() if problem]

    def clean_config(self):
        config = self.cleaned_data["config"]
        problem = self.problems.get(config.pk) or gateway.endpoint_problem(config.base_url, config.api_key_env)
        if problem:
            raise forms.ValidationError(gettext("Judge %(judge)s cannot be used now: %(problem)s")
                                        % {"judge": config.name, "problem": problem})
        return config

    def item_codes(self) -> list[str]:
        return [c.strip() for c in self.cleaned_data["items"].split(",") if c.strip()]


class VerdictSettingsForm(forms.Form):
    """The judge report's verdict settings, set per report by the coordinator (GET parameters; printed with it)."""

    floor = forms.FloatField(min_value=-1, max_value=1, initial=0.40, label=_("Reliability floor"),
                             help_text=_("Physicians' own agreement (kappa, or AC1 at extreme prevalence; weighted "
                                         "kappa on levels and scale items, AC2 at extreme prevalence) below this: "
                                         "item unreliable. 0.40 is where 'moderate' starts on Landis & Koch's "
                                         "bands."))
    min_dialogues = forms.IntegerField(min_value=2, max_value=1_000_000, initial=30, label=_("Minimum dialogues"),
                                       help_text=_("Fewer dialogues with judge and physician labels: not enough "
                                                   "data."))
    margin = forms.FloatField(min_value=0, max_value=1, initial=0.10, label=_("Non-inferiority margin"),
                              help_text=_("The judge may replace physicians when the lower 95% limit of (judge minus "
                                          "physician agreement) is above minus this margin."))
    ci = forms.ChoiceField(choices=[("percentile", _("Percentile bootstrap")), ("bca", _("BCa bootstrap"))],
                           initial="percentile", label=_("Intervals"))

    def in_words(self, words) -> VerdictSettingsForm:
        """Labels and help in the report's words (answers and raters on an answer instrument); returns the form."""
        from scoring.reports.wording import shown

        w = shown(words)
        texts = {
            "floor": (None, gettext("%(raters)s' own agreement (kappa, or AC1 at extreme prevalence; weighted kappa on "
                                    "levels and scale items, AC2 at extreme prevalence) below this: item unreliable. "
                                    "0.40 is where 'moderate' starts on Landis & Koch's bands.")
                      % {"raters": w["raters"][:1].upper() + w["raters"][1:]}),
            "min_dialogues": (gettext("Minimum %(units)s") % w,
                              gettext("Fewer %(units)s with judge and %(rater)s labels: not enough data.") % w),
            "margin": (None, gettext("The judge may replace %(raters)s when the lower 95%% limit of (judge minus "
                                     "%(rater)s agreement) is above minus this margin.") % w),
        }
        for name, (label, help_text) in texts.items():
            bound = self[name]  # the form's bound field (validation made it already: set it too)
            if label:
                self.fields[name].label = bound.label = label
            self.fields[name].help_text = bound.help_text = help_text
        return self

    @classmethod
    def from_query(cls, params) -> VerdictSettingsForm:
        """Bound to the query string's settings, defaults for the ones left out."""
        data = {name: params.get(name, field.initial) for name, field in cls.base_fields.items()}
        return cls(data)

    def settings(self):
        from scoring.judges.verdicts import VerdictSettings

        data = self.cleaned_data
        return VerdictSettings(floor=data["floor"], min_dialogues=data["min_dialogues"], margin=data["margin"],
                               ci_method=data["ci"])

    def query(self) -> str:
        from urllib.parse import urlencode

        data = self.cleaned_data
        return urlencode({"floor": f"{data['floor']:g}", "min_dialogues": data["min_dialogues"],
                          "margin": f"{data['margin']:g}", "ci": data["ci"]})


class SelectionSettingsForm(VerdictSettingsForm):
    """A campaign's stored judge selection settings (:class:`scoring.judges.models.SelectionSettings`): the verdict
    settings, the held-out share and the seed, changed on the selection page (audited)."""

    held_out_share = forms.FloatField(initial=0.3, label=_("Held-out share"),
                                      help_text=_("The share of the physician-labelled dialogues that confirms the "
                                                  "choice (between 0 and 1)."))
    seed = forms.IntegerField(min_value=0, max_value=2**32 - 1, initial=20240501, label=_("Seed"),
                              help_text=_("Seed of the split and of the bootstrap (recorded with the table)."))
    reason = forms.CharField(required=False, max_length=500, label=_("Why (optional, kept in the audit trail)"))

    @classmethod
    def of(cls, stored) -> SelectionSettingsForm:
        """Unbound, showing ``stored`` (:class:`~scoring.judges.models.SelectionSettings`)."""
        verdict = {"floor": 0.40, "min_dialogues": 30, "margin": 0.10, "ci_method": "percentile", **stored.verdict}
        return cls(initial={"floor": verdict["floor"], "min_dialogues": verdict["min_dialogues"],
                            "margin": verdict["margin"], "ci": verdict["ci_method"],
                            "held_out_share": stored.held_out_share, "seed": stored.seed})

    def verdict(self) -> dict:
        data = self.cleaned_data
        return {"floor": data["floor"], "min_dialogues": data["min_dialogues"], "margin": data["margin"],
                "ci_method": data["ci"]}


class JuryForm(forms.Form):
    """A jury of two or more finished runs on one corpus (the judges page)."""

    name = forms.CharField(max_length=120, label=_("Jury name"))
    corpus = forms.ModelChoiceField(queryset=Corpus.objects.none(), label=_("Corpus"))
    runs = forms.ModelMultipleChoiceField(queryset=None, label=_("Member runs"),
                                          help_text=_("Two or more finished runs on the corpus, on one instrument."))
    rule = forms.ChoiceField(label=_("Rule"), help_text=_("Majority vote for binary items; the median or mean for "
                                                          "levels and scales."))
    tie_rule = forms.ChoiceField(label=_("Ties"), help_text=_("A tied vote, or a median or mean half-way between two "
                                                              "allowed values."))
    round_to_grid = forms.BooleanField(required=False, initial=True, label=_("Round to the item's allowed values"),
                                       help_text=_("Median and mean only; the report's agreement figures need them."))

    def __init__(self, *args, **kwargs):
        from scoring.judges.models import JudgeRun, Jury

        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.alive()
        self.fields["runs"].queryset = (JudgeRun.objects.filter(status__in=JudgeRun.FINISHED)
                                        .select_related("config", "corpus"))
        self.fields["runs"].label_from_instance = lambda run: f"#{run.pk} {run.name} ({run.corpus.name})"
        self.fields["rule"].choices = Jury.Rule.choices
        self.fields["tie_rule"].choices = Jury.TieRule.choices
