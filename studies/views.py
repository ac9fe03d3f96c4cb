"""The project's "Study archive" page (coordinators and analysts): export the study as one archive, read its
methods and results and its TRIPOD-LLM checklist, download them (Markdown, DOCX)."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from projects.access import role_required
from projects.roles import ANALYST, COORDINATOR

DOCUMENTS = {"methods.md": "text/markdown; charset=utf-8",
             "methods.docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
             "tripod-llm.md": "text/markdown; charset=utf-8"}


@role_required(COORDINATOR, ANALYST)
def archive_page(request):
    from studies.export import pending_review
    from studies.services import recent_exports

    return render(request, "studies/archive.html", {"pending": pending_review(request.project),
                                                    "exports": recent_exports(request.project)})


@role_required(COORDINATOR, ANALYST)
@require_http_methods(["GET", "POST"])
def archive_export(request):
    """POST: a worker exports the study (the page lists it and offers the zip when it is written); refused while a
    dialogue awaits privacy review. GET: back to the page."""
    from studies.export import pending_review
    from studies.services import recent_exports, start_export

    if request.method == "GET":
        return redirect("study-archive")
    if pending_review(request.project):
        return render(request, "studies/archive.html", {
            "pending": True, "exports": recent_exports(request.project),
            "error": _("Dialogues await privacy review: review them (Corpora → Privacy review) before exporting "
                       "the study.")}, status=409)
    start_export(request.project, request.user)
    return redirect("study-archive")


@role_required(COORDINATOR, ANALYST)
def export_status(request, pk: int):
    """One export, as the page lists it (polled while it runs)."""
    from core.jobs.models import Job
    from studies.services import export_job

    try:
        job = export_job(pk)
    except Job.DoesNotExist:
        raise Http404("No such export.") from None
    return render(request, "studies/partials/export.html", {"job": job})


@role_required(COORDINATOR, ANALYST)
def export_download(request, pk: int):
    """A finished export's zip."""
    from core.jobs.models import Job
    from studies.services import export_job, open_archive_file

    try:
        job = export_job(pk)
        handle = open_archive_file(job)
    except (Job.DoesNotExist, FileNotFoundError):
        raise Http404("No such archive.") from None
    return FileResponse(handle, as_attachment=True, filename=job.result["file"], content_type="application/zip")


@role_required(COORDINATOR, ANALYST)
def methods_page(request):
    """The methods and results as a worker last wrote them (stored figures: "updating" while newer ones are
    computed, "computing" before the first)."""
    from django.urls import reverse

    from studies.figures import methods_figures
    from studies.methods import TRIPOD_SOURCE, applicability, checklist, sections

    found = methods_figures(request.project, request.user)
    context = {"figures": found, "job": found.job, "tripod_source": TRIPOD_SOURCE,
               "poll_url": reverse("figures-status", args=[found.pending.pk]) if found.pending else ""}
    view = found.report
    if view:
        context.update(sections=sections(view), checklist=checklist(view), tripod_applicability=applicability(view))
    return render(request, "studies/methods.html", context)


@role_required(COORDINATOR, ANALYST)
def methods_download(request, what: str):
    """A document written from the methods page's stored figures when they are of the study as it is; else the
    page saying it is being prepared while a worker computes them (nothing is computed in the request)."""
    from django.urls import reverse

    from scoring.reports.pending import download_answer
    from studies.figures import methods_document, methods_figures

    if what not in DOCUMENTS:
        raise Http404("No such document.")
    found = methods_figures(request.project, request.user)
    if not found.fresh:
        return download_answer(request, found.current_job, page_url=reverse("study-archive-methods"))
    body = methods_document(found.report, what)
    response = HttpResponse(body, content_type=DOCUMENTS[what])
    response["Content-Disposition"] = f'attachment; filename="{what}"'
    return response
