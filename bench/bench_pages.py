"""Benchmark: every page each role reaches from its home page, first view and repeat.

Targets: every page within 1 s on its first view once the workers are idle, and p95 within 300 ms.

What it does:
  1. Sets up its own database: embedded mode (default; SQLite and the filesystem broker under a var directory of
     its own, ``--var``) or, with ``--postgres``, PostgreSQL (DATABASE_URL, default
     postgres://postgres@127.0.0.1:5432/minicex_bench_pages) with Redis as broker and cache (CELERY_BROKER_URL,
     CACHE_URL). Migrates and loads the demo as ``make run`` does (``load_demo``, which computes the demo's reports).
  2. Builds a large study once (reused on later runs) in its own project "Bench pages (large study)": 2,680
     dialogues x 24 items x 10 raters (643,200 submitted labels), a finished judge run on it (64,320 answers: the
     physicians' majority with 15% drawn at random), a preference study of 500 comparisons (2 raters each,
     answered, locked and unblinded) and a Delphi study of 30 panellists x 3 rounds (two closed, the third
     answered), with a coordinator, an analyst and a physician of the project, and an administrator.
  3. Lets the workers finish: runs every queued background job (the figures the changes queued) and computes the
     large study's figures as they would be after the data arrived (the agreement and judge reports, the judge
     selection, the planner's default plan), so the crawl starts with idle workers.
  4. In a fresh process (imports cold, as a newly started server): logs in with Django's test client as each demo
     role (physician, coordinator, analyst, admin) and each role of the large study, opens the home page and every
     page reachable from it by following links within the app (GET only; at most ``--per-pattern`` URLs of each
     URL pattern per role; downloads, the API, the admin and the manual left out), each page twice more right
     after (repeat views). Server time is the time of the request through the whole Django stack. Pages reached
     without a link are opened too: the planner (an htmx part of the campaign page), the judge selection and the
     Django admin's change lists of labels and judge answers (the large study's administrator).
  5. Prints, per URL pattern, the first-view and repeat server times (p50, p95, max, in ms), every view of the
     URLconf that no crawl reached (so the list covers every view), and the pages that showed "computing"
     (figures computed on first view: should be none once the workers are idle).
  6. Times ``manage.py judge_report`` and ``manage.py agreement`` on the large study as processes (Django's start
     included), with their figures stored by the workers (``--commands-runs`` each, 0 to skip): wall and CPU time
     per process. ``--commands-only`` builds the study if it is missing and times the commands, without the crawl.

``--language zh-hans`` crawls with a browser asking for that language (``Accept-Language`` and the language cookie;
the accounts hold no choice of their own) and counts the pages that answered in another language.

Run:  .venv/bin/python bench/bench_pages.py [--postgres] [--per-pattern 3] [--rebuild] [--commands-runs 3]
      [--language en|zh-hans]
      [--commands-only]
Exit status 0 when the benchmark ran (targets met or not), 1 when it could not run.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PROJECT = "Bench pages (large study)"
N_DIALOGUES, N_RATERS = 2680, 10
N_COMPARISONS, N_PANELLISTS, N_ROUNDS = 500, 30, 3
TARGET_FIRST, TARGET_P95, TARGET_COMMAND = 1.0, 0.3, 3.0
JUDGE = "bench-pages judge"
SKIP = re.compile(r"^/(static|admin|api|help|media)/|/export|/download|\.(csv|xlsx|json|sav|html)$|/csv/|"
                  r"logout|/accounts/password|/healthz")
SEED = 34


def configure(args) -> None:
    os.environ.setdefault("SECRET_KEY", "bench-pages-not-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["ALLOWED_HOSTS"] = "testserver,127.0.0.1,localhost"
    if args.postgres:
        os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/minicex_bench_pages")
        os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/7")
        os.environ.setdefault("CACHE_URL", "redis://127.0.0.1:6379/8")
        os.environ.setdefault("EMAIL_BACKEND", "console")
    else:
        os.environ.pop("DATABASE_URL", None)
        os.environ.pop("CELERY_BROKER_URL", None)
        os.environ.pop("CACHE_URL", None)
        os.environ["MINICEX_VAR_DIR"] = args.var


def mode_name() -> str:
    if os.environ.get("DATABASE_URL"):
        return "production (PostgreSQL, Redis)"
    return "embedded (SQLite, filesystem broker)"


# --------------------------------------------------------------------------------------------------------------
# the data
# --------------------------------------------------------------------------------------------------------------
def prepare(rebuild: bool) -> None:
    if os.environ.get("DATABASE_URL"):
        from bench_export import ensure_database

        print(ensure_database(os.environ["DATABASE_URL"]))
    else:
        Path(os.environ["MINICEX_VAR_DIR"]).mkdir(parents=True, exist_ok=True)
    import django

    django.setup()
    from django.core.management import call_command

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    print(f"migrate: {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    call_command("load_demo", no_logins=True, stdout=open(os.devnull, "w"))  # noqa: SIM115 - the demo's output
    print(f"demo (with its reports, as `make run` loads it): {time.monotonic() - started:.1f} s")
    from projects import scoping
    from projects.models import Project
    from projects.services import create_project

    project = Project.objects.filter(name=PROJECT).first()
    if project is not None and rebuild:
        print("--rebuild: use a fresh database (drop it, or delete the var directory) instead")
        raise SystemExit(1)
    if project is None:
        project = create_project(PROJECT, description="Benchmark data (bench/bench_pages.py).")
    with scoping.in_project(project):
        build(project)  # what an interrupted earlier run left out
    if os.environ.get("DATABASE_URL"):
        from django.db import connection

        with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum gives a real study
            cursor.execute("ANALYZE")
    with scoping.in_project(project):
        idle_workers(project)
    from studies.figures import compute_now as methods_now

    started = time.monotonic()
    for each in Project.objects.all():  # each project's methods page, as a worker writes it after a first view
        with scoping.in_project(each):
            methods_now(each)
    print(f"methods pages stored: {time.monotonic() - started:.1f} s")


def build(project) -> None:
    from django.contrib.auth import get_user_model

    from projects.services import add_member

    User = get_user_model()
    users = {}
    for name, role in (("bench-coordinator", "coordinator"), ("bench-analyst", "analyst")):
        user = User.objects.filter(username=name).first() or User.objects.create_user(name, password=None)
        add_member(project, user, role)
        users[role] = user
    if not User.objects.filter(username="bench-admin").exists():
        User.objects.create_superuser("bench-admin", email=None, password=None)
    from annotation.models import Corpus
    from delphi.models import DelphiStudy
    from scoring.preference.models import PreferenceStudy

    started = time.monotonic()
    if not Corpus.objects.filter(name="bench-pages").exists():
        build_campaign(project)
        print(f"  campaign: {N_DIALOGUES:,} dialogues x 24 items x {N_RATERS} raters: "
              f"{time.monotonic() - started:.1f} s")
    from scoring.judges.models import JudgeRun

    started = time.monotonic()
    if not JudgeRun.objects.filter(config__name=JUDGE).exists():
        build_judge_run()
        print(f"  judge run of {N_DIALOGUES:,} dialogues x 24 items: {time.monotonic() - started:.1f} s")
    raters = list(User.objects.filter(username__startswith="bench-physician-").order_by("username"))
    started = time.monotonic()
    if not PreferenceStudy.objects.filter(name="bench-pages preference").exists():
        build_preference(users["coordinator"], raters[:2])
        print(f"  preference study of {N_COMPARISONS} comparisons: {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    if not DelphiStudy.objects.filter(title="bench-pages Delphi study").exists():
        build_delphi(users["coordinator"])
        print(f"  Delphi study of {N_PANELLISTS} panellists x {N_ROUNDS} rounds: {time.monotonic() - started:.1f} s")


def build_campaign(project) -> list:
    """The MedEval-sized campaign of bench/bench_export.py, written with bulk inserts (both databases)."""
    import random

    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from annotation.campaigns import create_campaign
    from annotation.models import Assignment, CampaignRater, Corpus, Dialogue, Label, ScaleVersion
    from projects.services import add_member

    rng = random.Random(SEED)
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    items = list(version.rating_items().order_by("order").values_list("pk", "response_type"))
    now = timezone.now()
    User = get_user_model()
    with transaction.atomic():
        corpus = Corpus.objects.create(name="bench-pages", description="Benchmark data (bench/bench_pages.py).")
        models = ["GPT-4", "Qwen-72B", "Baichuan2", "ChatGLM3"]
        Dialogue.objects.bulk_create([
            Dialogue(corpus=corpus, external_id=f"medeval-{n:05d}", self_report=f"Complaint {n}",
                     turns=[{"role": "patient", "text": f"Complaint {n}"}, {"role": "doctor", "text": "Since when?"}],
                     source_model=models[n % 4], language="en", split="test")
            for n in range(N_DIALOGUES)], batch_size=5000)
        dialogue_ids = list(Dialogue.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
        raters = []
        for n in range(1, N_RATERS + 1):
            user = User.objects.filter(username=f"bench-physician-{n:02d}").first() or User.objects.create_user(
                f"bench-physician-{n:02d}", password=None)
            add_member(project, user, "physician")
            raters.append(user)
        campaign = create_campaign(name="bench-pages", corpus=corpus, scale_version=version, overlap=N_RATERS)
        CampaignRater.objects.bulk_create([CampaignRater(campaign=campaign, user=u) for u in raters])
        assignments = Assignment.objects.bulk_create([
            Assignment(campaign=campaign, dialogue_id=d, rater=u, status=Assignment.Status.SUBMITTED, position=p,
                       created_at=now, started_at=now, submitted_at=now)
            for u in raters for p, d in enumerate(dialogue_ids, start=1)], batch_size=5000)
        batch = []
        for a in assignments:
            for item_id, kind in items:
                value = rng.randint(1, 3) if kind == "ordinal" else int(rng.random() < 0.7)
                batch.append(Label(assignment_id=a.pk, campaign_id=campaign.pk, dialogue_id=a.dialogue_id,
                                   rater_id=a.rater_id, item_id=item_id, value=value, created_at=now, updated_at=now))
            if len(batch) >= 20000:
                Label.objects.bulk_create(batch, batch_size=5000)
                batch = []
        Label.objects.bulk_create(batch, batch_size=5000)
    return raters


def build_judge_run() -> None:
    """A finished judge run on the large campaign's corpus: per dialogue and item the physicians' majority, 15% of
    the answers drawn at random (as bench/bench_judge_report.py), written with bulk inserts."""
    import numpy as np
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Campaign, Label, ScaleVersion
    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
    from scoring.judges.prompts import default_prompt_set
    from scoring.judges.runs import config_snapshot

    campaign = Campaign.objects.get(name="bench-pages")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    rng = np.random.default_rng(SEED)
    now = timezone.now()
    with transaction.atomic():
        config = JudgeConfig.objects.create(name=JUDGE, model="synthetic", prompt_set=default_prompt_set(version),
                                            base_url="http://synthetic.invalid/v1")
        run = JudgeRun.objects.create(config=config, corpus=campaign.corpus, snapshot=config_snapshot(config),
                                      status=JudgeRun.Status.SUCCEEDED, started_at=now, finished_at=now)
        rows = []
        for item in version.rating_items().order_by("order"):
            values = item.allowed_values()
            frame = np.asarray(Label.objects.filter(campaign=campaign, item=item).order_by()
                               .values_list("dialogue_id", "value"))
            dialogues = np.unique(frame[:, 0])
            counts = np.zeros((len(dialogues), max(values) + 1), dtype=int)
            np.add.at(counts, (np.searchsorted(dialogues, frame[:, 0]), frame[:, 1]), 1)
            answers = np.where(rng.random(len(dialogues)) < 0.15, rng.choice(values, len(dialogues)),
                               counts.argmax(axis=1))
            rows += [JudgeResult(run=run, dialogue_id=int(d), item=item, status=JudgeResult.Status.DONE,
                                 value=int(v), attempts=1, updated_at=now)
                     for d, v in zip(dialogues, answers, strict=True)]
        JudgeResult.objects.bulk_create(rows, batch_size=5000)


def build_preference(coordinator, raters) -> None:
    import random

    from scoring.preference import services as preference
    from scoring.preference.models import PreferenceTask

    rng = random.Random(SEED)
    sources = ["ZephyrMed-7B", "OrcaDoc-13B"]
    lines = [json.dumps({"item": f"q{i}", "prompt": f"Question {i}: I have had a cough for {i % 9 + 2} days.",
                         "source": source, "answer": f"Answer {i} of {k}: rest, fluids; see a doctor if worse."})
             for i in range(N_COMPARISONS) for k, source in enumerate(sources)]
    study = preference.create_study(name="bench-pages preference", kind="answer", criteria="response", overlap=2,
                                    seed=SEED, user=coordinator)
    preference.import_answers(study, lines, coordinator)
    for user in raters:
        preference.add_rater(study, user, added_by=coordinator)
    preference.open_study(study, coordinator)
    criteria = list(study.criteria.all())
    for task in PreferenceTask.objects.filter(study=study).select_related("rater"):
        for criterion in criteria:
            preference.save_answer(task, criterion.pk, rng.choice(["A", "B", "tie"]), task.rater)
        preference.submit_task(task, task.rater)
    preference.lock(study, coordinator)
    preference.unblind(study, coordinator, "benchmark")


def build_delphi(coordinator) -> None:
    from django.db import transaction

    from delphi import services

    # The study's own draft scale (3 dimensions x 8 items): the rounds' new versions are the project's own.
    lines = []
    for d in range(1, 4):
        lines.append(f"{d} Dimension {d}")
        lines += [f"{d}.{i} Item {d}.{i}: the doctor does something specific and observable" for i in range(1, 9)]
    with transaction.atomic():
        study = services.create_study(title="bench-pages Delphi study", user=coordinator,
                                      scale_name="bench-pages scale", item_lines="\n".join(lines),
                                      site_url="http://127.0.0.1:8000", reminder_days=0, planned_rounds=N_ROUNDS)
        _answer_rounds(study, coordinator)


def _answer_rounds(study, coordinator) -> None:
    import numpy as np

    from delphi import services

    services.invite(study, coordinator, text="\n".join(f"Expert {n} <expert{n:02d}@example.org>"
                                                       for n in range(1, N_PANELLISTS + 1)))
    rng = np.random.default_rng(SEED)
    for number in range(1, N_ROUNDS + 1):
        rnd = study.rounds.get(number=number)
        services.open_round(rnd, coordinator, notify=False)
        items = services.round_items(rnd)
        for part in rnd.participations.order_by("panelist__pseudonym"):
            for item in items:
                services.save_answer(part, item.pk, importance=int(np.clip(np.round(4.2 + rng.normal(0, 0.7)), 1, 5)))
            services.save_profile(part, {"familiarity": 4, "basis_practice": "high", "basis_theory": "medium",
                                         "basis_literature": "medium", "basis_intuition": "low"})
            services.complete(part)
        if number < N_ROUNDS:
            services.close_round(rnd, coordinator, "benchmark")


def idle_workers(project) -> None:
    """What the workers would have done by now: every queued job, and the large study's reports for its readers."""
    from django.contrib.auth import get_user_model

    from annotation.models import Campaign
    from core.jobs import services as jobs
    from core.jobs.models import Job
    from scoring.reports.figures import compute_now

    started = time.monotonic()
    ran = 0
    for job_id in Job.unscoped.filter(status=Job.Status.QUEUED).order_by("pk").values_list("pk", flat=True):
        params = Job.unscoped.get(pk=job_id).params
        if "not_before" in params:
            Job.unscoped.filter(pk=job_id).update(params={k: v for k, v in params.items() if k != "not_before"})
        jobs.execute(job_id)
        ran += 1
    users = get_user_model().objects.filter(username__in=["bench-coordinator", "bench-analyst"])
    for campaign in Campaign.objects.alive():
        for user in users:
            compute_now(campaign, user)
            compute_now(campaign, user, names=False)  # the agreement command's (pseudonyms)
    stored_judge_figures(users)
    print(f"workers idle: {ran} queued job(s) run, reports stored: {time.monotonic() - started:.1f} s")


def stored_judge_figures(users) -> None:
    """What the workers store for the large study's judge run: its reports (with and without names), the judge
    selection and the planner's default plan for each reader; every job they queue is run."""
    from annotation.models import Campaign
    from core.jobs import services as jobs
    from core.jobs.models import Job
    from scoring.judges import figures as judge_figures
    from scoring.judges import planner_figures, selection_figures
    from scoring.judges.models import JudgeRun
    from scoring.judges.planner import choices

    run = JudgeRun.objects.filter(config__name=JUDGE).first()
    if run is None:
        return
    campaign = Campaign.objects.get(name="bench-pages")
    for user in users:
        for names in (None, False):
            judge_figures.compute_now(run, campaign, user, names=names)
        selection_figures.compute_now(campaign, user)
        chosen = choices(corpus=campaign.corpus, version=campaign.scale_version, target=campaign)
        planner_figures.plan_figures(chosen, user)
    judge_figures.stored_judge_scores(run)  # the run page's own scores, as the report worker keeps them
    for job_id in Job.objects.filter(status=Job.Status.QUEUED).order_by("pk").values_list("pk", flat=True):
        jobs.execute(job_id)


# --------------------------------------------------------------------------------------------------------------
# the crawl (a fresh process)
# --------------------------------------------------------------------------------------------------------------
def crawl(per_pattern: int, max_pages: int, language: str = "en") -> dict:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import Resolver404, resolve

    User = get_user_model()
    browser = {"HTTP_ACCEPT_LANGUAGE": language}
    # A new server's first request loads the URLconf, the middleware and the templates' machinery; timed apart.
    t0 = time.perf_counter()
    Client(**browser).get("/accounts/login/")
    warmup = time.perf_counter() - t0
    print(f"  the server's first request (login page: URLconf, middleware, templates): {warmup * 1000:.0f} ms",
          flush=True)
    logins = [("demo physician", "physician"), ("demo coordinator", "coordinator"), ("demo analyst", "analyst"),
              ("demo admin", "admin"), ("large-study coordinator", "bench-coordinator"),
              ("large-study analyst", "bench-analyst"), ("large-study physician", "bench-physician-01"),
              ("large-study administrator", "bench-admin")]
    extra = unlinked_urls()
    rows: list[dict] = []
    for label, username in logins:
        user = User.objects.filter(username=username).first()
        if user is None:
            print(f"  no user {username}; skipped")
            continue
        client = Client(**browser)
        client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
        client.force_login(user)
        if username == "bench-admin":  # the Django admin's lists (the crawl of the app's pages skips /admin/)
            queue = extra["admin"]
        else:
            queue = ["/"] + (extra["pages"] if username.startswith("bench-") else [])
        seen, per = set(queue), {}
        started = time.monotonic()
        while queue and len([r for r in rows if r["role"] == label]) < max_pages:
            url = queue.pop(0)
            path = urlsplit(url).path
            try:
                match = resolve(path)
            except Resolver404:
                continue
            pattern = "/" + str(match.route)
            if per.get(pattern, 0) >= per_pattern and url not in extra["always"]:
                continue
            per[pattern] = per.get(pattern, 0) + 1
            t0 = time.perf_counter()
            response = client.get(url)
            first = time.perf_counter() - t0
            body = b"".join(response.streaming_content) if response.streaming else response.content
            repeats = []
            for _ in range(2):
                t0 = time.perf_counter()
                again = client.get(url)
                if again.streaming:
                    b"".join(again.streaming_content)
                repeats.append(time.perf_counter() - t0)
            text = body.decode("utf-8", "replace") if "html" in response.get("Content-Type", "") else ""
            rows.append({"role": label, "url": url, "pattern": pattern, "status": response.status_code,
                         "language": response.get("Content-Language", ""),
                         "first": first, "repeat": repeats,
                         "computing": 'data-testid="figures-computing"' in text or "Computing the report" in text
                         or response.status_code == 202,  # a download or API call whose figures were not stored
                         "updating": 'data-testid="figures-updating"' in text})
            links = re.findall(r'href="([^"#]+)', text)
            if response.status_code in (301, 302) and response.get("Location"):
                links.append(response["Location"])
            for link in links:
                target = urljoin(url, html.unescape(link))
                parts = urlsplit(target)
                if parts.netloc not in ("", "testserver") or SKIP.search(parts.path) or username == "bench-admin":
                    continue
                local = parts.path + (f"?{parts.query}" if parts.query else "")
                if local not in seen:
                    seen.add(local)
                    queue.append(local)
        print(f"  {label}: {len([r for r in rows if r['role'] == label])} pages in "
              f"{time.monotonic() - started:.1f} s", flush=True)
    return {"rows": rows, "warmup": warmup, "patterns": view_patterns(), "language": language}


def unlinked_urls() -> dict[str, list[str]]:
    """Pages of the large study no link reaches: the planner (loaded by htmx), the judge selection of the
    campaign, the admin's change lists of labels and judge answers (the first page, then filtered by the
    campaign and ordered by a column), and the downloads and API calls that serve stored figures (the reports, the
    methods documents, the preference results) or the preference answers' CSV. The label exports (every one of
    the 643,200 labels, streamed) are left out: their time is the export's (bench_export.py)."""
    from annotation.models import Campaign
    from scoring.judges.models import JudgeRun
    from scoring.preference.models import PreferenceStudy

    campaign = Campaign.unscoped.filter(name="bench-pages").first()
    if campaign is None:
        return {"pages": [], "admin": [], "always": set()}
    c = campaign.pk
    pages = [f"/judges/planner/?target={c}", f"/judges/selection/?campaign={c}",
             f"/api/campaigns/{c}/report/", f"/campaigns/{c}/report/download/", f"/campaigns/{c}/report/agreement.csv",
             "/archive/methods/methods.md", "/archive/methods/methods.docx", "/archive/methods/tripod-llm.md"]
    run = JudgeRun.unscoped.filter(config__name=JUDGE).first()
    if run is not None:
        pages += [f"/api/judge-runs/{run.pk}/report/?campaign={c}", f"/judges/runs/{run.pk}/report.json?campaign={c}"]
    study = PreferenceStudy.unscoped.filter(name="bench-pages preference").first()
    if study is not None:
        pages += [f"/api/preference-studies/{study.pk}/results/", f"/preference/{study.pk}/export.csv",
                  f"/api/preference-studies/{study.pk}/export/"]
    admin = ["/admin/annotation/label/", f"/admin/annotation/label/?campaign__id__exact={campaign.pk}",
             "/admin/scoring/judgeresult/", "/admin/scoring/judgeresult/?status__exact=done",
             "/admin/"]
    return {"pages": pages, "admin": admin, "always": set(pages + admin)}


def view_patterns() -> list[str]:
    """Every URL pattern of the URLconf (as the crawl names them), to list the views no crawl reached."""
    from django.urls import URLPattern, URLResolver, get_resolver

    def part(pattern) -> str:
        return str(pattern.pattern).removeprefix("^")  # as a resolved URL's route names a regular expression's part

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if str(pattern.pattern).startswith("admin/"):
                    continue  # the admin's own views: its change lists are opened above
                yield from walk(pattern.url_patterns, prefix + part(pattern))
            elif isinstance(pattern, URLPattern):
                yield "/" + prefix + part(pattern)

    return sorted(set(walk(get_resolver().url_patterns)))


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * p / 100
    low, high = int(k), min(int(k) + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (k - low)


def report(result: dict) -> None:
    rows = result["rows"]
    by_pattern: dict[str, list[dict]] = {}
    for row in rows:
        by_pattern.setdefault(row["pattern"], []).append(row)
    print(f"\n{'URL pattern':<58} {'n':>3}  {'first view p50/p95/max (ms)':>28}  {'repeat p50/p95/max (ms)':>24}")
    for pattern, group in sorted(by_pattern.items(), key=lambda kv: -max(r["first"] for r in kv[1])):
        first = [r["first"] * 1000 for r in group]
        repeat = [t * 1000 for r in group for t in r["repeat"]]
        print(f"{pattern[:58]:<58} {len(group):>3}  "
              f"{percentile(first, 50):8.0f} {percentile(first, 95):8.0f} {max(first):8.0f}  "
              f"{percentile(repeat, 50):7.0f} {percentile(repeat, 95):7.0f} {max(repeat):7.0f}")
    first = [r["first"] for r in rows]
    repeat = [t for r in rows for t in r["repeat"]]
    worst = max(rows, key=lambda r: r["first"])
    slow = [r for r in rows if r["first"] > TARGET_FIRST]
    errors = [r for r in rows if r["status"] >= 500]
    print(f"\npages: {len(rows)} ({len(by_pattern)} URL patterns, {len({r['role'] for r in rows})} roles); "
          f"server errors: {len(errors)}")
    print(f"first view: p50 {percentile(first, 50) * 1000:.0f} ms, p95 {percentile(first, 95) * 1000:.0f} ms, "
          f"max {max(first) * 1000:.0f} ms ({worst['role']}: {worst['url']})")
    print(f"repeat:     p50 {percentile(repeat, 50) * 1000:.0f} ms, p95 {percentile(repeat, 95) * 1000:.0f} ms, "
          f"max {max(repeat) * 1000:.0f} ms")
    for row in slow:
        print(f"  over {TARGET_FIRST:.0f} s on first view: {row['first']:.2f} s {row['role']}: {row['url']}")
    reached = set(by_pattern)
    unreached = [p for p in result.get("patterns", []) if p not in reached]
    print(f"views no crawl reached ({len(unreached)} of {len(result.get('patterns', []))} URL patterns: the API, "
          "downloads, POST-only actions and pages of objects the data hold none of):")
    for pattern in unreached:
        print(f"  {pattern}")
    computing = [r for r in rows if r["computing"]]
    print(f"pages that were computing figures on first view (downloads and API: 202): {len(computing)}"
          + "".join(f"\n  {r['role']}: {r['url']}" for r in computing))
    print(f"pages showing stored figures marked updating: {sum(r['updating'] for r in rows)}")
    language = result.get("language", "en")
    other = [r for r in rows if r.get("language") and r["language"] != language]
    print(f"language asked for: {language}; pages answered in another: {len(other)}"
          + "".join(f"\n  {r['role']}: {r['url']} ({r['language']})" for r in other[:10]))
    ok_first = not slow
    ok_p95 = percentile(first, 95) <= TARGET_P95
    print(f"TARGET every page <= {TARGET_FIRST:.0f} s on first view: {'PASS' if ok_first else 'FAIL'}; "
          f"p95 <= {TARGET_P95 * 1000:.0f} ms: {'PASS' if ok_p95 else 'FAIL'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", action="store_true", help="production mode: PostgreSQL and Redis")
    parser.add_argument("--var", default=str(Path(tempfile.gettempdir()) / "minicex-bench-pages"),
                        help="embedded mode: the var directory (database, broker); kept for later runs")
    parser.add_argument("--per-pattern", type=int, default=3, help="URLs of one pattern opened per role")
    parser.add_argument("--max-pages", type=int, default=250, help="pages per role at most")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--small", action="store_true", help="a small study (a smoke test of the script)")
    parser.add_argument("--commands-runs", type=int, default=3,
                        help="processes of judge_report and agreement timed (0: none)")
    parser.add_argument("--language", default="en", help="the language the browser asks for (en, zh-hans)")
    parser.add_argument("--commands-only", action="store_true",
                        help="only build the study (if missing) and time the commands, no crawl")
    parser.add_argument("--crawl", action="store_true", help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args(argv)
    if args.small:
        global N_DIALOGUES, N_COMPARISONS
        N_DIALOGUES, N_COMPARISONS = 40, 20
    configure(args)
    if args.crawl:
        print(json.dumps(crawl(args.per_pattern, args.max_pages, args.language)))
        return 0
    from machine import calibration_line

    print(calibration_line())
    print(f"mode: {mode_name()}; language: {args.language}")
    prepare(args.rebuild)
    if args.commands_only:
        time_commands(args.commands_runs or 3)
        return 0
    print("crawling in a fresh process (cold imports, as a newly started server)...", flush=True)
    child = subprocess.run([sys.executable, __file__, "--crawl", "--per-pattern", str(args.per_pattern),
                            "--max-pages", str(args.max_pages), "--language", args.language,
                            *(["--postgres"] if args.postgres else []),
                            "--var", args.var], capture_output=True, text=True, env=os.environ.copy())
    lines = child.stdout.strip().splitlines()
    for line in lines[:-1]:
        print(line)
    if child.returncode != 0 or not lines:
        print(child.stderr[-4000:])
        return 1
    report(json.loads(lines[-1]))
    if args.commands_runs:
        time_commands(args.commands_runs)
    return 0


def time_commands(runs: int) -> None:
    """``judge_report`` and ``agreement`` on the large study as a script runs them: a process each (Django's start
    and the imports included), their figures stored by the workers (step 3)."""
    from scoring.judges.models import JudgeRun

    run = JudgeRun.unscoped.filter(config__name=JUDGE).first()
    commands = [("agreement", ["agreement", "--corpus", "bench-pages", "--campaign", "bench-pages"])]
    if run is not None:
        commands.insert(0, ("judge_report", ["judge_report", "--corpus", "bench-pages", "--judge", str(run.pk)]))
    print(f"\ncommands on the large study (a process each, figures stored; {runs} runs):")
    import resource

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    for name, argv in commands:
        times, cpus = [], []
        for _ in range(runs):
            started, cpu = time.perf_counter(), children_cpu()
            done = subprocess.run([sys.executable, str(BASE_DIR / "manage.py"), *argv, "--project", PROJECT],
                                  capture_output=True, text=True, env=os.environ.copy())
            times.append(time.perf_counter() - started)
            cpus.append(children_cpu() - cpu)
            if done.returncode != 0:
                print(f"  {name}: failed: {done.stderr[-1000:]}")
                break
        # the CPU time (user + system) is the process's own work; the wall time adds the wait for a core on a
        # shared machine (compare with the load average printed below)
        print(f"  manage.py {name}: {', '.join(f'{t:.2f}' for t in times)} s (CPU "
              f"{', '.join(f'{c:.2f}' for c in cpus)} s; {len(done.stdout):,} characters); "
              f"TARGET <= {TARGET_COMMAND:.0f} s: {'PASS' if max(times) <= TARGET_COMMAND else 'FAIL'}")
    print(f"  load average: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
