"""Coordinator pages: corpus upload and privacy review, campaigns, progress, audit and adjudication."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotation import campaigns as campaign_service
from annotation import dialogues as dialogue_views
from annotation import labels, sampling, scores
from annotation.forms import AddRatersForm, CampaignForm, SampleForm, UploadDialoguesForm
from annotation.importers import ImportRejected, import_dialogues, size_error
from annotation.models import (
    Adjudication,
    Assignment,
    Campaign,
    Corpus,
    Dialogue,
    GoldLabel,
    Item,
    LabelChange,
    PrivacyStatus,
)
from annotation.signals import send_labels_changed
from core.site.paging import paginate
from core.site.params import whole_number
from projects.access import current, get_in_project_or_404, request_has_role, role_required
from projects.models import AuditEvent
from projects.roles import ADMIN, ANALYST, COORDINATOR, PHYSICIAN
from projects.services import member_users


def _campaign(request, pk: int, *related: str) -> Campaign:
    """A live campaign of the request's project; another project's is a 404 like a missing one."""
    qs = Campaign.objects.alive()
    return get_in_project_or_404(qs.select_related(*related) if related else qs, request, pk=pk)


@role_required(COORDINATOR)
def corpus_upload(request):
    errors: list = []
    form = UploadDialoguesForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        name = form.cleaned_data["corpus_name"].strip()
        too_large = size_error(upload.size)
        if too_large:
            errors = [str(too_large)]
        else:
            try:
                with transaction.atomic():
                    corpus, created = Corpus.objects.get_or_create(name=name, project=current(request),
                                                                   defaults={"created_by": request.user})
                    counts = import_dialogues(corpus, upload.read().splitlines(),
                                              update=form.cleaned_data["update"], user=request.user,
                                              source=upload.name)
            except ImportRejected as exc:
                errors = [str(e) for e in exc.errors]
            else:
                flagged = counts.get("flagged", 0)
                messages.success(request, f"Imported into {corpus.name}: {counts['created']} new, "
                                          f"{counts['updated']} updated"
                                          + (f", {flagged} flagged for privacy review." if flagged else "."))
                return redirect("corpus-detail", pk=corpus.pk)
    return render(request, "annotation/corpus_upload.html", {"form": form, "errors": errors})


@role_required(COORDINATOR)
def privacy_review(request, pk: int):
    corpus = get_in_project_or_404(Corpus.objects.alive(), request, pk=pk)
    if request.method == "POST":
        dialogue = get_in_project_or_404(Dialogue, request, pk=whole_number(request.POST, "dialogue"), corpus=corpus)
        try:
            dialogue_views.review_privacy(dialogue, request.POST.get("action", ""), request.user,
                                          request.POST.get("reason", ""))
        except ValueError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{dialogue.external_id}: {dialogue.get_privacy_status_display().lower()}.")
        return redirect("privacy-review", pk=corpus.pk)
    flagged = corpus.dialogues.alive().filter(privacy_status=PrivacyStatus.FLAGGED).order_by("external_id")
    rows = []
    for dialogue in flagged:
        snippets = []
        for match in dialogue.privacy_matches:
            text = dialogue.self_report if match["field"] == "self_report" else dialogue.turns[match["turn"]]["text"]
            where = ("self-report" if match["field"] == "self_report" else dialogue.turns[match["turn"]]["role"]
                     if dialogue.is_answer else f"turn {match['turn'] + 1}")
            snippets.append({**match, "where": where, "before": text[max(0, match["start"] - 40):match["start"]],
                             "after": text[match["end"]:match["end"] + 40]})
        rows.append((dialogue, snippets))
    return render(request, "annotation/privacy_review.html", {"corpus": corpus, "rows": rows})


@role_required(COORDINATOR, ANALYST)
def campaign_list(request):
    campaigns = Campaign.objects.alive().select_related(
        "corpus", "scale_version__scale")
    return render(request, "annotation/campaign_list.html", {"campaigns": campaigns})


@role_required(COORDINATOR)
def campaign_new(request):
    form = CampaignForm(request.POST or None, initial={"corpus": request.GET.get("corpus")},
                        project=current(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():  # a sample that cannot be drawn leaves no campaign behind
                campaign = campaign_service.create_campaign(
                    name=data["name"], corpus=data["corpus"], scale_version=data["scale_version"],
                    overlap=data["overlap"], phase=data["phase"], user=request.user,
                    filter_split=data["filter_split"], filter_model=data["filter_model"].strip(),
                    filter_language=data["filter_language"].strip(), instructions=data["instructions"],
                    deadline=data["deadline"], rating_language=data["rating_language"])
                if data.get("sample_size"):
                    sampling.draw_sample(campaign, size=data["sample_size"], stratified=data["sample_stratified"],
                                         seed=data["sample_seed"], user=request.user)
        except campaign_service.CampaignError as exc:
            form.add_error(None, str(exc))
        else:
            values = {"name": campaign.name, "n": campaign.dialogues().count()}
            if data.get("sample_size"):
                text = gettext("Campaign %(name)s created with %(n)s dialogues in scope (a random sample). Add raters "
                               "next.") % values
            else:
                text = gettext("Campaign %(name)s created with %(n)s dialogues in scope. Add raters next.") % values
            messages.success(request, text)
            return redirect("campaign-detail", pk=campaign.pk)
    return render(request, "annotation/campaign_new.html", {"form": form})


@require_POST
@role_required(COORDINATOR)
def campaign_sample(request, pk: int):
    """Draw the campaign's random sample (before assigning)."""
    campaign = _campaign(request, pk)
    form = SampleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Sample not drawn: " + " ".join(
            f"{form.fields[name].label or name}: {' '.join(errs)}" for name, errs in form.errors.items()))
        return redirect("campaign-detail", pk=pk)
    try:
        sample = sampling.draw_sample(campaign, size=form.cleaned_data["size"],
                                      stratified=form.cleaned_data["stratified"], seed=form.cleaned_data["seed"],
                                      user=request.user)
    except campaign_service.CampaignError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Drew a random sample of {sample.size} dialogues (seed {sample.seed}). Assign "
                                  "dialogues next: only the sample is assigned.")
    return redirect("campaign-detail", pk=pk)


@role_required(COORDINATOR, ANALYST)
def campaign_detail(request, pk: int):
    campaign = _campaign(request, pk, "corpus", "scale_version__scale")
    coordinating = request_has_role(request, COORDINATOR)
    raters = campaign_service.rater_progress(campaign)
    flagged = list(Assignment.objects.filter(campaign=campaign, flagged=True).select_related("dialogue", "rater"))
    skipped = list(Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SKIPPED)
                   .select_related("dialogue", "rater"))
    # Analysts see raters under the pseudonyms of the API and exports unless the coordinator allowed names.
    names = campaign_service.rater_names([row["rater"].user for row in raters] + [a.rater for a in flagged + skipped],
                                         request.user, campaign)
    for row in raters:
        row["name"] = names[row["rater"].user_id]
    for assignment in flagged + skipped:
        assignment.rater_name = names[assignment.rater_id]
        assignment.blind_id = campaign_service.blind_id(campaign.pk, assignment.dialogue_id)  # as raters quote it
    # The dialogues' table, a page at a time: that page's ids, then their counts (bounded by the page, not the scope).
    in_scope = campaign.dialogues().count()
    method = request.GET.get("sample")
    # A new seed is drawn here rather than inside the sample, so the page can show it and link to the same draw
    # (the page links too: another page of the table shows the same sample).
    seed = (whole_number(request.GET, "seed", default=campaign_service.new_seed()) if method == "random"
            else None)
    pager = paginate(request, campaign.dialogues().order_by("external_id").values_list("pk", flat=True),
                     label="dialogues", count=in_scope, anchor="dialogues",
                     keep={"seed": seed} if seed is not None else None)
    page_ids = list(pager.rows)
    pager.page.object_list = list(campaign_service.dialogue_progress(campaign, page_ids))
    # Reassigning picks among the unfinished work of this page's dialogues (a campaign just assigned has
    # dialogues x overlap of it: one list of them all was tens of thousands of options).
    open_work = Assignment.objects.filter(campaign=campaign, status__in=Assignment.OPEN_STATUSES)
    context = {
        "campaign": campaign, "raters": raters, "names_shown": campaign_service.shows_names(request.user, campaign),
        "dialogues": pager.rows, "pager": pager,
        "add_form": AddRatersForm(project=campaign.project),
        "in_scope": in_scope, "flagged": flagged, "skipped": skipped,
        "open_assignments": open_work.filter(dialogue_id__in=page_ids).select_related("dialogue", "rater")
        .order_by("rater__username", "position") if coordinating else [],
        "n_open": open_work.count() if coordinating else None,
        "physicians": get_user_model().objects.filter(campaign_roles__campaign=campaign).order_by("username")
        if coordinating else [],
        "sample": None, "is_open": campaign.status == Campaign.Status.OPEN,
        "random_sample": sampling.sample_of(campaign),
        "sample_form": SampleForm(),
        "n_assignments": Assignment.objects.filter(campaign=campaign).count(),
        "rater_kinds": Campaign.RaterKind.choices,
    }
    context["random_sample_text"] = sampling.describe(context["random_sample"])
    if method in ("random", "disagreement"):
        size = max(1, min(500, whole_number(request.GET, "size", default=10)))
        ids = campaign_service.audit_sample(campaign, size=size, method=method, seed=seed)
        scores = campaign_service.disagreement_by_dialogue(campaign)
        context["sample"] = [(d, scores.get(d.pk, 0)) for d in Dialogue.objects.filter(pk__in=ids)
                             .order_by("external_id")]
        context.update(sample_method=method, sample_size=size, sample_seed=seed)
    return render(request, "annotation/campaign_detail.html", context)


@require_POST
@role_required(COORDINATOR)
def campaign_add_raters(request, pk: int):
    campaign = _campaign(request, pk)
    form = AddRatersForm(request.POST, project=campaign.project)
    if not form.is_valid():
        messages.error(request, "Choose at least one physician. " + " ".join(
            e for errs in form.errors.values() for e in errs))
        return redirect("campaign-detail", pk=pk)
    try:
        with transaction.atomic():
            for user in form.cleaned_data["users"]:
                campaign_service.add_rater(campaign, user, team=form.cleaned_data["team"].strip(),
                                           capacity=form.cleaned_data["capacity"],
                                           available_until=form.cleaned_data["available_until"],
                                           added_by=request.user)
    except campaign_service.CampaignError as exc:
        messages.error(request, str(exc))
        return redirect("campaign-detail", pk=pk)
    messages.success(request, f"Added {len(form.cleaned_data['users'])} rater(s). Press 'Assign dialogues'.")
    return redirect("campaign-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def campaign_rater_toggle(request, pk: int, user_id: int):
    campaign = _campaign(request, pk)
    rater = get_in_project_or_404(campaign.raters, request, user_id=user_id)
    rater.active = not rater.active
    rater.save(update_fields=["active"])
    AuditEvent.record(request.user, "campaign.rater_available" if rater.active else "campaign.rater_unavailable",
                      campaign, rater=rater.user.username)
    return redirect("campaign-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def campaign_assign(request, pk: int):
    campaign = _campaign(request, pk)
    try:
        result = campaign_service.assign(campaign, user=request.user)
    except campaign_service.CampaignError as exc:
        messages.error(request, str(exc))
        return redirect("campaign-detail", pk=pk)
    if result.short:
        messages.warning(request, f"Created {result.created} assignments; {len(result.short)} dialogue(s) still "
                                  f"lack raters (not enough available raters for overlap {campaign.overlap}).")
    else:
        messages.success(request, f"Created {result.created} assignments; every dialogue has "
                                  f"{campaign.overlap} rater(s).")
    return redirect("campaign-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def assignment_reassign(request, pk: int):
    assignment = get_in_project_or_404(Assignment, request, pk=pk, campaign__deleted_at__isnull=True)
    # Only the project's own physicians: any other account answers as a missing one.
    to_user = get_in_project_or_404(member_users(assignment.campaign.project_id, role=PHYSICIAN), request,
                                    pk=whole_number(request.POST, "to_user"))
    try:
        campaign_service.reassign(assignment, to_user, by=request.user, reason=request.POST.get("reason", ""))
    except campaign_service.CampaignError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, gettext("%(dialogue)s moved to %(rater)s.")
                         % {"dialogue": assignment.dialogue.external_id, "rater": to_user.username})
    return redirect("campaign-detail", pk=assignment.campaign_id)


@role_required(COORDINATOR, ADMIN)
def campaign_dialogue(request, pk: int, dialogue_id: int):
    """Review one dialogue: every rater's answers side by side, gold labels, adjudication and returns."""
    campaign = _campaign(request, pk, "scale_version")
    dialogue = get_in_project_or_404(Dialogue, request, pk=dialogue_id, corpus=campaign.corpus)
    assignments = list(Assignment.objects.filter(campaign=campaign, dialogue=dialogue)
                       .exclude(status=Assignment.Status.WITHDRAWN).select_related("rater").order_by("rater__username"))
    values = labels.answers_of(assignments)
    gold = {g.item_id: g.value for g in GoldLabel.objects.filter(campaign=campaign, dialogue=dialogue)}
    final = {a.item_id: a for a in Adjudication.objects.filter(campaign=campaign, dialogue=dialogue)}
    rows = []
    for item in (Item.objects.filter(version=campaign.scale_version_id, response_type__in=Item.RATED_TYPES)
                 .prefetch_related("levels").order_by("order")):
        answers = [values.get((a.pk, item.pk)) for a in assignments]
        seen = {lab.value for lab in answers if lab is not None and lab.value is not None}
        rows.append({"item": item, "answers": answers, "disagree": len(seen) > 1, "gold": gold.get(item.pk),
                     "final": final.get(item.pk), "allowed": item.allowed_values()})
    return render(request, "annotation/campaign_dialogue.html", {
        "campaign": campaign, "dialogue": dialogue, "assignments": assignments, "rows": rows,
        "blind_id": campaign_service.blind_id(campaign.pk, dialogue.pk),
        "view": dialogue_views.view_model(dialogue)})


@require_POST
@role_required(COORDINATOR)
def campaign_dialogue_action(request, pk: int, dialogue_id: int):
    campaign = _campaign(request, pk)
    dialogue = get_in_project_or_404(Dialogue, request, pk=dialogue_id, corpus=campaign.corpus)
    action = request.POST.get("action")
    try:
        if action == "return":
            assignment = get_in_project_or_404(Assignment, request, pk=whole_number(request.POST, "assignment"),
                                               campaign=campaign, dialogue=dialogue)
            labels.return_for_reannotation(assignment, request.user, request.POST.get("note", ""))
            messages.success(request, gettext("Returned to %(rater)s for re-annotation.")
                             % {"rater": assignment.rater.username})
        elif action in ("adjudicate", "gold"):
            item = get_in_project_or_404(Item, request, pk=whole_number(request.POST, "item"),
                                         version=campaign.scale_version_id)
            raw = request.POST.get("value", "")
            value = scores.parse(raw)  # a point of the item's grid (4.5 on a half-point scale); checked below
            if action == "adjudicate":
                if value is None:
                    raise labels.LabelError(gettext("Choose the final value."))
                labels.adjudicate(campaign, dialogue, item, value, request.user, request.POST.get("reason", ""))
                messages.success(request, gettext("Item %(code)s: final label %(value)s.")
                                 % {"code": item.code, "value": value})
            else:
                if campaign.phase != Campaign.Phase.TRIAL:
                    raise labels.LabelError(gettext("Gold labels belong to trial campaigns."))
                labels.set_gold(campaign, dialogue, item, value, request.user)
                if value is None:
                    messages.success(request, gettext("Item %(code)s: gold label cleared.") % {"code": item.code})
                else:
                    messages.success(request, gettext("Item %(code)s: gold label %(value)s.")
                                     % {"code": item.code, "value": value})
        else:
            raise labels.LabelError(gettext("Unknown action."))
    except (labels.LabelError, ValueError) as exc:
        messages.error(request, str(exc))
    return redirect("campaign-dialogue", pk=pk, dialogue_id=dialogue_id)


@role_required(COORDINATOR, ADMIN)
def label_history(request, pk: int):
    """Every change to the labels of one assignment, and the assignment's own events."""
    assignment = get_in_project_or_404(Assignment.objects.select_related("campaign", "dialogue", "rater"), request,
                                       pk=pk)
    changes = (LabelChange.objects.filter(label__assignment=assignment)
               .select_related("label__item", "changed_by").order_by("changed_at", "id"))
    events = AuditEvent.objects.filter(target_type__model="assignment", target_id=str(assignment.pk)).select_related(
        "actor").order_by("at")
    return render(request, "annotation/label_history.html",
                  {"assignment": assignment, "changes": changes, "events": events})


@require_POST
@role_required(COORDINATOR)
def campaign_allow_names(request, pk: int):
    """Let analysts see raters' names in this campaign's reports and exports (or take that back)."""
    campaign = _campaign(request, pk)
    campaign.allow_names = not campaign.allow_names
    campaign.save(update_fields=["allow_names"])
    send_labels_changed(campaign)  # analysts now read the report with (or without) names
    AuditEvent.record(request.user, "campaign.allow_names" if campaign.allow_names else "campaign.pseudonyms_only",
                      campaign)
    return redirect("campaign-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def campaign_rater_kind(request, pk: int):
    """State who gave an imported campaign's labels (physicians, other experts, LLM scoring iterations, or not
    recorded): the methods text and checklist say what is stated here. Audited, with the earlier statement."""
    campaign = _campaign(request, pk)
    kind = request.POST.get("rater_kind", "")
    if campaign.phase != Campaign.Phase.IMPORTED:
        messages.error(request, _("Only imported labels need this: raters in the app are the project's physicians."))
    elif kind not in Campaign.RaterKind.values:
        messages.error(request, _("Choose who the raters are."))
    elif kind != campaign.rater_kind:
        before = campaign.rater_kind
        campaign.rater_kind = kind
        campaign.save(update_fields=["rater_kind"])
        send_labels_changed(campaign)  # the methods text names the raters anew
        AuditEvent.record(request.user, "campaign.rater_kind", campaign, before=before, after=kind)
    return redirect("campaign-detail", pk=pk)
