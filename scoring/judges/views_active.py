"""The coordinator's page to draw a campaign's active sample from a judge run's uncertainty
(:mod:`scoring.judges.active_samples`). The URLconf imports this module: the statistics stack (pandas) is imported
inside the form and the view."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _

from annotation.campaigns import CampaignError
from annotation.models import Campaign
from annotation.sampling import MAX_SEED
from projects.access import get_in_project_or_404, role_required
from projects.roles import COORDINATOR
from scoring.judges.models import JudgeResult, JudgeRun


class ActiveSampleForm(forms.Form):
    run = forms.ModelChoiceField(queryset=JudgeRun.objects.none(), label=_("Judge run whose uncertainty it follows"))
    budget = forms.FloatField(min_value=1, label=_("Budget: dialogues physicians label (expected number)"))
    uniform_share = forms.FloatField(min_value=0, max_value=1,
                                     label=_("Uniform share"),
                                     help_text=_("The share of the budget spread evenly; it bounds the loss when the "
                                                 "uncertainty says nothing about the judge's errors."))
    pi_min = forms.FloatField(required=False, min_value=0, max_value=1, label=_("Minimum probability (optional)"),
                              help_text=_("Empty: a tenth of budget / dialogues in scope."))
    seed = forms.IntegerField(required=False, min_value=0, max_value=MAX_SEED, label=_("Seed (optional)"))

    def __init__(self, *args, campaign: Campaign, **kwargs):
        from core.stats import active  # the statistics stack: on this page's use, not when the URLconf loads

        super().__init__(*args, **kwargs)
        self.fields["uniform_share"].initial = active.UNIFORM_SHARE
        with_uncertainty = JudgeResult.objects.filter(uncertainty__isnull=False).values("run_id")
        self.fields["run"].queryset = (JudgeRun.objects.filter(corpus=campaign.corpus,
                                                               status=JudgeRun.Status.SUCCEEDED,
                                                               pk__in=with_uncertainty).order_by("-pk"))


@role_required(COORDINATOR)
def campaign_active_sample(request, pk: int):
    """GET: the form; POST: draw the active sample (before assigning) and go back to the campaign."""
    campaign = get_in_project_or_404(Campaign.objects.alive().select_related("corpus"), request, pk=pk)
    form = ActiveSampleForm(request.POST or None, campaign=campaign)
    if request.method == "POST" and form.is_valid():
        from scoring.judges import active_samples  # pandas: loaded when a sample is drawn

        data = form.cleaned_data
        try:
            sample = active_samples.draw_for_campaign(campaign, data["run"], budget=data["budget"],
                                                      uniform_share=data["uniform_share"], pi_min=data["pi_min"],
                                                      seed=data["seed"], user=request.user)
        except CampaignError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Drew an active sample of %(n)d dialogues (seed %(seed)d). Assign dialogues "
                                        "next: only the sample is assigned.") % {"n": sample.size,
                                                                                 "seed": sample.seed})
            return redirect("campaign-detail", pk=campaign.pk)
    return render(request, "scoring/active_sample.html", {"campaign": campaign, "form": form,
                                                          "population": campaign.population().count()})
