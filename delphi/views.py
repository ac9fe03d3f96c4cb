"""Delphi pages. Thin: they read the request, call delphi.services and render.

Coordinators create and run studies; analysts read statistics and exports; panelists answer through their
personal signed link (no account needed) and never see anyone else's identity or answers.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.cache import patch_cache_control
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from annotation.models import Item
from annotation.views import scale_language
from core.site.params import whole_number
from delphi import consensus, exports, services
from delphi import figures as delphi_figures
from delphi.forms import NewStudyForm, SettingsForm
from delphi.models import DelphiStudy, Familiarity, Influence, ItemDecision, Panelist, Proposal, Response, Round
from delphi.services import DelphiError, LinkError
from projects import scoping
from projects.access import current, get_in_project_or_404, request_has_role, role_required
from projects.roles import ADMIN, ANALYST, COORDINATOR

READERS = (COORDINATOR, ANALYST)


def _study(request, pk: int) -> DelphiStudy:
    """A live study of the request's project; another project's is a 404 like a missing one."""
    return get_in_project_or_404(DelphiStudy.objects.alive()
                                 .select_related("scale", "base_version", "agreed_version"), request, pk=pk)


def _round(request, pk: int) -> Round:
    return get_in_project_or_404(Round.objects.select_related("study", "version__scale").filter(
        study__deleted_at__isnull=True), request, pk=pk)


def _fail(request, exc: DelphiError, to: str, *args):
    messages.error(request, str(exc))
    return redirect(to, *args)


def _htmx_error(exc: DelphiError) -> HttpResponse:
    return HttpResponse(str(exc), status=exc.status, content_type="text/plain; charset=utf-8")


# ---------------------------------------------------------------------------------------------------------------
# coordinator and analyst pages
# ---------------------------------------------------------------------------------------------------------------
@role_required(*READERS)
def study_list(request):
    studies = (DelphiStudy.objects.alive()
               .select_related("scale", "agreed_version").order_by("-created_at"))
    rows = [(s, services.current_round(s), s.rounds.count()) for s in studies]
    return render(request, "delphi/study_list.html", {"rows": rows, "can_edit": request_has_role(request, COORDINATOR)})


@role_required(COORDINATOR)
def study_new(request):
    form = NewStudyForm(request.POST or None, project=current(request))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        fields = {k: data[k] for k in SettingsForm.Meta.fields}
        try:
            study = services.create_study(
                title=data["title"], user=request.user, project=current(request),
                version=data["version"] if data["source"] == "version" else None,
                scale_name=data["scale_name"], item_lines=data["item_lines"], **fields)
        except DelphiError as exc:
            form.add_error(None, str(exc))
        else:
            services.remember_site(study, request)
            messages.success(request, _("Study “%(title)s” created with round 1 (not opened yet). Invite the panel, "
                                        "then open round 1.") % {"title": study.title})
            return redirect("delphi:study", study.pk)
    return render(request, "delphi/study_new.html", {"form": form})


@role_required(*READERS)
def study_detail(request, pk: int):
    study = _study(request, pk)
    can_edit = request_has_role(request, COORDINATOR)
    rounds = list(study.rounds.select_related("version", "next_version").order_by("number"))
    # Stored statistics (delphi/figures.py): None while a round's first figures are being computed.
    found = {r.pk: delphi_figures.round_figures(r, request.user) for r in rounds}
    summaries = [(r, (found[r.pk].report or {}).get("summary")) for r in rounds]
    pending = next((f.pending for f in found.values() if f.pending is not None), None)
    current = services.current_round(study)
    panel = []
    if can_edit:
        membership = {}
        for p in current.participations.all() if current else []:
            membership[p.panelist_id] = p
        for panelist in study.panelists.alive().select_related("user"):
            panel.append((panelist, membership.get(panelist.pk)))
    User = get_user_model()
    context = {
        "study": study, "summaries": summaries, "current": current, "can_edit": can_edit, "panel": panel,
        "figures_pending": pending, "poll_url": reverse("figures-status", args=[pending.pk]) if pending else "",
        "settings_form": SettingsForm(instance=study, locked=study.consensus_locked) if can_edit else None,
        "rule_text": exports.rule_text(study.consensus_rule()),
        # People to invite with their account: the project's members (others join by e-mail address).
        "users": User.objects.filter(is_active=True, memberships__project=study.project_id).distinct()
        .order_by("username") if can_edit else [],
        "last_closed": services.last_closed_delphi_round(study),
        "has_validation": any(r.is_validation for r in rounds),
        "open_round": next((r for r in rounds if r.status == Round.Status.OPEN), None),
    }
    return render(request, "delphi/study_detail.html", context)


@require_POST
@role_required(COORDINATOR)
def study_settings(request, pk: int):
    study = _study(request, pk)
    form = SettingsForm(request.POST, instance=DelphiStudy.objects.get(pk=study.pk), locked=study.consensus_locked)
    attempted_rule_change = study.consensus_locked and any(
        name in request.POST and not services._decimal_equal(request.POST.get(name) or None, getattr(study, name))
        for name in services.RULE_FIELDS)
    if attempted_rule_change:
        messages.error(request, _("The consensus rule was locked when round 1 opened and cannot change; other "
                                  "settings were not saved either."))
        return redirect("delphi:study", pk)
    if not form.is_valid():
        messages.error(request, _("Settings not saved: %(errors)s") % {"errors": "; ".join(
            f"{form.fields[f].label if f in form.fields else f}: {' '.join(e)}" for f, e in form.errors.items())})
        return redirect("delphi:study", pk)
    fields = {k: form.cleaned_data[k] for k in SettingsForm.Meta.fields if not form.fields[k].disabled}
    try:
        changed = services.update_settings(study, request.user, fields, reason=form.cleaned_data.get("reason", ""))
    except DelphiError as exc:
        return _fail(request, exc, "delphi:study", pk)
    labels = ", ".join(str(form.fields[f].label or f) if f in form.fields else f for f in changed)
    messages.success(request, _("Saved (%(fields)s).") % {"fields": labels} if changed else _("Nothing changed."))
    return redirect("delphi:study", pk)


@require_POST
@role_required(COORDINATOR)
def study_invite(request, pk: int):
    study = _study(request, pk)
    services.remember_site(study, request)
    chosen = [u for u in request.POST.getlist("users") if u.isdigit() and len(u) <= 19]
    users = get_user_model().objects.filter(pk__in=chosen, memberships__project=study.project_id).distinct()
    try:
        added = services.invite(study, request.user, text=request.POST.get("contacts", ""), users=users)
    except DelphiError as exc:
        return _fail(request, exc, "delphi:study", pk)
    current = services.current_round(study)
    values = {"n": len(added), "round": current.label.lower()}
    if current.status == Round.Status.OPEN:
        text = ngettext("%(n)d panelist on %(round)s. They were e-mailed their personal link.",
                        "%(n)d panelists on %(round)s. They were e-mailed their personal link.", len(added))
    else:
        text = ngettext("%(n)d panelist on %(round)s. They get their personal link by e-mail when the round opens.",
                        "%(n)d panelists on %(round)s. They get their personal link by e-mail when the round opens.",
                        len(added))
    messages.success(request, text % values)
    return redirect("delphi:study", pk)


@require_POST
@role_required(COORDINATOR)
def panelist_action(request, pk: int, action: str):
    panelist = get_in_project_or_404(Panelist.objects.alive().select_related("study"), request, pk=pk,
                                     study__deleted_at__isnull=True)
    services.remember_site(panelist.study, request)
    try:
        if action == "remove":
            services.remove_panelist(panelist, request.user, request.POST.get("reason", ""))
            messages.success(request, _("%(pseudonym)s removed from the panel; their link no longer works.")
                             % {"pseudonym": panelist.pseudonym})
        elif action == "language":
            services.set_language(panelist, request.user, request.POST.get("language", ""))
            messages.success(request, _("%(pseudonym)s's link now opens in %(language)s.") % {
                "pseudonym": panelist.pseudonym,
                "language": dict(settings.LANGUAGES).get(panelist.language) or _("the browser's language")})
        elif action == "new-link":
            services.new_link(panelist, request.user)
            messages.success(request, _("Old links of %(pseudonym)s revoked; a new link was e-mailed if a round is "
                                        "open.") % {"pseudonym": panelist.pseudonym})
        else:
            raise Http404("Unknown action.")
    except (DelphiError, ValueError) as exc:
        messages.error(request, str(exc))
    return redirect("delphi:study", panelist.study_id)


@require_POST
@role_required(COORDINATOR)
def panelist_link(request, pk: int):
    """A panelist's personal link for the coordinator to copy and hand over (JSON ``{"url", "pseudonym"}``),
    audited; not stored in any log."""
    panelist = get_in_project_or_404(Panelist.objects.alive().select_related("study"), request, pk=pk,
                                     study__deleted_at__isnull=True)
    services.remember_site(panelist.study, request)
    try:
        (_panelist, url), = services.hand_over_links(panelist.study, request.user, "copy", panelists=[panelist])
    except (DelphiError, ValueError):
        return JsonResponse({"detail": _("%(pseudonym)s is not on the panel of the current round.")
                             % {"pseudonym": panelist.pseudonym}}, status=409)
    response = JsonResponse({"url": url, "pseudonym": panelist.pseudonym})
    patch_cache_control(response, no_store=True, private=True)
    return response


def qr_svg(url: str, label: str) -> str:
    """The link as an inline SVG QR code (segno), for a phone's camera; an image named ``label``."""
    import segno
    from django.utils.html import escape

    svg = segno.make(url, error="m").svg_inline(scale=3, border=2)
    return mark_safe(svg.replace("<svg ", f'<svg role="img" aria-label="{escape(label)}" ', 1))  # noqa: S308


@role_required(COORDINATOR)
def study_links(request, pk: int):
    """The printable list of the current round's personal links (with a QR code each), audited."""
    study = _study(request, pk)
    services.remember_site(study, request)
    try:
        links = services.hand_over_links(study, request.user, "print")
    except DelphiError as exc:
        return _fail(request, exc, "delphi:study", study.pk)
    rows = [(panelist, url, qr_svg(url, _("QR code of the link of %(pseudonym)s") % {"pseudonym": panelist.pseudonym}))
            for panelist, url in links]
    response = render(request, "delphi/panel_links.html", {"study": study, "round": services.current_round(study),
                                                            "rows": rows})
    patch_cache_control(response, no_store=True, private=True)
    return response


@require_POST
@role_required(COORDINATOR)
def study_action(request, pk: int, action: str):
    study = _study(request, pk)
    services.remember_site(study, request)
    try:
        if action == "validation":
            rnd = services.start_validation(study, request.user, copy_panel=bool(request.POST.get("copy_panel")))
            messages.success(request, _("Validation survey created on %(version)s. Invite the (larger) expert "
                                        "sample, then open it.") % {"version": rnd.version})
        elif action == "extra-round":
            rnd = services.start_extra_round(study, request.user, request.POST.get("reason", ""))
            messages.success(request, _("%(round)s created on %(version)s.") % {"round": rnd.label,
                                                                                 "version": rnd.version})
        elif action == "publish":
            version = services.publish_agreed(study, request.user)
            messages.success(request, _("%(version)s is published: annotation campaigns can use it now.")
                             % {"version": version})
        elif action == "delete":
            services.delete_study(study, request.user, request.POST.get("reason", ""))
            messages.success(request, _("Study “%(title)s” deleted (kept in the history).") % {"title": study.title})
            return redirect("delphi:list")
        else:
            raise Http404("Unknown action.")
    except (DelphiError, ValueError) as exc:
        messages.error(request, str(exc))
    return redirect("delphi:study", pk)


@require_POST
@role_required(COORDINATOR)
def round_action(request, pk: int, action: str):
    rnd = _round(request, pk)
    services.remember_site(rnd.study, request)
    try:
        if action == "open":
            services.open_round(rnd, request.user, deadline=request.POST.get("deadline") or None)
            messages.success(request, _("%(round)s is open; every panelist was e-mailed their personal link.")
                             % {"round": rnd.label})
        elif action == "close":
            result = services.close_round(rnd, request.user, request.POST.get("note", ""))
            text = [_("%(round)s closed.") % {"round": rnd.label}]
            if result.next_version:
                text.append(_("The decisions produced %(version)s (draft).") % {"version": result.next_version})
            if result.next_round:
                values = {"round": result.next_round.label, "n": result.carried,
                          "excluded": ", ".join(result.excluded)}
                text.append((ngettext("%(round)s is prepared with %(n)d panelist; excluded for low familiarity: "
                                      "%(excluded)s.",
                                      "%(round)s is prepared with %(n)d panelists; excluded for low familiarity: "
                                      "%(excluded)s.", result.carried) if result.excluded else
                             ngettext("%(round)s is prepared with %(n)d panelist.",
                                      "%(round)s is prepared with %(n)d panelists.", result.carried)) % values)
            messages.success(request, " ".join(text))
            return redirect("delphi:study", rnd.study_id)
        elif action == "remind":
            sent = services.send_reminders(rnd, force=True)
            messages.success(request, ngettext("%(n)d reminder sent.", "%(n)d reminders sent.", sent) % {"n": sent})
        else:
            raise Http404("Unknown action.")
    except DelphiError as exc:
        messages.error(request, str(exc))
    return redirect("delphi:round", pk)


# An item's row while the round's first statistics are being computed: consensus undefined, not "not met".
def _computing() -> dict:
    return {"consensus": None, "consensus_checks": [_("the statistics are being computed")]}


def focus_group_context(rnd: Round, user=None) -> dict:
    """Everything the between-rounds page shows, loaded in a few queries; the statistics are the round's stored
    figures (delphi/figures.py), empty while the first ones are being computed."""
    items = services.round_items(rnd)
    found = delphi_figures.round_figures(rnd, user)
    stored = found.report or {}
    stats = {int(pk): row for pk, row in (stored.get("items") or {}).items()}
    decisions = {d.item_id: d for d in rnd.decisions.alive().select_related("merge_into") if d.item_id}
    added = list(rnd.decisions.alive().filter(action=ItemDecision.Action.ADD).select_related("proposal"))
    opinions: dict[int, list[dict]] = {}
    for r in (Response.objects.filter(participation__round=rnd, participation__panelist__deleted_at__isnull=True)
              .exclude(comment="", proposed_wording="")
              .values("pk", "item_id", "importance", "comment", "proposed_wording", "adoption",
                      "participation__panelist__pseudonym").order_by("participation__panelist__pseudonym")):
        opinions.setdefault(r["item_id"], []).append(r)
    rule = rnd.study.consensus_rule()
    rows = []
    for item in items:
        row = stats.get(item.pk)
        # the rule's checks in the reader's language, from the stored statistics (a few comparisons per item)
        checks = consensus.consensus_met(row, rule)[1] if row else _computing()["consensus_checks"]
        rows.append({"item": item, "s": row or _computing(), "checks": checks, "decision": decisions.get(item.pk),
                     "opinions": opinions.get(item.pk, [])})
    proposals = list(Proposal.objects.alive().filter(participation__round=rnd)
                     .select_related("participation__panelist").order_by("created_at"))
    return {
        "round": rnd, "study": rnd.study, "rows": rows, "summary": stored.get("summary"), "figures": found,
        "job": found.job, "poll_url": reverse("figures-status", args=[found.pending.pk]) if found.pending else "",
        "added": added, "proposals": proposals, "actions": ItemDecision.action_choices(),
        "adoptions": [c for c in Response.Adoption.choices if c[0]], "items": items,
        "rule_text": exports.rule_text(rule),
        "quantile_method": consensus.QUANTILE_METHOD_LABEL,
        "editable": rnd.status != Round.Status.CLOSED and not rnd.is_validation,
        "dimensions": list(rnd.version.dimensions.order_by("order")),
        "n_unfinished": rnd.participations.filter(started_at__isnull=False, completed_at__isnull=True).count(),
    }


@role_required(*READERS)
def round_detail(request, pk: int):
    rnd = _round(request, pk)
    context = focus_group_context(rnd, request.user)
    context["can_edit"] = request_has_role(request, COORDINATOR)
    context["editable"] = context["editable"] and context["can_edit"]
    return render(request, "delphi/round_detail.html", context)


@require_POST
@role_required(COORDINATOR)
def round_decide(request, pk: int, item_id: int):
    rnd = _round(request, pk)
    item = get_in_project_or_404(Item, request, pk=item_id, version=rnd.version)
    merge_into = Item.objects.filter(pk=whole_number(request.POST, "merge_into") or 0, version=rnd.version).first()
    try:
        decision = services.decide(rnd, request.user, item=item, action=request.POST.get("action", ""),
                                   reason=request.POST.get("reason", ""),
                                   new_text_en=request.POST.get("new_text_en", ""),
                                   new_text_zh=request.POST.get("new_text_zh", ""), merge_into=merge_into)
    except DelphiError as exc:
        return _htmx_error(exc)
    return render(request, "delphi/partials/decision_saved.html", {"decision": decision})


@require_POST
@role_required(COORDINATOR)
def round_add_item(request, pk: int):
    rnd = _round(request, pk)
    proposal = Proposal.objects.alive().filter(pk=whole_number(request.POST, "proposal") or 0,
                                               participation__round=rnd).first()
    try:
        services.decide(rnd, request.user, item=None, action="add", reason=request.POST.get("reason", ""),
                        new_text_en=request.POST.get("new_text_en", ""), new_code=request.POST.get("new_code", ""),
                        dimension_code=request.POST.get("dimension_code", ""), proposal=proposal)
        messages.success(request, _("Item added to the next version."))
    except DelphiError as exc:
        messages.error(request, str(exc))
    return redirect("delphi:round", pk)


@require_POST
@role_required(COORDINATOR)
def round_withdraw_added(request, pk: int, decision_id: int):
    rnd = _round(request, pk)
    decision = get_in_project_or_404(ItemDecision.objects.alive(), request, pk=decision_id, round=rnd)
    try:
        services.withdraw_added_item(decision, request.user, request.POST.get("reason", "") or "withdrawn")
        messages.success(request, _("Added item withdrawn."))
    except (DelphiError, ValueError) as exc:
        messages.error(request, str(exc))
    return redirect("delphi:round", pk)


@require_POST
@role_required(COORDINATOR)
def round_adopt(request, pk: int, kind: str, obj_id: int):
    rnd = _round(request, pk)
    model = Response if kind == "response" else Proposal if kind == "proposal" else None
    if model is None:
        raise Http404("Unknown opinion kind.")
    obj = get_in_project_or_404(model.objects.select_related("participation__round"), request, pk=obj_id,
                                participation__round=rnd)
    try:
        services.set_adoption(obj, request.POST.get("adoption", ""), request.user, request.POST.get("note", ""))
    except DelphiError as exc:
        return _htmx_error(exc)
    return HttpResponse(_("Saved: %(adoption)s") % {"adoption": obj.get_adoption_display()},
                        content_type="text/plain; charset=utf-8")


@role_required(*READERS)
def round_validation(request, pk: int):
    rnd = _round(request, pk)
    found = delphi_figures.round_figures(rnd, request.user)
    stored = found.report or {}
    return render(request, "delphi/validation.html", {
        "round": rnd, "study": rnd.study, "report": stored.get("validation"), "summary": stored.get("summary"),
        "figures": found, "job": found.job,
        "poll_url": reverse("figures-status", args=[found.pending.pk]) if found.pending else "",
        "can_edit": request_has_role(request, COORDINATOR)})


@role_required(*READERS)
def round_export(request, pk: int, fmt: str):
    rnd = _round(request, pk)
    rows = exports.round_table(rnd)
    name = f"delphi-{rnd.study.pk}-round-{rnd.number}-items"
    if fmt == "csv":
        resp = HttpResponse(exports.to_csv(rows, exports.TABLE_COLUMNS), content_type="text/csv; charset=utf-8")
    elif fmt == "xlsx":
        with translation.override("en"):  # the sheet's name, as every export: never in the reader's language
            sheet = rnd.label
        resp = HttpResponse(exports.to_xlsx([(sheet, exports.TABLE_COLUMNS, rows)]),
                            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    else:
        raise Http404("Export as csv or xlsx.")
    resp["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return resp


@role_required(*READERS)
def study_export(request, pk: int, what: str, fmt: str):
    study = _study(request, pk)
    if what == "responses" and fmt in ("csv", "xlsx"):
        rows = list(exports.response_rows(study))
        body = (exports.to_csv(rows, exports.RESPONSE_COLUMNS) if fmt == "csv"
                else exports.to_xlsx([("responses", exports.RESPONSE_COLUMNS, rows)]))
    elif what == "reporting" and fmt == "xlsx":
        body = exports.to_xlsx(exports.reporting_sheets(study))
    else:
        raise Http404("Exports: responses.csv, responses.xlsx, reporting.xlsx.")
    ctype = "text/csv; charset=utf-8" if fmt == "csv" else \
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    resp = HttpResponse(body, content_type=ctype)
    resp["Content-Disposition"] = f'attachment; filename="delphi-{study.pk}-{what}.{fmt}"'
    return resp


# ---------------------------------------------------------------------------------------------------------------
# panelists
# ---------------------------------------------------------------------------------------------------------------
@login_required
def my_questionnaires(request):
    """A panelist with an account sees their studies here (the links are their personal links)."""
    rows = []
    for panelist in Panelist.objects.alive().filter(user=request.user, study__deleted_at__isnull=True) \
            .select_related("study"):
        part = services.participation_for(panelist)
        rows.append((panelist, part, services.make_token(panelist)))
    return render(request, "delphi/my.html", {"rows": rows, "is_staff": request_has_role(request, COORDINATOR, ADMIN)})


def _link_error(request, exc: LinkError) -> HttpResponse:
    return render(request, "delphi/link_error.html", {"error": exc}, status=exc.status)


def _panelist(token: str) -> Panelist:
    """The panelist a link belongs to (LinkError otherwise); the rest of the request works in the study's project
    and in the language the coordinator set for the panellist (if any: else the browser's)."""
    panelist = services.resolve_token(token)
    scoping.activate(panelist.study.project_id)
    if panelist.language:
        translation.activate(panelist.language)
    return panelist


def _panel_part(token: str, part_id: int):
    panelist = _panelist(token)
    part = panelist.participations.select_related("round__study", "round__version", "panelist").filter(
        pk=part_id).first()
    if part is None:
        raise Http404("No such questionnaire.")
    return panelist, part


def panel_home(request, token: str):
    try:
        panelist = _panelist(token)
    except LinkError as exc:
        return _link_error(request, exc)
    part = services.participation_for(panelist)
    lang = scale_language(request)
    if part is None:
        return render(request, "delphi/panel_closed.html", {"panelist": panelist, "study": panelist.study})
    rnd = part.round
    items = services.round_items(rnd)
    answers = {r.item_id: r for r in part.responses.all()}
    feedback = services.feedback_for(part, items)
    groups: list[tuple] = []
    for item in items:
        item.answer = answers.get(item.pk)
        item.feedback = feedback.get(item.pk)
        if not groups or groups[-1][0].pk != item.dimension_id:
            groups.append((item.dimension, []))
        groups[-1][1].append(item)
    editable = rnd.status == Round.Status.OPEN and part.withdrawn_at is None
    context = {
        "token": token, "panelist": panelist, "part": part, "round": rnd, "study": rnd.study, "groups": groups,
        "lang": lang, "editable": editable, "n_items": len(items),
        "n_answered": sum(1 for a in answers.values() if a.importance is not None),
        "familiarity": Familiarity.choices, "influence": Influence.choices,
        "bases": [(name, services.BASIS_NAMES[name], getattr(part, name)) for name in services.BASIS_FIELDS],
        "proposals": part.proposals.alive(), "likert": consensus.LIKERT,
        "missing": services.missing_answers(part) if editable else [],
        "dimensions": rnd.version.dimensions.order_by("order"),
        "quantile_method": consensus.QUANTILE_METHOD_LABEL,
    }
    return render(request, "delphi/questionnaire.html", context)


def _panel_post(request, token: str, part_id: int, fn):
    if request.method != "POST":
        return HttpResponse("Use POST.", status=405)
    try:
        panelist, part = _panel_part(token, part_id)
    except LinkError as exc:
        return HttpResponse(str(exc), status=exc.status, content_type="text/plain; charset=utf-8")
    try:
        return fn(part)
    except DelphiError as exc:
        return _htmx_error(exc)


def panel_answer(request, token: str, part_id: int, item_id: int):
    """One item's answer, posted by the questionnaire's answer-keeping engine (static/js/answer_sheet.js): JSON in
    both directions, a refusal as ``{"detail": ...}`` with its 4xx status (the engine shows it and stops
    retrying). A repeated post stores the same answer once (one response per panelist and item)."""
    if request.method != "POST":
        return JsonResponse({"detail": "Use POST."}, status=405)
    try:
        part = _panel_part(token, part_id)[1]
        raw = request.POST.get("importance", "")
        try:
            importance = int(raw) if raw not in ("", None) else None
        except ValueError:
            raise DelphiError(_("Importance is rated from 1 to 5.")) from None
        resp = services.save_answer(part, item_id, importance=importance, comment=request.POST.get("comment"),
                                    wording=request.POST.get("wording"))
    except (LinkError, DelphiError) as exc:
        return JsonResponse({"detail": str(exc)}, status=exc.status)
    return JsonResponse({"item": item_id, "importance": resp.importance, "saved_at": resp.updated_at.isoformat()})


def panel_profile(request, token: str, part_id: int):
    def save(part):
        fields = services.PROFILE_FIELDS + services.BASIS_FIELDS + ("familiarity",)
        services.save_profile(part, {k: request.POST.get(k, "") for k in fields if k in request.POST})
        return HttpResponse(_("Saved"), content_type="text/plain; charset=utf-8")

    return _panel_post(request, token, part_id, save)


def panel_propose(request, token: str, part_id: int):
    def save(part):
        services.add_proposal(part, text=request.POST.get("text", ""),
                              dimension_code=request.POST.get("dimension_code", ""),
                              reason=request.POST.get("reason", ""))
        return redirect("delphi:panel-home", token)

    resp = _panel_post(request, token, part_id, save)
    if resp.status_code >= 400 and resp.status_code not in (403, 410):
        messages.error(request, resp.content.decode())
        return redirect("delphi:panel-home", token)
    return resp


def panel_withdraw_proposal(request, token: str, part_id: int, proposal_id: int):
    def save(part):
        services.withdraw_proposal(part, proposal_id)
        return redirect("delphi:panel-home", token)

    return _panel_post(request, token, part_id, save)


def panel_complete(request, token: str, part_id: int):
    def save(part):
        services.complete(part)
        messages.success(request, _("Thank you: your answers are complete. You can still change them until the "
                                    "round closes."))
        return redirect("delphi:panel-home", token)

    resp = _panel_post(request, token, part_id, save)
    if resp.status_code in (400, 409):
        messages.error(request, resp.content.decode())
        return redirect("delphi:panel-home", token)
    return resp
