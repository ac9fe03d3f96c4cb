"""Report pages: the trial report, the campaign agreement report (computed by a worker) and label exports."""

from django.shortcuts import render
from django.urls import reverse

from core.jobs.models import Job
from projects.access import get_in_project_or_404, request_has_role, role_required
from projects.roles import ANALYST, COORDINATOR


@role_required(COORDINATOR, ANALYST)
def campaign_trial_report(request, pk: int):
    from annotation.models import Campaign
    from scoring.reports.figures import names_allowed
    from scoring.reports.trial import trial_report

    campaign = get_in_project_or_404(Campaign.objects.alive(), request, pk=pk)
    report = trial_report(campaign, names=names_allowed(request.user, campaign))
    return render(request, "scoring/trial_report.html", {"campaign": campaign, "report": report})


def _campaign(request, pk: int):
    """A campaign of the request's project: another project's answers 404, as a missing one."""
    from annotation.models import Campaign

    return get_in_project_or_404(Campaign.objects.alive().select_related("corpus", "scale_version__scale"), request,
                                 pk=pk)


@role_required(COORDINATOR, ANALYST)
def campaign_report(request, pk: int):
    """The analyst's report: computed by a worker when the labels change and stored; the page shows the latest
    stored report at once, marked "updating" while a newer one is computed, and progress only when there is none."""
    from urllib.parse import urlencode

    from django.shortcuts import redirect

    from scoring.reports.figures import last_failure, report_figures, report_options

    campaign = _campaign(request, pk)
    options = report_options(request.GET)
    query = urlencode({"ci": options["ci_method"], "correlation": options["correlation"]})
    if request.method == "POST":  # "Try again" after a failure
        report_figures(campaign, request.user, retry=True, options=options)
        return redirect(f"{reverse('campaign-report', args=[pk])}?{query}")
    found = report_figures(campaign, request.user, options=options)
    context = {"campaign": campaign, "job": found.job, "figures": found, "failure": last_failure(campaign),
               "options": options, "query": query}
    if found.stored is not None:
        context["report"] = found.report
        if found.pending is not None:
            context["poll_url"] = reverse("campaign-report-status", args=[pk, found.pending.pk])
        return render(request, "scoring/report.html", context)
    return render(request, "scoring/report_pending.html", context)


@role_required(COORDINATOR, ANALYST)
def campaign_report_status(request, pk: int, job_id: int):
    """htmx poll: the progress bar (or the "updating" note with ``?updating=1``), or a full-page refresh once the
    report is ready."""
    from django.http import HttpResponse

    campaign = _campaign(request, pk)
    job = get_in_project_or_404(Job.objects.filter(project=campaign.project_id), request, pk=job_id,
                                kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk)
    if job.is_finished:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    if request.GET.get("updating"):
        return render(request, "scoring/partials/figures_updating.html",
                      {"job": job, "poll_url": reverse("campaign-report-status", args=[pk, job.pk])})
    return render(request, "scoring/partials/report_progress.html", {"campaign": campaign, "job": job})


def _attachment(request, pk: int, render):
    """A download made from the campaign's finished report for the query's options: ``render(campaign, result)``
    gives (content, content type, file name); a report still computing or failed is the page saying so
    (:func:`scoring.reports.pending.download_answer`)."""
    from django.http import HttpResponse

    from scoring.reports.figures import current_report_job, report_options
    from scoring.reports.pending import download_answer

    campaign = _campaign(request, pk)
    options = report_options(request.GET)
    job = current_report_job(campaign, request.user, options=options)
    if job.status != Job.Status.SUCCEEDED:
        query = f"ci={options['ci_method']}&correlation={options['correlation']}"
        return download_answer(request, job, page_url=f"{reverse('campaign-report', args=[pk])}?{query}")
    content, content_type, filename = render(campaign, job.result)
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@role_required(COORDINATOR, ANALYST)
def campaign_report_download(request, pk: int):
    """The report as one self-contained HTML file (tables, plots, methods)."""
    from django.template.loader import render_to_string
    from django.utils import timezone

    def render(campaign, result):
        html = render_to_string("scoring/report_standalone.html",
                                {"campaign": campaign, "report": result, "generated": timezone.now(),
                                 "css": inline_css()}, request=request)
        return html, "text/html; charset=utf-8", f"report-{campaign.pk}.html"

    return _attachment(request, pk, render)


@role_required(COORDINATOR, ANALYST)
def campaign_report_csv(request, pk: int):
    """The report's figures as CSV (the rows of ``manage.py agreement --format csv``), from the same cached job as
    the page, for the options in the query string."""
    from scoring.reports.agreement_csv import csv_text

    return _attachment(request, pk, lambda campaign, result: (csv_text(result), "text/csv; charset=utf-8",
                                                              f"agreement-{campaign.pk}.csv"))


def inline_css() -> str:
    from django.contrib.staticfiles import finders

    path = finders.find("css/app.css")
    return open(path, encoding="utf-8").read() if path else ""


EXPORT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "sav": "application/x-spss-sav",
}


@role_required(COORDINATOR, ANALYST)
def campaign_export(request, pk: int, fmt: str):
    """Every label of the campaign in the CSV long format (DESIGN.md section 5) as CSV, JSON, XLSX or SPSS.
    CSV, JSON and XLSX stream as they are written; SPSS is built in a temporary file first. ``?submitted=1`` keeps
    only the physicians' labels of submitted dialogues (what the reports count), ``?submitted=0`` every saved one
    with its status; the default is submitted only for analysts, everything for coordinators."""
    import os
    import tempfile

    from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse

    from scoring.reports import exports
    from scoring.reports.figures import names_allowed

    if fmt not in EXPORT_TYPES:
        raise Http404("Unknown export format.")
    campaign = _campaign(request, pk)
    choice = request.GET.get("submitted", "")
    if choice not in ("", "0", "1"):
        return HttpResponse("submitted is 1 (submitted dialogues only) or 0 (every saved answer, with its status).",
                            status=400, content_type="text/plain; charset=utf-8")
    submitted_only = exports.submitted_only_default(choice, coordinator=request_has_role(request, COORDINATOR))
    rows = exports.label_rows(campaign.corpus, campaign, names=names_allowed(request.user, campaign),
                              submitted_only=submitted_only)
    filename = f"labels-{campaign.pk}.{fmt}"
    if fmt == "csv":
        response = StreamingHttpResponse(exports.csv_stream(rows), content_type=EXPORT_TYPES[fmt])
    elif fmt == "json":
        response = StreamingHttpResponse((chunk.encode() for chunk in exports.json_stream(rows)),
                                         content_type=EXPORT_TYPES[fmt])
    elif fmt == "xlsx":
        if not exports.fits_in_a_sheet(campaign.corpus, campaign):
            return HttpResponse(str(exports.too_many_for_xlsx()), status=409, content_type="text/plain; charset=utf-8")
        response = StreamingHttpResponse(exports.xlsx_stream(rows), content_type=EXPORT_TYPES[fmt])
    else:
        handle = tempfile.NamedTemporaryFile(suffix=f".{fmt}", delete=False)  # noqa: SIM115 - FileResponse closes
        handle.close()
        try:
            exports.write_sav(rows, handle.name)
            data = open(handle.name, "rb")  # noqa: SIM115 - FileResponse closes it
        finally:
            os.unlink(handle.name)  # the open handle keeps the data readable on POSIX
        response = FileResponse(data, content_type=EXPORT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
