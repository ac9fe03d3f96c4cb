"""Coordinator pages for LLM judges: configurations, runs with live progress, judge-vs-physician reports."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from annotation.models import Campaign, ScaleVersion
from core.jobs.models import Job
from core.site.params import whole_number
from projects.access import current, get_in_project_or_404, role_required
from projects.models import AuditEvent
from projects.roles import ANALYST, COORDINATOR
from scoring.judges import prompts
from scoring.judges import runs as judging
from scoring.judges.forms import JudgeConfigForm, JudgeRunForm, JuryForm, VerdictSettingsForm
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Jury
from scoring.llm import budget, engine, gateway
from scoring.llm.endpoints import endpoint_help
from scoring.llm.forms import SpendCapsForm


@role_required(COORDINATOR, ANALYST)
def judge_list(request, jury_form: JuryForm | None = None, status: int = 200):
    """Judges, runs and juries; the jury form for coordinators (``jury_form``: one returned with its problems)."""
    project = current(request)
    return render(request, "scoring/judge_list.html", {
        "configs": JudgeConfig.objects.select_related("prompt_set", "endpoint"),
        "runs": JudgeRun.objects.select_related("config", "corpus")[:50],
        "juries": Jury.objects.alive().select_related("corpus").prefetch_related("members"),
        "jury_form": jury_form or JuryForm(),
        "endpoint_help": endpoint_help(project),
        "llm_spend": budget.summary(project.pk),
    }, status=status)


def _runs(request):
    """The request's project's judge runs: another project's run answers 404, as a missing one."""
    return JudgeRun.objects.select_related("config", "corpus")


def _source(request, pk: int, jury: bool):
    """The run, or with ``jury`` the live jury, ``pk`` of the request's project (404 otherwise)."""
    if jury:
        return get_in_project_or_404(Jury.objects.alive().select_related("corpus"), request, pk=pk)
    return get_in_project_or_404(_runs(request), request, pk=pk)


def report_urls(source, campaign_pk: int | None = None, query: str = "") -> dict[str, str]:
    """The links of a report page: back to the run or jury, the downloads, the progress poll (``status`` takes the
    job id at the end)."""
    from scoring.judges.sources import is_jury

    prefix = "jury" if is_jury(source) else "judge-run"
    tail = f"?campaign={campaign_pk}&{query}" if campaign_pk else ""
    return {"back": reverse("jury-detail" if is_jury(source) else "judge-run", args=[source.pk]),
            "back_text": (_("Jury %(name)s") % {"name": source.name} if is_jury(source)
                          else _("Run #%(pk)s") % {"pk": source.pk}),
            "html": reverse(f"{prefix}-report-download", args=[source.pk, "html"]) + tail,
            "json": reverse(f"{prefix}-report-download", args=[source.pk, "json"]) + tail,
            "report": reverse(f"{prefix}-report", args=[source.pk]),
            "status": reverse(f"{prefix}-report-status", args=[source.pk, 0])[:-2]}


@require_POST
@role_required(COORDINATOR)
def fake_endpoint_grant(request):
    """A coordinator's click: the built-in fake endpoint (synthetic answers, loopback only, no key) granted to the
    project, so a new project tries judges, preference judging and generation without an administrator. Audited."""
    from scoring.judges.demo import fake_endpoint

    project = current(request)
    endpoint = fake_endpoint(project)
    AuditEvent.record(request.user, "llm.endpoint.grant_fake", project=project, endpoint=endpoint.name)
    messages.success(request, _("The built-in fake endpoint (synthetic answers, never study data) is now granted to "
                                "this project: choose it in a judge's settings."))
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("judge-list")
    return redirect(target)


@role_required(COORDINATOR)
def judge_config_edit(request, pk: int | None = None):
    project = current(request)
    config = get_in_project_or_404(JudgeConfig.objects, request, pk=pk) if pk else None
    if config is None and request.method == "GET":
        version = ScaleVersion.objects.filter(scale__slug="llm-mini-cex", status="published").order_by(
            "-number").first()
        # every published instrument can be judged: its default prompt set in this project
        prompts.ensure_default_prompt_sets(request.user, project=project)
        initial = ({"prompt_set": judging.default_prompt_set(version, request.user, project=project).pk}
                   if version else {})
        form = JudgeConfigForm(initial=initial, project=project)
    else:
        form = JudgeConfigForm(request.POST or None, instance=config, project=project)
    if request.method == "POST" and form.is_valid():
        saved = form.save(commit=False)
        if config is None:
            saved.created_by = request.user
            saved.project = project
        saved.save()
        messages.success(request, _("Judge %(name)s saved.") % {"name": saved.name})
        return redirect("judge-list")
    return render(request, "scoring/judge_form.html", {"form": form, "config": config,
                                                        "endpoint_help": endpoint_help(project)})


@role_required(COORDINATOR)
def judge_run_new(request):
    """Two steps: the first submit shows what the run would send (calls, tokens, estimated cost) before anything is
    sent; the second starts it."""
    project = current(request)
    form = JudgeRunForm(request.POST or None, initial={"config": request.GET.get("config"),
                                                       "corpus": request.GET.get("corpus")}, project=project)
    estimate = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        scope = {"item_codes": form.item_codes(), "filter_split": data["filter_split"],
                 "filter_model": data["filter_model"].strip(), "filter_language": data["filter_language"].strip(),
                 "batch": data["batch"]}
        try:
            if not data["confirmed"]:
                estimate = judging.estimate(data["config"], data["corpus"], **scope)
                form = JudgeRunForm(initial={**{k: v for k, v in data.items() if k not in ("config", "corpus")},
                                             "config": data["config"].pk, "corpus": data["corpus"].pk,
                                             "confirmed": True}, project=project)
            else:
                run = judging.create_run(data["config"], data["corpus"], user=request.user, **scope,
                                         cost_cap=data["cost_cap"], token_cap=data["token_cap"])
        except (gateway.NotConfigured, judging.RunError) as exc:
            form.add_error(None, str(exc))
        else:
            if data["confirmed"]:
                units = judging.start(run, request.user)
                messages.success(request, ngettext("Run #%(pk)d started: %(n)d unit to judge.",
                                                  "Run #%(pk)d started: %(n)d units to judge.", units)
                                 % {"pk": run.pk, "n": units})
                return redirect("judge-run", pk=run.pk)
    return render(request, "scoring/judge_run_new.html", {"form": form, "estimate": estimate,
                                                           "endpoint_help": endpoint_help(project)})


def _run_context(run: JudgeRun) -> dict:
    problems = (JudgeResult.objects.filter(run=run, status__in=[JudgeResult.Status.FAILED,
                                                                 JudgeResult.Status.UNSCORED])
                .select_related("dialogue", "item").order_by("status", "dialogue__external_id")[:200])
    from annotation.models import ScaleVersion
    from scoring.judges.sources import scale_version_id
    from scoring.reports.wording import words_for

    target = (ScaleVersion.objects.filter(pk=scale_version_id(run)).values_list("scale__target", flat=True)
              .first() or "dialogue")
    return {"run": run, "progress": judging.progress(run), "problems": problems,
            "campaigns": Campaign.objects.alive().filter(corpus=run.corpus),
            "partners": mode_partners(run) if run.is_finished else [], "words": words_for(target)}


@role_required(COORDINATOR, ANALYST)
def judge_run(request, pk: int):
    from scoring.judges.figures import stored_judge_scores
    from scoring.reports.wording import words_for

    run = get_in_project_or_404(_runs(request), request, pk=pk)
    context = _run_context(run)
    if run.is_finished:
        context["scores"] = stored_judge_scores(run)
    context["words"] = words_for(run.corpus.kind)
    return render(request, "scoring/judge_run.html", context)


@role_required(COORDINATOR, ANALYST)
def judge_run_progress(request, pk: int):
    """htmx partial, polled while the run is active."""
    run = get_in_project_or_404(_runs(request), request, pk=pk)
    return render(request, "scoring/partials/judge_progress.html", _run_context(run))


@require_POST
@role_required(COORDINATOR)
def judge_run_action(request, pk: int):
    run = get_in_project_or_404(_runs(request), request, pk=pk)
    action = request.POST.get("action")
    try:
        if action == "pause":
            judging.set_status(run, JudgeRun.Status.PAUSED, request.user)
        elif action == "cancel":
            judging.set_status(run, JudgeRun.Status.CANCELLED, request.user)
        elif action == "resume":
            judging.start(run, request.user)
        elif action == "retry":
            count = judging.retry_failed(run, request.user)
            messages.success(request, ngettext("%(n)d failed or unscored answer will be asked again.",
                                              "%(n)d failed or unscored answers will be asked again.", count)
                             % {"n": count})
        elif action == "caps":
            caps = SpendCapsForm(request.POST)
            if not caps.is_valid():
                raise judging.RunError(caps.problem())
            engine.set_caps(judging.HANDLER, run, **caps.caps(), user=request.user, action="judge_run")
            messages.success(request, _("Spending caps saved. Resume the run to go on.") if run.status ==
                             JudgeRun.Status.PAUSED else _("Spending caps saved."))
        else:
            raise judging.RunError(_("Unknown action."))
    except judging.RunError as exc:
        messages.error(request, str(exc))
    return redirect("judge-run", pk=pk)


def _report_request(request, pk: int, jury: bool = False):
    """(run or jury, campaign, form) of a report page or download; raises ValueError for a run and campaign that
    cannot be compared (another corpus or scale version). Both belong to the request's project (404 otherwise)."""
    from scoring.judges.report import check_comparable

    run = _source(request, pk, jury)
    campaign = get_in_project_or_404(Campaign.objects.alive()
                                 .select_related("corpus", "scale_version"), request,
                                 pk=whole_number(request.GET, "campaign"), corpus=run.corpus)
    check_comparable(run, campaign)
    return run, campaign, VerdictSettingsForm.from_query(request.GET)


@role_required(COORDINATOR, ANALYST)
def judge_run_report(request, pk: int, jury: bool = False):
    """Judge versus physicians (the paper's Table 5 layout, verdicts) for a campaign on the same corpus; the verdict
    settings come from the query string (the form on the page). Computed by a worker when the labels or the judge's
    answers change and stored (:mod:`scoring.judges.figures`): the latest stored report shows at once, marked
    "updating" while a newer one is computed; progress only when there is none yet."""
    from scoring.judges.figures import report_figures
    from scoring.reports.wording import words_for

    try:
        run, campaign, form = _report_request(request, pk, jury)
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("jury-detail" if jury else "judge-run", pk=pk)
    context = {"run": run, "campaign": campaign, "form": form, "report": None, "job": None, "query": ""}
    if form.is_valid():
        context["query"] = form.query()
        if request.method == "POST":  # "Try again" after a failure
            report_figures(run, campaign, request.user, form.settings(), retry=True)
            return redirect(f"{report_urls(run)['report']}?campaign={campaign.pk}&{context['query']}")
        found = report_figures(run, campaign, request.user, form.settings())
        context.update(job=found.job, figures=found, report=found.report)
        if found.pending is not None:
            context["poll_url"] = f"{report_urls(run)['status']}{found.pending.pk}/"
    words = (context["report"] or {}).get("words") or words_for(campaign.scale_version.scale.target)
    context.update(words=words, form=form.in_words(words), urls=report_urls(run, campaign.pk, context["query"]))
    return render(request, "scoring/judge_report.html", context)


@role_required(COORDINATOR, ANALYST)
def judge_run_report_status(request, pk: int, job_id: int, jury: bool = False):
    """htmx poll: the progress of a report job, or a full-page refresh once it is ready."""
    from django.http import Http404, HttpResponse

    from scoring.judges.figures import report_job, run_param

    run = _source(request, pk, jury)
    try:
        job = report_job(job_id, run_param(run))
    except Job.DoesNotExist as exc:
        raise Http404("No such report.") from exc
    if job.is_finished:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    if request.GET.get("updating"):
        return render(request, "scoring/partials/figures_updating.html",
                      {"job": job, "poll_url": f"{report_urls(run)['status']}{job.pk}/"})
    return render(request, "scoring/partials/judge_report_progress.html", {"run": run, "job": job,
                                                                          "urls": report_urls(run)})


@role_required(COORDINATOR, ANALYST)
def judge_run_report_download(request, pk: int, fmt: str, jury: bool = False):
    """The judge report as JSON or as one self-contained HTML file, with the same settings as the page (the stored
    report; the page saying it is being prepared while a worker computes it)."""
    import json

    from django.http import Http404, HttpResponse
    from django.template.loader import render_to_string
    from django.utils import timezone

    from scoring.judges.figures import current_report_job
    from scoring.reports.views import inline_css

    if fmt not in ("json", "html"):
        raise Http404("Unknown format.")
    try:
        run, campaign, form = _report_request(request, pk, jury)
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    if not form.is_valid():
        errors = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
        return HttpResponse(f"Invalid settings: {errors}", status=400, content_type="text/plain; charset=utf-8")
    job = current_report_job(run, campaign, request.user, form.settings())
    if job.status != Job.Status.SUCCEEDED:
        from scoring.reports.pending import download_answer

        page = reverse("jury-report" if jury else "judge-run-report", args=[pk])
        return download_answer(request, job, page_url=f"{page}?{request.GET.urlencode()}")
    report = job.result
    filename = f"judge-report-{'jury' if jury else 'run'}{run.pk}-campaign{campaign.pk}.{fmt}"
    if fmt == "json":
        response = HttpResponse(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False),
                                content_type="application/json")
    else:
        html = render_to_string("scoring/judge_report_standalone.html", {
            "run": run, "campaign": campaign, "report": report, "generated": timezone.now(), "css": inline_css()},
            request=request)
        response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@role_required(COORDINATOR, ANALYST)
@require_http_methods(["GET", "POST"])
def judge_run_compare(request, pk: int, other: int, jury: bool = False):
    """Two runs that differ only in mode (per-item vs per-dialogue), side by side against physicians; with ``jury``
    a jury beside a run (one of its members, or any run of its instrument). Computed by a worker when a run
    finishes or the labels change and stored (:mod:`scoring.judges.comparison_figures`): the latest stored comparison
    shows at once, marked "updating" while a newer one is computed; "computing" only when there is none yet."""
    from scoring.judges.comparison_figures import compare_figures
    from scoring.judges.report import check_comparable, check_modes

    run_a = _source(request, pk, jury)
    run_b = get_in_project_or_404(_runs(request), request, pk=other)
    campaign = get_in_project_or_404(Campaign.objects.alive(), request,
                                     pk=whole_number(request.GET, "campaign"), corpus=run_a.corpus)
    try:
        check_comparable(run_a, campaign)
        check_comparable(run_b, campaign)
        check_modes(run_a, run_b)
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("jury-detail" if jury else "judge-run", pk=pk)
    found = compare_figures(run_a, run_b, campaign, request.user, retry=request.method == "POST")
    if request.method == "POST":  # "Try again" after a failure
        return redirect(request.get_full_path())
    poll = reverse("figures-status", args=[found.pending.pk]) if found.pending else ""
    return render(request, "scoring/judge_compare.html", {"run_a": run_a, "run_b": run_b, "campaign": campaign,
                                                           "report": found.report, "figures": found,
                                                           "job": found.job, "poll_url": poll})


def mode_partners(run: JudgeRun) -> list[JudgeRun]:
    """The runs the run's page offers to compare it with (:func:`scoring.judges.comparison_figures.partners`)."""
    from scoring.judges.comparison_figures import partners

    return partners(run)


@role_required(COORDINATOR, ANALYST)
def judge_planner(request):
    """htmx partial: physician-labelled dialogues needed for a chosen interval half-width, from a pilot (a judge
    run and the labels so far). For a campaign (``target``) or a corpus and scale version (a campaign being
    created); ``run``, ``pilot``, ``scope`` and ``half_width`` choose the pilot and the plan. The plan is stored
    figures (:mod:`scoring.judges.planner_figures`): shown at once, the partial polling itself while a worker
    computes a newer one."""
    from annotation.models import Corpus
    from scoring.judges import planner_figures
    from scoring.judges.planner import PlannerError, check_half_width, choices, default_version

    def param_int(name: str) -> int | None:
        raw = request.GET.get(name, "").strip()
        return int(raw) if raw.isdigit() and len(raw) < 19 else None

    target = (Campaign.objects.alive().filter(pk=param_int("target")).first()
              if param_int("target") else None)
    corpus = (target.corpus if target else
              Corpus.objects.alive().filter(pk=param_int("corpus")).first())
    version = (target.scale_version if target else
               ScaleVersion.objects.filter(pk=param_int("scale_version"), status="published").first())
    if version is None and corpus is not None and not request.GET.get("scale_version"):
        version = default_version(corpus)
    context: dict = {"error": None, "ready": False, "query_target": target.pk if target else None,
                     "figures": None, "poll_url": ""}
    raw_half = request.GET.get("half_width", "").strip()
    half_width = None
    if raw_half:
        try:
            half_width = float(raw_half)
            check_half_width(half_width)
        except PlannerError as exc:
            context["error"] = str(exc)
        except ValueError:
            context["error"] = gettext("The half-width must be a number; got %(value)s.") % {"value": repr(raw_half)}
    if corpus is None or version is None:
        context["reason"] = gettext("Choose a corpus and a published scale version to plan a random sample.")
    elif context["error"] is None:
        chosen = choices(corpus=corpus, version=version, target=target, run_id=param_int("run"),
                         pilot_id=param_int("pilot"))
        context.update(chosen)
        if chosen["reason"] is None:
            found = planner_figures.plan_figures(chosen, request.user, scope=request.GET.get("scope") or None,
                                              half_width=half_width)
            context.update(found.report or {}, figures=found, half_width=(found.report or {}).get("half_width"),
                           poll_url=request.get_full_path() if found.pending else "", stored=found.report or {})
    return render(request, "scoring/partials/judge_planner.html", context)
