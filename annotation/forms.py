from django import forms
from django.utils.functional import lazy
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

# Chinese words in an English form are marked as Chinese (lang="zh"), for screen readers and fonts; so are the
# fields that take Chinese text.
CHINESE = format_html('<span lang="zh" translate="no">{}</span>', "中文")
ZH_TEXT = {"lang": "zh"}


def _zh_label(what: str) -> str:
    return format_html("{} ({})", what, CHINESE)


#: "<label> (中文)", in the page's language when ``what`` is a lazy translation.
zh_label = lazy(_zh_label, SafeString)


class LanguageSelect(forms.Select):
    """A choice of languages, each option marked with its own language (lang="zh" on 中文)."""

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        option["attrs"]["lang"] = value
        option["attrs"]["translate"] = "no"  # a language's name in its own language
        return option


class NewVersionForm(forms.Form):
    note = forms.CharField(
        label=_("Why a new version?"), widget=forms.Textarea(attrs={"rows": 3}), max_length=2000,
        help_text=_("Recorded in the version's history, e.g. 'Delphi round 2 revisions'."),
    )


class NewScaleForm(forms.Form):
    name_en = forms.CharField(label=_("Name (English)"), max_length=200, required=False)
    name_zh = forms.CharField(label=zh_label(_("Name")), max_length=200, required=False,
                              widget=forms.TextInput(attrs=ZH_TEXT))
    slug = forms.SlugField(label=_("Slug"), max_length=50,
                           help_text=_("Short identifier used in URLs, files and the command line, e.g. my-rubric."))
    language = forms.ChoiceField(label=_("Language"), choices=[("en", "English"), ("zh", "中文")], initial="en",
                                 widget=LanguageSelect,
                                 help_text=_("The language the instrument is written in (its text is required in "
                                             "it)."))
    target = forms.ChoiceField(choices=[("dialogue", _("Doctor-patient dialogues")),
                                        ("answer", _("Answers to questions (question-answer items)"))],
                               label=_("Rates"), initial="dialogue")
    show_reference = forms.BooleanField(required=False, initial=True,
                                        label=_("Show raters the reference answer (answers only)"))
    description = forms.CharField(label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 3}))


class DimensionForm(forms.Form):
    code = forms.CharField(label=_("Code"), max_length=16, help_text=_('e.g. "1" or "P"'))
    name_en = forms.CharField(label=_("Name (English)"), max_length=300, required=False)
    name_zh = forms.CharField(label=zh_label(_("Name")), max_length=300, required=False,
                              widget=forms.TextInput(attrs=ZH_TEXT))

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "dimension_%s")  # shares its page with the item form
        super().__init__(*args, **kwargs)


def _pairs(text: str, field: str) -> dict:
    """Lines "value = English label | 中文" -> {"value": {"en": ..., "zh": ...}} (value kept as typed)."""
    out = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        value, sep, label = line.partition("=")
        if not sep:
            raise forms.ValidationError(_('%(field)s, line %(n)d: write "value = label", e.g. "0 = lowest".')
                                        % {"field": field, "n": n})
        en, _bar, zh = label.partition("|")
        out[value.strip()] = {"en": en.strip(), "zh": zh.strip()}
    return out


class ItemForm(forms.Form):
    """One item as the instrument file has it; the instrument rules (instruments.add_item) check it."""

    dimension = forms.ChoiceField(label=_("Dimension"), choices=[])
    code = forms.CharField(label=_("Code"), max_length=16, help_text=_('e.g. "1.1"'))
    text_en = forms.CharField(label=_("Text (English)"), required=False, widget=forms.Textarea(attrs={"rows": 2}))
    text_zh = forms.CharField(label=zh_label(_("Text")), required=False,
                              widget=forms.Textarea(attrs={"rows": 2, **ZH_TEXT}))
    guidance_en = forms.CharField(label=_("Guidance (English)"), required=False,
                                  widget=forms.Textarea(attrs={"rows": 2}))
    guidance_zh = forms.CharField(label=zh_label(_("Guidance")), required=False,
                                  widget=forms.Textarea(attrs={"rows": 2, **ZH_TEXT}))
    response = forms.ChoiceField(label=_("Response type"), choices=[
        ("binary", _("Binary: yes (1) / no (0)")), ("scale", _("Scale: a point from min to max (whole, or in steps)")),
        ("levels", _("Levels: one of its named levels")), ("text", _("Free text: a comment, not analysed"))])
    scale_min = forms.IntegerField(label=_("Scale: lowest point"), required=False, initial=1)
    scale_max = forms.IntegerField(label=_("Scale: highest point"), required=False, initial=5)
    scale_step = forms.DecimalField(label=_("Scale: step"), required=False, max_digits=6, decimal_places=3,
                                    help_text=_("Empty for whole points; 0.5 for half points (0, 0.5, ..., 5)."))
    anchors = forms.CharField(required=False, label=_("Scale: anchor labels"),
                              widget=forms.Textarea(attrs={"rows": 2}),
                              help_text=_('One point a line: "1 = poor | 差" (Chinese after | is optional).'))
    levels = forms.CharField(required=False, label=_("Levels"), widget=forms.Textarea(attrs={"rows": 3}),
                             help_text=_('One level a line, lowest first: "1 = Unsatisfactory | 不合格".'))

    def __init__(self, *args, dimensions=(), **kwargs):
        kwargs.setdefault("auto_id", "item_%s")
        super().__init__(*args, **kwargs)
        self.fields["dimension"].choices = [(d.code, f"{d.code} {d.name_en or d.name_zh}") for d in dimensions]

    def clean_anchors(self):
        return _pairs(self.cleaned_data.get("anchors", ""), _("Anchor labels"))

    def clean_levels(self):
        return _pairs(self.cleaned_data.get("levels", ""), _("Levels"))

    def entry(self) -> dict:
        """The item in the instrument file's format."""
        data = self.cleaned_data
        response: dict = {"type": data["response"]}
        if data["response"] == "scale":
            response.update({"min": data["scale_min"], "max": data["scale_max"], "anchors": data["anchors"]})
            if data.get("scale_step") is not None:
                response["step"] = float(data["scale_step"])
        elif data["response"] == "levels":
            levels = []
            for value, label in data["levels"].items():
                try:
                    number = int(value)
                except ValueError:
                    number = value  # reported by the instrument rules as not a whole number
                levels.append({"value": number, "label": label})
            response["levels"] = levels
        entry = {"code": data["code"].strip(), "dimension": data["dimension"],
                 "text": {"en": data["text_en"], "zh": data["text_zh"]}, "response": response}
        if data["guidance_en"] or data["guidance_zh"]:
            entry["guidance"] = {"en": data["guidance_en"], "zh": data["guidance_zh"]}
        return entry


class CampaignForm(forms.Form):
    name = forms.CharField(max_length=200, label=_("Name"))
    corpus = forms.ModelChoiceField(queryset=None, label=_("Corpus"))
    scale_version = forms.ModelChoiceField(queryset=None, label=_("Scale version"),
                                           help_text=_("Only published versions can be rated."))
    phase = forms.ChoiceField(label=_("Phase"), choices=[("trial", _("Trial (gold dialogues, team selection)")),
                                                         ("formal", _("Formal"))])
    overlap = forms.IntegerField(min_value=1, max_value=50, initial=3, label=_("Overlap"),
                                 help_text=_("Raters per dialogue (k)."))
    filter_split = forms.ChoiceField(required=False, label=_("Split"),
                                     choices=[("", _("All")), ("train", _("Train")), ("validation", _("Validation")),
                                              ("test", _("Test"))])
    filter_model = forms.CharField(required=False, max_length=200, label=_("Doctor model"),
                                   help_text=_("Only dialogues of this model (empty = all)."))
    filter_language = forms.CharField(required=False, max_length=16, label=_("Language of the dialogues"),
                                      help_text=_("Only dialogues in this language, e.g. en, zh (empty = all)."))
    rating_language = forms.ChoiceField(
        required=False, label=_("Rating language"),
        choices=[("", _("Each rater's own language")), ("en", _("English")), ("zh", _("Chinese"))],
        help_text=_("The language of the rating page and of the items for every rater of this campaign, as a study "
                    "protocol fixes it. Each answer records the language of the item text the rater saw."))
    instructions = forms.CharField(required=False, label=_("Instructions"),
                                   widget=forms.Textarea(attrs={"rows": 4}))
    deadline = forms.DateField(required=False, label=_("Deadline"), widget=forms.DateInput(attrs={"type": "date"}))
    sample_size = forms.IntegerField(
        required=False, min_value=1, label=_("Random sample of"),
        help_text=_("Dialogues physicians rate, drawn at random from those in scope (empty = every dialogue in "
                    "scope). Model scores that combine physicians and an LLM judge (PPI++) need a random sample; the "
                    "planner below says how many."))
    sample_stratified = forms.BooleanField(required=False, label=_("Draw within each doctor model"),
                                           help_text=_("The same number from each model (best for comparing "
                                                       "models)."))
    sample_seed = forms.IntegerField(required=False, min_value=0, max_value=2**63 - 1, label=_("Seed of the draw"),
                                     help_text=_("Empty: a fresh seed, recorded with the sample."))

    def __init__(self, *args, project, **kwargs):
        from annotation.models import Campaign, Corpus, ScaleVersion

        super().__init__(*args, **kwargs)
        self.project = project
        # The scoped managers: the project's corpora; its own and the library's published scale versions.
        self.fields["corpus"].queryset = Corpus.objects.alive()
        self.fields["scale_version"].queryset = ScaleVersion.objects.filter(status="published").select_related(
            "scale")
        self._campaign_model = Campaign

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if self._campaign_model.objects.filter(name=name).exists():
            raise forms.ValidationError(_("A campaign with this name exists already."))
        return name


class SampleForm(forms.Form):
    """Draw a campaign's random sample (before assigning)."""

    size = forms.IntegerField(min_value=1, label=_("Sample size"), help_text=_("Dialogues physicians will rate."))
    stratified = forms.BooleanField(required=False, label=_("Within each doctor model"),
                                    help_text=_("The same number from each model."))
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**63 - 1, label=_("Seed"),
                              help_text=_("Empty: a fresh seed, recorded with the sample."))

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("auto_id", "sample_%s")
        super().__init__(*args, **kwargs)


class AddRatersForm(forms.Form):
    users = forms.ModelMultipleChoiceField(queryset=None, label=_("Physicians"),
                                           widget=forms.SelectMultiple(attrs={"size": 6}))
    team = forms.CharField(required=False, max_length=100, label=_("Team"),
                           help_text=_("Trial phase: the team these raters belong to."))
    capacity = forms.IntegerField(required=False, min_value=1, label=_("Capacity"),
                                  help_text=_("Most dialogues each (empty = no limit)."))
    available_until = forms.DateField(required=False, label=_("Available until"),
                                      widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, project, **kwargs):
        from projects.roles import PHYSICIAN, users_with_role

        super().__init__(*args, **kwargs)
        # The project's physicians (members with the physician role), never other projects' people.
        self.fields["users"].queryset = users_with_role(PHYSICIAN, project)


class UploadDialoguesForm(forms.Form):
    corpus_name = forms.CharField(max_length=200, label=_("Corpus"),
                                  help_text=_("An existing corpus name adds to it; a new name creates it."))
    file = forms.FileField(label=_("File"),
                           help_text=_("JSON Lines: one dialogue per line (id, self_report, turns, model, language, "
                                       "split, meta), or one question-answer item per line (id, question, answer, "
                                       "reference, model, language, split, meta)."))
    update = forms.BooleanField(required=False, label=_("Replace dialogues whose id is already in the corpus"))
