"""Preference study pages: coordinators set up, open, lock and unblind studies and ask LLM judges; physicians
compare A and B (static/js/compare.js saves every click); analysts read results after unblinding."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from core.site import jsonbody
from core.site.params import whole_number
from projects import access
from projects.access import current, get_in_project_or_404, request_has_role, role_required
from projects.models import AuditEvent
from projects.roles import ANALYST, COORDINATOR, PHYSICIAN
from scoring.llm import engine, gateway
from scoring.llm.forms import SpendCapsForm
from scoring.preference import judging as preference_judging
from scoring.preference import services as preference
from scoring.preference.errors import PreferenceError
from scoring.preference.forms import (
    AnswersForm,
    DialoguesForm,
    JudgeForm,
    JudgeRunsForm,
    RatersForm,
    ReasonForm,
    StudyForm,
)
from scoring.preference.models import PreferenceJudgeRun, PreferenceStudy, PreferenceTask


def _study(request, pk: int) -> PreferenceStudy:
    """A study of the request's project: another project's answers 404, as a missing one."""
    return get_in_project_or_404(PreferenceStudy.objects.alive(), request, pk=pk)


@role_required(COORDINATOR, ANALYST)
def study_list(request):
    studies = list(PreferenceStudy.objects.alive())
    for study, counts in zip(studies, preference.list_counts([s.pk for s in studies]), strict=True):
        study.n_items, study.n_tasks, study.n_done = counts["items"], counts["tasks"], counts["submitted"]
    return render(request, "scoring/preference_list.html", {"studies": studies})


@role_required(COORDINATOR)
def study_new(request):
    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            study = preference.create_study(
                name=data["name"], kind=data["kind"], criteria=data["criteria"], overlap=data["overlap"],
                instructions=data.get("instructions", ""), item_codes=data["codes"],
                user=request.user, project=current(request))
        except PreferenceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Study %(name)s created. Add its candidates next.") % {"name": study.name})
            return redirect("preference-detail", pk=study.pk)
    return render(request, "scoring/preference_new.html", {"form": form})


def _detail_context(request, study: PreferenceStudy) -> dict:
    events = AuditEvent.objects.filter(
        target_type=ContentType.objects.get_for_model(PreferenceStudy), target_id=str(study.pk)
    ).select_related("actor")[:100]
    sealed = not study.is_unblinded and study.status != PreferenceStudy.Status.DRAFT
    sources = list(study.sources.order_by("position"))
    context = {
        "study": study, "progress": preference.progress(study), "criteria": study.criteria.all(),
        "sources": sources, "sealed": sealed, "events": events,
        "judge_runs": [(run, preference_judging.progress(run)) for run in study.judge_runs.select_related("config")],
        "is_coordinator": request_has_role(request, COORDINATOR), "reason_form": ReasonForm(),
        "corpus_use": preference.corpus_use(study),
    }
    if study.status == PreferenceStudy.Status.DRAFT:
        context["items"] = study.items.alive().annotate(n=Count("candidates"))[:200]
        if study.kind == PreferenceStudy.Kind.EVALUATION:
            context["source_form"] = JudgeRunsForm(project=study.project_id)
        elif study.kind == PreferenceStudy.Kind.DIALOGUE:
            context["source_form"] = DialoguesForm(initial={"group_key": study.group_key or "case_id"},
                                                   project=study.project_id)
        else:
            context["source_form"] = AnswersForm()
    if study.status in (PreferenceStudy.Status.DRAFT, PreferenceStudy.Status.OPEN):
        context["raters_form"] = RatersForm(project=study.project_id)
    context["can_withdraw"] = context["is_coordinator"] and study.status == PreferenceStudy.Status.OPEN
    if study.status != PreferenceStudy.Status.DRAFT:
        context["judge_form"] = JudgeForm(study=study)
    if study.status in (PreferenceStudy.Status.LOCKED, PreferenceStudy.Status.UNBLINDED):
        from django.urls import reverse

        from scoring.preference.figures import blinded_figures

        found = blinded_figures(study, request.user)  # stored by a worker: "updating" while newer ones are computed
        context.update(blinded=found, blinded_summary=found.report,
                       blinded_poll_url=reverse("figures-status", args=[found.pending.pk]) if found.pending else "")
    return context


@role_required(COORDINATOR, ANALYST)
def study_detail(request, pk: int):
    study = _study(request, pk)
    return render(request, "scoring/preference_detail.html", _detail_context(request, study))


@require_POST
@role_required(COORDINATOR)
def study_sources(request, pk: int):
    """Add candidates: judge runs (evaluation), dialogues grouped by case (dialogue), or imported answers."""
    study = _study(request, pk)
    try:
        if study.kind == PreferenceStudy.Kind.EVALUATION:
            form = JudgeRunsForm(request.POST, project=study.project_id)
            if not form.is_valid():
                raise PreferenceError(_("Choose at least two finished judge runs."))
            result = preference.add_judge_runs(study, list(form.cleaned_data["runs"]), request.user)
            messages.success(request, _("%(items)d dialogue(s) judged by every run added, %(candidates)d "
                                        "evaluation(s).") % result)
        elif study.kind == PreferenceStudy.Kind.DIALOGUE:
            form = DialoguesForm(request.POST, project=study.project_id)
            if not form.is_valid():
                raise PreferenceError(_("Choose a corpus and the metadata key of the case."))
            data = form.cleaned_data
            result = preference.add_dialogues(study, data["corpus"], group_key=data["group_key"],
                                              models=data["models"].split(","), user=request.user)
            use = preference.corpus_use(study)
            messages.success(request, _("%(items)d case(s) with %(candidates)d dialogue(s) added: the study uses "
                                        "%(used)d of the corpus's %(total)d dialogues (the study page says why "
                                        "the others are left out).") % {**result, "used": use["used"],
                                                                         "total": use["total"]})
        else:
            form = AnswersForm(request.POST, request.FILES)
            if not form.is_valid():
                raise PreferenceError(_("Choose a JSON Lines file of answers."))
            result = preference.import_answers(study, form.cleaned_data["file"].read().splitlines(), request.user)
            messages.success(request, _("%(answers)d answer(s) to %(items)d item(s) imported.") % result)
    except preference.ImportRejected as exc:
        messages.error(request, _("Nothing was imported: %(errors)s")
                       % {"errors": "; ".join(str(e) for e in exc.errors[:30])})
    except PreferenceError as exc:
        messages.error(request, str(exc))
    return redirect("preference-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def study_raters(request, pk: int):
    study = _study(request, pk)
    form = RatersForm(request.POST, project=study.project_id)
    if not form.is_valid():
        messages.error(request, _("Choose one or more physicians."))
        return redirect("preference-detail", pk=pk)
    try:
        for user in form.cleaned_data["users"]:
            preference.add_rater(study, user, capacity=form.cleaned_data.get("capacity"), added_by=request.user)
        if study.status == PreferenceStudy.Status.OPEN:
            result = preference.assign(study, user=request.user)
            messages.success(request, _("Raters added; %(n)d comparison(s) assigned.") % {"n": result.created})
        else:
            messages.success(request, _("Raters added; comparisons are assigned when the study opens."))
    except PreferenceError as exc:
        messages.error(request, str(exc))
    return redirect("preference-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def study_action(request, pk: int):
    """open / assign / withdraw-rater / lock / unblind / delete / judge / cancel-judge."""
    study = _study(request, pk)
    action = request.POST.get("action")
    reason = request.POST.get("reason", "").strip()
    try:
        if action == "open":
            result = preference.open_study(study, request.user)
            note = (" " + _("%(n)d comparison(s) lack raters: add raters.") % {"n": len(result.short)}
                    if result.short else "")
            messages.success(request, _("Study open: %(n)d comparison(s) assigned.") % {"n": result.created} + note)
        elif action == "assign":
            result = preference.assign(study, user=request.user)
            messages.success(request, _("%(n)d comparison(s) assigned.") % {"n": result.created})
        elif action == "withdraw-rater":
            rater = get_in_project_or_404(study.raters.select_related("user"), request,
                                          user_id=whole_number(request.POST, "rater"))
            withdrawn, topped_up = preference.withdraw_rater(study, rater.user, by=request.user, reason=reason)
            note = (" " + _("%(n)d comparison(s) lack raters: add raters.") % {"n": len(topped_up.short)}
                    if topped_up.short else "")
            messages.success(request, _("%(user)s withdrawn: %(withdrawn)d open comparison(s) withdrawn, %(given)d "
                                        "given to other raters.") % {"user": rater.user.username,
                                                                     "withdrawn": withdrawn,
                                                                     "given": topped_up.created} + note)
        elif action == "lock":
            preference.lock(study, request.user, reason)
            messages.success(request, _("Study locked. Identities stay sealed until you unblind it."))
        elif action == "unblind":
            preference.unblind(study, request.user, reason)
            messages.success(request, _("Study unblinded; the action is recorded."))
        elif action == "delete":
            preference.delete_study(study, request.user, reason)
            messages.success(request, _("Study %(name)s deleted (kept in the audit trail).") % {"name": study.name})
            return redirect("preference-list")
        elif action == "judge":
            form = JudgeForm(request.POST, study=study)
            if not form.is_valid():
                raise PreferenceError(" ".join(" ".join(e) for e in form.errors.values())
                                      or _("Choose a judge configuration."))
            run = preference_judging.create_run(study, form.cleaned_data["config"], request.user,
                                                cost_cap=form.cleaned_data["cost_cap"],
                                                token_cap=form.cleaned_data["token_cap"])
            units = preference_judging.start(run, request.user)
            messages.success(request, _("LLM judge started: %(n)d request(s) queued (each pair in both orders).")
                             % {"n": units})
        elif action in ("cancel-judge", "pause-judge", "resume-judge", "retry-judge", "caps-judge"):
            run = get_in_project_or_404(study.judge_runs, request, pk=whole_number(request.POST, "run"))
            if action == "cancel-judge":
                preference_judging.cancel(run, request.user)
                messages.success(request, _("Judge run cancelled."))
            elif action == "pause-judge":
                preference_judging.set_status(run, PreferenceJudgeRun.Status.PAUSED, request.user)
                messages.success(request, _("Judge run paused: requests in flight are stored, nothing more is sent."))
            elif action == "resume-judge":
                units = preference_judging.start(run, request.user)
                messages.success(request, _("Judge run resumed: %(n)d request(s) to go.") % {"n": units})
            elif action == "retry-judge":
                count = preference_judging.retry_failed(run, request.user)
                messages.success(request, _("%(n)d failed or unscored comparison(s) will be asked again.")
                                 % {"n": count})
            else:
                caps = SpendCapsForm(request.POST)
                if not caps.is_valid():
                    raise PreferenceError(caps.problem())
                engine.set_caps(preference_judging.HANDLER, run, **caps.caps(), user=request.user,
                                action="preference.judge")
                messages.success(request, _("Spending caps saved."))
        else:
            raise PreferenceError(_("Unknown action."))
    except (PreferenceError, gateway.NotConfigured) as exc:
        messages.error(request, str(exc))
    return redirect("preference-detail", pk=pk)


@require_POST
@role_required(COORDINATOR)
def item_delete(request, pk: int, item_id: int):
    study = _study(request, pk)
    item = get_in_project_or_404(study.items.alive(), request, pk=item_id)
    try:
        preference.delete_item(item, request.user, request.POST.get("reason", ""))
        messages.success(request, _("Item %(item)s left out.") % {"item": item.external_id})
    except PreferenceError as exc:
        messages.error(request, str(exc))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return redirect("preference-detail", pk=pk)


@role_required(COORDINATOR, ANALYST)
def study_results(request, pk: int):
    study = _study(request, pk)
    if not study.is_unblinded:
        return render(request, "scoring/preference_results.html", {"study": study, "sealed": True}, status=409)
    try:
        n = min(5000, max(100, int(request.GET.get("resamples", 1000))))
    except ValueError:
        n = 1000
    from django.urls import reverse

    from scoring.preference.figures import results_figures

    # Computed by a worker when the inputs change and stored: shown at once, "updating" while newer ones compute.
    found = results_figures(study, request.user, n_resamples=n, retry=request.method == "POST")
    if request.method == "POST":  # "Try again" after a failure
        return redirect(request.get_full_path())
    poll = reverse("figures-status", args=[found.pending.pk]) if found.pending else ""
    return render(request, "scoring/preference_results.html", {
        "study": study, "report": found.report, "figures": found, "job": found.job, "poll_url": poll,
        "sealed": False})


@role_required(COORDINATOR, ANALYST)
def study_export(request, pk: int):
    study = _study(request, pk)
    from scoring.preference.rows import export_csv

    response = HttpResponse(export_csv(study), content_type="text/csv; charset=utf-8")
    suffix = "unblinded" if study.is_unblinded else "blinded"
    response["Content-Disposition"] = f'attachment; filename="preference-{study.pk}-{suffix}.csv"'
    return response


# ---------------------------------------------------------------------------------------------------------------
# physicians
# ---------------------------------------------------------------------------------------------------------------
def _task(request, pk: int) -> PreferenceTask:
    """The user's comparison in any project where they are a physician; the request then works in its project."""
    try:
        task = preference.own_task(request.user, pk)
    except PreferenceError:
        raise Http404("No such comparison.") from None
    if getattr(request, "project", None) is None or request.project.pk != task.study.project_id:
        access.enter(request, request.user, task.study.project)
    return task


def _payload(request) -> dict:
    if jsonbody.is_json(request):  # refused at the door when malformed (config.failures.RejectUnstorableText)
        data = jsonbody.request_json(request)
        return data if isinstance(data, dict) else {}
    return request.POST.dict()


def _error(exc: PreferenceError) -> JsonResponse:
    return JsonResponse({"detail": str(exc)}, status=exc.status)


@login_required
def compare_next(request):
    task = preference.next_task(request.user)
    if task is None:
        studies = [{**row, "status_display": PreferenceStudy.Status(row["study__status"]).label}
                   for row in preference.my_studies(request.user)]
        return render(request, "scoring/preference_done.html", {
            "studies": studies, "is_physician": request_has_role(request, PHYSICIAN)})
    return redirect("compare-task", pk=task.pk)


@login_required
def compare_task(request, pk: int):
    task = _task(request, pk)
    view = preference.blinded_task(task)
    counts = (PreferenceTask.objects.filter(rater=request.user, study=task.study)
              .exclude(status=PreferenceTask.Status.WITHDRAWN)
              .aggregate(total=Count("id"), done=Count("id", filter=Q(status__in=["submitted", "skipped"]))))
    return render(request, "scoring/preference_task.html", {"task": task, "view": view, "counts": counts})


@require_POST
@login_required
def compare_answer(request, pk: int):
    task = _task(request, pk)
    data = _payload(request)
    try:
        criterion = int(data.get("criterion"))
        seq = int(data.get("seq") or 0)
    except (TypeError, ValueError):
        return JsonResponse({"detail": _("Send criterion (id), choice (A, tie or B) and seq.")}, status=400)
    try:
        answer = preference.save_answer(task, criterion, str(data.get("choice", "")), request.user,
                                        comment=data.get("comment"), client_seq=seq)
    except PreferenceError as exc:
        return _error(exc)
    return JsonResponse({"criterion": criterion, "choice": answer.choice, "comment": answer.comment,
                         "saved_at": answer.updated_at.isoformat(), "seq": answer.client_seq})


@require_POST
@login_required
def compare_comment(request, pk: int):
    task = _task(request, pk)
    try:
        preference.save_task_comment(task, request.user, str(_payload(request).get("comment", "")))
    except PreferenceError as exc:
        return _error(exc)
    return JsonResponse({"ok": True})


def _next_url(request, after: PreferenceTask) -> str:
    nxt = preference.next_task(request.user, after=after)
    return reverse("compare-task", args=[nxt.pk]) if nxt else reverse("compare-next")


@require_POST
@login_required
def compare_submit(request, pk: int):
    task = _task(request, pk)
    try:
        preference.submit_task(task, request.user)
    except PreferenceError as exc:
        return _error(exc)
    return JsonResponse({"ok": True, "next_url": _next_url(request, task)})


@require_POST
@login_required
def compare_skip(request, pk: int):
    task = _task(request, pk)
    try:
        preference.skip_task(task, request.user, str(_payload(request).get("reason", "")))
    except PreferenceError as exc:
        return _error(exc)
    return JsonResponse({"ok": True, "next_url": _next_url(request, task)})


@login_required
def compare_goto_next(request, pk: int):
    task = _task(request, pk)
    nxt = preference.next_task(request.user, after=task)
    return redirect("compare-task", pk=nxt.pk) if nxt else redirect("compare-next")
