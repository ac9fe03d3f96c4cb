"""Coordinator pages for juries of judges and the judge selection table. The jury's report pages are
the run's report views (:mod:`scoring.judges.views`) reached through the jury's URLs."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotation.models import Campaign
from core.site.params import whole_number
from projects.access import get_in_project_or_404, role_required
from projects.roles import ANALYST, COORDINATOR
from scoring.judges.forms import JuryForm
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
            messages.success(request, _("Jury %(name)s made of %(n)d runs.") % {"name": jury.name,
                                                                                 "n": len(data["runs"])})
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
    messages.success(request, _("Jury %(name)s deleted (its members and their reports stay).") % {"name": jury.name})
    return redirect("judge-list")


@role_required(COORDINATOR, ANALYST)
def judge_selection(request):
    """Which run or jury may replace the physicians on which item, at what cost (for one campaign): the stored
    table at once (computed by a worker, :mod:`scoring.judges.selection_figures`), "updating" while a newer one is
    computed. A POST with ``settings`` stores the campaign's settings (audited); any other POST is "Try again"
    after a failure."""
    from django.urls import reverse

    from scoring.judges import selection_figures
    from scoring.judges.forms import SelectionSettingsForm

    campaigns = Campaign.objects.alive().select_related("corpus", "scale_version").order_by("name")
    campaign = None
    if request.GET.get("campaign"):
        campaign = get_in_project_or_404(campaigns, request, pk=whole_number(request.GET, "campaign"))
    context = {"campaigns": campaigns, "campaign": campaign, "form": None, "selection": None, "figures": None,
               "job": None, "poll_url": ""}
    if campaign is None:
        return render(request, "scoring/judge_selection.html", context)
    stored = selection_figures.settings_of(campaign)
    form = SelectionSettingsForm.of(stored)
    status = 200
    if request.method == "POST" and "settings" in request.POST:
        form = SelectionSettingsForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                selection_figures.save_settings(campaign, request.user, held_out_share=data["held_out_share"],
                                             seed=data["seed"], verdict=form.verdict(), reason=data["reason"])
            except ValueError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, _("Settings saved: the selection is computed again with them."))
                return redirect(request.get_full_path())
        status = 400
    found = selection_figures.selection_figures(campaign, request.user,
                                             retry=request.method == "POST" and status == 200)
    if request.method == "POST" and status == 200:  # "Try again" after a failure
        return redirect(request.get_full_path())
    report = found.report or {}
    context.update(form=form, settings=stored, figures=found, selection=None if "error" in report else found.report,
                   error=report.get("error"), job=found.job,
                   poll_url=reverse("figures-status", args=[found.pending.pk]) if found.pending else "")
    return render(request, "scoring/judge_selection.html", context, status=status)
