"""Coordinator pages for dialogue generation: case sets, jobs with live progress, transcripts, the accuracy report."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from annotation.importers import ImportRejected, LineError, size_error
from annotation.models import Campaign
from projects.access import current, get_in_project_or_404, role_required
from projects.models import AuditEvent
from projects.roles import ANALYST, COORDINATOR
from scoring.generation import cases
from scoring.generation import services as generation
from scoring.generation.forms import CaseImportForm, GenerationJobForm
from scoring.generation.models import CaseSet, GeneratedDialogue, GenerationJob
from scoring.llm import engine, gateway
from scoring.llm.endpoints import endpoint_help
from scoring.llm.forms import SpendCapsForm

FIELD_GROUPS = [
    (_("Cases and output"), ["name", "case_set", "corpus_name", "split"]),
    (_("Doctor under test"), ["doctor_models", "doctor_endpoint"]),
    (_("Patient simulator, measurement agent and moderator"), ["patient_model", "patient_endpoint",
                                                              "measurement_model", "moderator_model",
                                                              "patient_temperature"]),
    (_("Conditions"), ["temperatures", "doctor_biases", "patient_biases", "repeats"]),
    (_("Dialogue"), ["max_turns", "end_marker", "reveal_diagnosis", "max_tokens"]),
    (_("Limits and prices"), ["max_attempts", "doctor_price_in", "doctor_price_out", "patient_price_in",
                           "patient_price_out", "cost_cap", "token_cap"]),
    (_("Prompts (defaults written from Schmidgall et al., AgentClinic, Appendix B)"),
     ["doctor_prompt", "patient_prompt", "measurement_prompt", "moderator_prompt"]),
]


@role_required(COORDINATOR, ANALYST)
def generation_home(request):
    project = current(request)
    return render(request, "scoring/generation_list.html", {
        "case_sets": CaseSet.objects.alive().prefetch_related("cases"),
        "jobs": GenerationJob.objects.select_related("case_set", "corpus")[:50],
        "endpoint_help": endpoint_help(project),
    })


def _jobs(request):
    """The request's project's generation jobs: another project's answers 404, as a missing one."""
    return GenerationJob.objects.select_related("case_set", "corpus")


@role_required(COORDINATOR)
def case_import(request):
    project = current(request)
    form = CaseImportForm(request.POST or None, request.FILES or None,
                          initial={"case_set": request.GET.get("case_set", "")})
    errors = []
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        too_large = size_error(upload.size)
        if too_large:
            errors = [too_large]
        else:
            name = form.cleaned_data["case_set"].strip()
            try:
                with transaction.atomic():
                    case_set = CaseSet.objects.filter(name=name).first()
                    if case_set is not None and case_set.is_deleted:
                        raise ImportRejected([LineError(0, f"case set {name!r} was deleted; "
                                                                 "choose another name")])
                    if case_set is None:
                        case_set = CaseSet.objects.create(project=project, name=name, created_by=request.user,
                                                          source=upload.name,
                                                          description=form.cleaned_data["description"])
                        AuditEvent.record(request.user, "case_set.create", case_set)
                    counts = cases.import_cases(case_set, upload, user=request.user, source=upload.name)
            except ImportRejected as exc:
                errors = exc.errors
            else:
                messages.success(request, gettext(
                    "Imported %(created)s case(s) into %(case_set)s (%(osce)s OSCE, %(self_report)s self-report, "
                    "%(from_templates)s from templates).") % {**counts, "case_set": case_set.name})
                return redirect("generation-case-set", pk=case_set.pk)
    return render(request, "scoring/generation_import.html", {"form": form, "errors": errors})


@role_required(COORDINATOR, ANALYST)
def case_set_detail(request, pk: int):
    case_set = get_in_project_or_404(CaseSet.objects.alive(), request, pk=pk)
    return render(request, "scoring/generation_case_set.html", {
        "case_set": case_set, "cases": case_set.cases.alive()[:500], "count": case_set.cases.alive().count(),
        "jobs": case_set.jobs.select_related("corpus")})


@role_required(COORDINATOR)
def job_new(request):
    project = current(request)
    initial = {"case_set": request.GET.get("case_set")}
    form = GenerationJobForm(request.POST or None, initial=initial, project=project)
    if request.method == "POST" and form.is_valid():
        try:
            job = generation.create_job(user=request.user, **form.job_kwargs())
        except (gateway.NotConfigured, generation.GenerationError) as exc:
            form.add_error(None, str(exc))
        else:
            count = generation.start(job, request.user)
            messages.success(request, ngettext("Generation #%(job)s started: %(count)s dialogue queued.",
                                               "Generation #%(job)s started: %(count)s dialogues queued.", count)
                             % {"job": job.pk, "count": count})
            return redirect("generation-job", pk=job.pk)
    groups = [(legend, [form[name] for name in names]) for legend, names in FIELD_GROUPS]
    return render(request, "scoring/generation_job_new.html", {"form": form, "groups": groups,
                                                               "endpoint_help": endpoint_help(project)})


def _job_context(job: GenerationJob) -> dict:
    failed = (GeneratedDialogue.objects.filter(job=job, status=GeneratedDialogue.Status.FAILED)
              .select_related("case")[:200])
    return {"job": job, "progress": generation.progress(job), "failed": failed, "report": generation.report(job),
            "dialogues": GeneratedDialogue.objects.filter(job=job).select_related("case")[:300]}


@role_required(COORDINATOR, ANALYST)
def job_detail(request, pk: int):
    job = get_in_project_or_404(_jobs(request), request, pk=pk)
    context = _job_context(job)
    context.update({
        "campaigns": Campaign.objects.alive().filter(corpus=job.corpus),
        "judge_runs": job.corpus.judge_runs.filter(project=job.project_id).select_related("config")[:20],
    })
    return render(request, "scoring/generation_job.html", context)


@role_required(COORDINATOR, ANALYST)
def job_progress(request, pk: int):
    """htmx partial, polled while the job is active."""
    job = get_in_project_or_404(_jobs(request), request, pk=pk)
    return render(request, "scoring/generation_progress.html", _job_context(job))


@require_POST
@role_required(COORDINATOR)
def job_action(request, pk: int):
    job = get_in_project_or_404(_jobs(request), request, pk=pk)
    action = request.POST.get("action")
    try:
        if action == "pause":
            generation.set_status(job, GenerationJob.Status.PAUSED, request.user)
        elif action == "cancel":
            generation.set_status(job, GenerationJob.Status.CANCELLED, request.user)
        elif action == "resume":
            if job.status != GenerationJob.Status.PAUSED:
                raise generation.GenerationError(gettext("Only a paused job can be resumed."))
            generation.start(job, request.user)
        elif action == "retry":
            count = generation.retry_failed(job, request.user)
            messages.success(request, ngettext("%(count)s failed dialogue will continue from its last stored turn.",
                                               "%(count)s failed dialogues will continue from their last stored "
                                               "turn.", count) % {"count": count})
        elif action == "caps":
            caps = SpendCapsForm(request.POST)
            if not caps.is_valid():
                raise generation.GenerationError(caps.problem())
            engine.set_caps(generation.HANDLER, job, **caps.caps(), user=request.user, action="generation_job")
            messages.success(request, gettext("Spending caps saved."))
        else:
            raise generation.GenerationError(gettext("Unknown action."))
    except generation.GenerationError as exc:
        messages.error(request, str(exc))
    return redirect("generation-job", pk=pk)


@role_required(COORDINATOR, ANALYST)
def generated_detail(request, pk: int):
    gd = get_in_project_or_404(GeneratedDialogue.objects.select_related("job", "case", "dialogue"), request, pk=pk)
    return render(request, "scoring/generation_dialogue.html", {"gd": gd, "turns": generation.transcript(gd)})
