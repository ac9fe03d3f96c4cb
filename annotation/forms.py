from django import forms


class NewVersionForm(forms.Form):
    note = forms.CharField(
        label="Why a new version?", widget=forms.Textarea(attrs={"rows": 3}), max_length=2000,
        help_text="Recorded in the version's history, e.g. 'Delphi round 2 revisions'.",
    )


class CampaignForm(forms.Form):
    name = forms.CharField(max_length=200)
    corpus = forms.ModelChoiceField(queryset=None)
    scale_version = forms.ModelChoiceField(queryset=None, help_text="Only published versions can be rated.")
    phase = forms.ChoiceField(choices=[("trial", "Trial (gold dialogues, team selection)"), ("formal", "Formal")])
    overlap = forms.IntegerField(min_value=1, max_value=50, initial=3, help_text="Raters per dialogue (k).")
    filter_split = forms.ChoiceField(required=False, label="Split",
                                     choices=[("", "All"), ("train", "Train"), ("validation", "Validation"),
                                              ("test", "Test")])
    filter_model = forms.CharField(required=False, max_length=200, label="Doctor model",
                                   help_text="Only dialogues of this model (empty = all).")
    filter_language = forms.CharField(required=False, max_length=16, label="Language", help_text="e.g. en, zh")
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    deadline = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, **kwargs):
        from annotation.models import Campaign, Corpus, ScaleVersion

        super().__init__(*args, **kwargs)
        self.fields["corpus"].queryset = Corpus.objects.alive()
        self.fields["scale_version"].queryset = ScaleVersion.objects.filter(status="published").select_related("scale")
        self._campaign_model = Campaign

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if self._campaign_model.objects.filter(name=name).exists():
            raise forms.ValidationError("A campaign with this name exists already.")
        return name


class AddRatersForm(forms.Form):
    users = forms.ModelMultipleChoiceField(queryset=None, label="Physicians",
                                           widget=forms.SelectMultiple(attrs={"size": 6}))
    team = forms.CharField(required=False, max_length=100, help_text="Trial phase: the team these raters belong to.")
    capacity = forms.IntegerField(required=False, min_value=1, help_text="Most dialogues each (empty = no limit).")
    available_until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, **kwargs):
        from django.contrib.auth import get_user_model

        super().__init__(*args, **kwargs)
        self.fields["users"].queryset = get_user_model().objects.filter(
            groups__name="physician", is_active=True).order_by("username")


class UploadDialoguesForm(forms.Form):
    corpus_name = forms.CharField(max_length=200, label="Corpus",
                                  help_text="An existing corpus name adds to it; a new name creates it.")
    file = forms.FileField(help_text="JSON Lines: one dialogue per line (id, self_report, turns, model, language, "
                                     "split, meta).")
    update = forms.BooleanField(required=False, label="Replace dialogues whose id is already in the corpus")
