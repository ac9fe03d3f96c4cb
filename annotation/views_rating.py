"""The physician's rating page. Every click is posted at once by static/js/rating.js, which keeps unsent
answers in the browser and retries until the server has them."""

from __future__ import annotations

import contextlib

from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotation import dialogues as dialogue_views
from annotation import labels, rating_language, scales, scores
from annotation.campaigns import blind_id, next_assignment, queue_place, rating_projects
from annotation.models import Assignment, Label, Redaction
from annotation.views import scale_language
from core.site import jsonbody
from projects import access, scoping

MAX_ID = 2**63 - 1  # PostgreSQL bigint: larger ids and sequence numbers cannot be stored or looked up


def _own_assignment(request, pk: int, *, with_dialogue: bool = True) -> Assignment:
    """The requesting rater's assignment; anybody else's is a 404 (its existence is not revealed).
    Saves skip the dialogue (its turns are large and a click does not need them).
    A physician's queue spans every project where they are a physician: the request enters the assignment's
    project (its roles, its rows); an assignment in a project where they no longer rate is a 404 as well."""
    related = ("campaign", "dialogue") if with_dialogue else ("campaign",)
    with scoping.in_project(rating_projects(request.user)):
        assignment = Assignment.objects.select_related(*related).filter(pk=pk, rater=request.user).first()
    if assignment is None or assignment.campaign.is_deleted:
        raise Http404("No such assignment.")
    if getattr(getattr(request, "project", None), "pk", None) != assignment.campaign.project_id:
        access.enter(request, request.user, assignment.campaign.project)
    return assignment


def _next(user, after: Assignment | None = None) -> Assignment | None:
    """The rater's next open dialogue in any project where they rate."""
    with scoping.in_project(rating_projects(user)):
        return next_assignment(user, after=after)


def _error(exc: labels.LabelError) -> JsonResponse:
    return JsonResponse({"detail": str(exc)}, status=exc.status)


def _payload(request) -> dict:
    """The posted fields (form or JSON). Text with NUL characters cannot be stored: refused with a 400 (JSON bodies
    that are too deep, hold numbers that are not finite or too long, NUL or unpaired surrogates never get here:
    config.failures.RejectUnstorableText, with the reader of core.site.jsonbody)."""
    if jsonbody.is_json(request):
        data = jsonbody.request_json(request)
        data = data if isinstance(data, dict) else {}
    else:
        data = request.POST.dict()
    if any(isinstance(value, str) and "\x00" in value for value in data.values()):
        raise labels.LabelError(_("The text contains a NUL character (\\x00), which cannot be stored; remove it."))
    return data


@login_required
def rate_next(request):
    """Open the rater's next dialogue, or say that everything is done."""
    assignment = _next(request.user)
    if assignment is None:
        return render(request, "annotation/rate_done.html", {})
    return redirect("rate", pk=assignment.pk)


@login_required
def rate(request, pk: int):
    """The rating page, in the rater's language, or in the one the campaign fixes for all its raters
    (``annotation.rating_language``)."""
    assignment = _own_assignment(request, pk)
    fixed = rating_language.fixed_page_language(assignment.campaign)
    if fixed is None:
        return _rating_page(request, assignment, scale_language(request), fixed=False)
    with translation.override(fixed):
        response = _rating_page(request, assignment, assignment.campaign.rating_language, fixed=True)
    response.headers["Content-Language"] = fixed  # LocaleMiddleware would name the rater's own
    return response


def _rating_page(request, assignment: Assignment, lang: str, *, fixed: bool):
    campaign = assignment.campaign
    answers = {lab.item_id: lab for lab in Label.objects.filter(assignment=assignment)}
    sheet = scales.rating_sheet(campaign.scale_version_id)
    dimensions = [(dimension, [(item, answers.get(item.pk)) for item in items]) for dimension, items in sheet]
    view = dialogue_views.view_model(assignment.dialogue)
    page_lang = rating_language.of_page()
    # The switch to the instrument's other language: not where the campaign fixes it, nor for a version written
    # in one language only.
    other = rating_language.other(lang)
    context = {
        "assignment": assignment, "campaign": campaign, "lang": lang, "dimensions": dimensions,
        "dialogue": view, "language": assignment.dialogue.language, "page_lang": page_lang,
        "other_lang": other if not fixed and other in rating_language.languages_of(sheet) else "",
        "fixed_language": fixed,
        "n_items": sum(1 for _, items in dimensions for item, _ in items if item.response_type != "text"),
        "n_answered": sum(1 for a in answers.values() if a.value is not None),
        "queue": queue_place(assignment), "max_text": labels.MAX_TEXT, "editable": assignment.is_open,
        "blind_id": blind_id(campaign.pk, assignment.dialogue_id),
        "show_reference": view["is_answer"] and scales.shows_reference(campaign.scale_version_id),
    }
    return render(request, "annotation/rate.html", context)


@access.project_free
@require_POST
@login_required
def rate_label(request, pk: int):
    try:
        data = _payload(request)
    except labels.LabelError as exc:
        return _error(exc)
    try:
        item_id = int(data.get("item"))
        raw = data.get("value")
        value = None if raw in (None, "", "null") else scores.parse(raw)
        seq = int(data.get("seq") or 0)
    except (TypeError, ValueError):
        return JsonResponse({"detail": _("Send item (id), value (number or empty) and seq.")}, status=400)
    if not (0 <= item_id <= MAX_ID and 0 <= seq <= MAX_ID and (value is None or abs(value) < 2**15)):
        return JsonResponse({"detail": _("item and seq are whole numbers from 0 to %(max)s; value is a small "
                                         "number.") % {"max": MAX_ID}}, status=400)
    comment = data.get("comment")
    comment = None if comment is None else str(comment)
    try:
        # save_label checks ownership inside its transaction; someone else's assignment is a 404 as everywhere.
        label = labels.save_label(pk, item_id, value, request.user, comment=comment, client_seq=seq,
                                  member_only=True,
                                  item_language=rating_language.recorded(data.get("item_language")) or None)
    except labels.LabelError as exc:
        if exc.status in (403, 404):
            raise Http404("No such assignment.") from None
        return _error(exc)
    return JsonResponse({"item": item_id, "value": label.value, "comment": label.comment,
                         "item_language": label.item_language, "saved_at": label.updated_at.isoformat(),
                         "seq": label.client_seq})


@require_POST
@login_required
def rate_comment(request, pk: int):
    assignment = _own_assignment(request, pk)
    try:
        labels.save_comment(assignment, request.user, str(_payload(request).get("comment", "")))
    except labels.LabelError as exc:
        return _error(exc)
    return JsonResponse({"ok": True})


def _next_url(request, after: Assignment) -> str:
    nxt = _next(request.user, after=after)
    return reverse("rate", args=[nxt.pk]) if nxt else reverse("rate-next")


def _act(request, pk: int, action, *, field: str | None = None, move_on: bool = True) -> JsonResponse:
    """Run one assignment action (submit, skip, flag) and answer JSON: where to go next, or why not."""
    assignment = _own_assignment(request, pk, with_dialogue=False)
    fixed = rating_language.fixed_page_language(assignment.campaign)
    try:
        args = (str(_payload(request).get(field, "")),) if field else ()
        # refusals in the language of the page they are shown on
        with translation.override(fixed) if fixed else contextlib.nullcontext():
            action(assignment, request.user, *args)
    except labels.LabelError as exc:
        return _error(exc)
    body = {"ok": True}
    if move_on:
        body["next_url"] = _next_url(request, assignment)
    return JsonResponse(body)


@require_POST
@login_required
def rate_submit(request, pk: int):
    return _act(request, pk, labels.submit)


@require_POST
@login_required
def rate_skip(request, pk: int):
    return _act(request, pk, labels.skip, field="reason")


@require_POST
@login_required
def rate_flag(request, pk: int):
    return _act(request, pk, labels.flag, field="note", move_on=False)


@require_POST
@login_required
def rate_redact(request, pk: int):
    """Fine-grained privacy removal while rating: hide a span of a turn or of the self-report."""
    assignment = _own_assignment(request, pk)
    if not assignment.is_open:
        return JsonResponse({"detail": _("This dialogue is closed.")}, status=409)
    try:
        data = _payload(request)
    except labels.LabelError as exc:
        return _error(exc)
    try:
        field = str(data.get("field"))
        turn = None if data.get("turn") in (None, "", "null") else int(data["turn"])
        start, end = int(data.get("start")), int(data.get("end"))
        dialogue_views.redact(assignment.dialogue, field=field, turn=turn, start=start, end=end, user=request.user,
                              source=Redaction.Source.ANNOTATOR, reason=str(data.get("reason", ""))[:300])
    except (TypeError, ValueError, KeyError) as exc:
        return JsonResponse({"detail": _("Cannot redact that selection: %(error)s") % {"error": exc}}, status=400)
    return JsonResponse({"ok": True})


@login_required
def rate_goto_next(request, pk: int):
    """Keyboard "n": the next open dialogue after this one (this one stays as it is, answers are saved)."""
    assignment = _own_assignment(request, pk)
    nxt = _next(request.user, after=assignment)
    return redirect("rate", pk=nxt.pk) if nxt else redirect("rate-next")
