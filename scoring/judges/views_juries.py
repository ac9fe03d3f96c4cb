"""Coordinator pages for juries of judges and the judge selection table (issue 37). The jury's report pages are
the run's report views (:mod:`scoring.judges.views`) reached through the jury's URLs."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Campaign
from annotation.params import whole_number
from projects.access import get_in_project_or_404, role_required
from projects.roles import ANALYST, COORDINATOR
from scoring.judges.forms import JuryForm, VerdictSettingsForm
from scoring.judges.models import Jury


def juries_qs():
    """The request's project's live juries (another project's is a 404, as a missing one)."""
    return Jury.objects.alive().select_related("corpus", "scale_version")


@require_POST
@role_required(COORDINATOR)
def jury_new(request):
    """The judges page's jury form: on a problem the judges page again, with the form and the reason."""
    from scoring.judges import juries
    from scoring.judges.views import judge_list

    form = JuryForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            jury = juries.create_jury(data["name"], data["corpus"], list(data["runs"].order_by("pk")),
                                      rule=data["rule"], tie_rule=data["tie_rule"],
                                      round_to_grid=data["round_to_grid"], user=request.user)
        except juries.JuryError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Jury {jury.name} made of {len(data['runs'])} runs.")
            return redirect("jury-detail", pk=jury.pk)
    return judge_list(request, jury_form=form, status=400)


@role_required(COORDINATOR, ANALYST)
def jury_detail(request, pk: int):
    """A jury: its members and rule, cost and time, the jurors' agreement, and its reports against campaigns."""
    from scoring.judges.juries import jury_summary
    from scoring.judges.report import judge_scores
    from scoring.reports.wording import words_for

    jury = get_in_project_or_404(juries_qs(), request, pk=pk)
    return render(request, "scoring/jury_detail.html", {
        **jury_summary(jury), "scores": judge_scores(jury), "words": words_for(jury.corpus.kind),
        "campaigns": Campaign.objects.alive().filter(corpus=jury.corpus, scale_version_id=jury.scale_version_id)})


@require_POST
@role_required(COORDINATOR)
def jury_delete(request, pk: int):
    jury = get_in_project_or_404(juries_qs(), request, pk=pk)
    try:
        jury.soft_delete(request.user, request.POST.get("reason", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("jury-detail", pk=pk)
    messages.success(request, f"Jury {jury.name} deleted (its members and their reports stay).")
    return redirect("judge-list")


@role_required(COORDINATOR, ANALYST)
def judge_selection(request):
    """Which run or jury may replace the physicians on which item, at what cost (for one campaign)."""
    from scoring.judges.selection import DEFAULT_HELD_OUT, DEFAULT_SEED, SelectionError
    from scoring.judges.selection import judge_selection as select
    from scoring.reports.exports import may_see_names

    campaigns = Campaign.objects.alive().select_related("corpus", "scale_version").order_by("name")
    campaign = None
    if request.GET.get("campaign"):
        campaign = get_in_project_or_404(campaigns, request, pk=whole_number(request.GET, "campaign"))
    form = VerdictSettingsForm.from_query(request.GET)
    context = {"campaigns": campaigns, "campaign": campaign, "form": form, "selection": None, "error": None,
               "held_out": request.GET.get("held_out", str(DEFAULT_HELD_OUT)),
               "seed": request.GET.get("seed", str(DEFAULT_SEED))}
    if campaign is not None:
        try:
            share = float(context["held_out"])
            seed = int(context["seed"])
            if not form.is_valid():
                raise SelectionError("Invalid settings: " + "; ".join(
                    f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
            if not 0 <= seed < 2**32:
                raise SelectionError("The seed must be a whole number from 0 to 4294967295.")
            context["selection"] = select(campaign, verdict=form.settings(), held_out_share=share, seed=seed,
                                          names=may_see_names(request.user, [campaign]))
        except (SelectionError, ValueError) as exc:
            context["error"] = str(exc)
    return render(request, "scoring/judge_selection.html", context, status=400 if context["error"] else 200)
