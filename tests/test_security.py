"""What /healthz tells strangers, deployment headers (TLS behind a proxy, HSTS, CSP,
no-store on exports), panel-link tokens kept out of the logs, and the demo study's seed."""

import csv
import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import RequestFactory
from django.urls import reverse

from config.logredact import GunicornLogger, RedactTokens, redact
from delphi import services as delphi
from tests.test_delphi import make_study

BASE_DIR = Path(__file__).resolve().parent.parent
TEMPLATES = BASE_DIR / "templates"
# The downloaded report is a self-contained file opened from disk, where no policy applies.
STANDALONE = {"scoring/report_standalone.html", "scoring/judge_report_standalone.html",
              "scoring/judge_selection_standalone.html"}


# ------------------------------------------------------------------------------------------------- item 9
@pytest.mark.django_db
def test_healthz_tells_anonymous_callers_only_ok_or_not(client, monkeypatch, admin_user, physician):
    from config import views

    details = {"status": "ok", "database": {"ok": True, "name": "minicex_prod", "vendor": "postgresql"},
               "broker": {"ok": True, "url": "redis://redis-host:6379/0"},
               "workers": {"ok": True, "workers": ["llm@worker-3"], "count": 1}}
    monkeypatch.setattr(views, "health", lambda **_: (True, details))
    for who in (None, physician):
        if who:
            client.force_login(who)
        response = client.get("/healthz")
        assert response.status_code == 200 and response.json() == {"status": "ok"}
        assert "minicex_prod" not in response.content.decode() and "worker-3" not in response.content.decode()
    client.force_login(admin_user)
    assert client.get("/healthz").json()["workers"]["workers"] == ["llm@worker-3"]
    monkeypatch.setattr(views, "health", lambda **_: (False, {**details, "status": "degraded"}))
    client.logout()
    response = client.get("/healthz")
    assert response.status_code == 503 and response.json() == {"status": "degraded"}


@pytest.mark.django_db
def test_api_schema_and_docs_need_a_login(client):
    assert client.get("/api/schema/").status_code in (401, 403)
    assert client.get("/api/docs/").status_code == 302


# ------------------------------------------------------------------------------------------------ item 10
def test_every_page_gets_a_strict_content_security_policy(client, physician):
    client.force_login(physician)
    policy = client.get(reverse("home"))["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["default-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy


def test_templates_hold_no_inline_script_style_or_handler():
    """Everything the app runs comes from static/ (the policy allows nothing else)."""
    problems = []
    for path in TEMPLATES.rglob("*.html"):
        name = path.relative_to(TEMPLATES).as_posix()
        if name in STANDALONE:
            continue
        text = path.read_text()
        for pattern in (r"<script(?![^>]*\bsrc=)[^>]*>", r"<style", r"\sstyle=", r"\son[a-z]+=", r"javascript:",
                        r"hx-on", r"hx-trigger=\"[^\"]*\["):
            problems += [f"{name}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert problems == []


def test_report_plots_carry_no_inline_style():
    from scoring.reports.plots import csp_safe  # here: it imports matplotlib

    svg = ('<svg xmlns="http://www.w3.org/2000/svg"><defs><style type="text/css">*{stroke-linejoin: round; '
           'stroke-linecap: butt}</style></defs><path style="fill: #ffffff; stroke: #000000; stroke-width: 0.8"/>'
           "<text style=\"font-size: 9px; font-family: 'DejaVu Sans', sans-serif; text-anchor: end\">R0001</text>"
           "</svg>")
    safe = csp_safe(svg)
    assert "style" not in safe and 'stroke-linejoin="round"' in safe.split(">", 1)[0]
    assert '<path fill="#ffffff" stroke="#000000" stroke-width="0.8"/>' in safe
    assert "font-family=\"'DejaVu Sans', sans-serif\" text-anchor=\"end\">R0001</text>" in safe


def test_exports_are_not_cached(client, analyst, instrument):
    from annotation.models import Campaign, Corpus

    corpus = Corpus.objects.create(name="c")
    campaign = Campaign.objects.create(name="k", corpus=corpus, scale_version=instrument.versions.get(number=1))
    client.force_login(analyst)
    response = client.get(reverse("campaign-export", args=[campaign.pk, "csv"]))
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    assert "no-store" in response["Cache-Control"]
    assert list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))[0][0] == "dialogue_id"
    assert "no-store" not in client.get(reverse("home")).get("Cache-Control", "")


def test_tls_behind_a_proxy_makes_emailed_panel_links_https(instrument, coordinator, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    study = make_study(coordinator, n_panel=1)
    request = RequestFactory().get("/delphi/", HTTP_HOST="minicex.example.org", HTTP_X_FORWARDED_PROTO="https")
    settings.ALLOWED_HOSTS = ["minicex.example.org"]
    delphi.remember_site(study, request)
    panelist = study.panelists.get()
    assert delphi.panelist_url(panelist).startswith("https://minicex.example.org/delphi/p/")


def production_env(**env) -> dict:
    """This environment (database, broker, cache of the tests) without what the tests add or a deployment lacks."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("SECURE_")
               and k not in {"DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG"}}, **env}


def run_settings(code: str, **env) -> subprocess.CompletedProcess:
    clean = production_env()
    clean.update(env)
    return subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                           + code], cwd=BASE_DIR, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"},
                          capture_output=True, text=True, timeout=120)


PRODUCTION = {"DEBUG": "0", "ALLOWED_HOSTS": "minicex.example.org",
              "CSRF_TRUSTED_ORIGINS": "https://minicex.example.org", "SECURE_COOKIES": "1",
              "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto", "TRUSTED_PROXY_COUNT": "1",
              "SECRET_KEY": "b7Wq1Zr4-long-random-production-secret-key-for-the-check-0123456789"}


@pytest.mark.integration
def test_secure_cookies_turn_on_hsts_and_the_ssl_redirect():
    done = run_settings("print(settings.SECURE_SSL_REDIRECT, settings.SECURE_HSTS_SECONDS, "
                        "settings.SECURE_HSTS_INCLUDE_SUBDOMAINS, settings.SECURE_PROXY_SSL_HEADER)", **PRODUCTION)
    assert done.stdout.split("\n")[0] == "True 31536000 True ('HTTP_X_FORWARDED_PROTO', 'https')", done.stderr
    refused = run_settings("print(1)", **{**PRODUCTION, "SECURE_PROXY_SSL_HEADER": ""})
    assert refused.returncode != 0 and "SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto" in refused.stderr


@pytest.mark.integration
def test_check_deploy_with_the_readme_production_settings_prints_no_warning():
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=BASE_DIR,
                          env=production_env(**PRODUCTION), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout and "WARNING" not in done.stderr + done.stdout


def test_panel_pages_are_not_cached_and_send_their_address_to_no_other_site(client, instrument, coordinator):
    study = make_study(coordinator, n_panel=1)
    delphi.open_round(study.rounds.get(), coordinator)
    token = delphi.make_token(study.panelists.get())
    response = client.get(reverse("delphi:panel-home", args=[token]))
    assert response.status_code == 200
    assert response["Referrer-Policy"] == "same-origin" and "no-store" in response["Cache-Control"]


def test_panel_link_tokens_are_redacted_in_the_logs(caplog):
    token = "eyJwIjoxLCJ2IjoxLCJlIjoxfQ:1u2v3w:abcdefSIGNATURE"
    line = f"GET /delphi/p/{token}/12/items/3/ HTTP/1.1"
    assert redact(line) == "GET /delphi/p/[token]/12/items/3/ HTTP/1.1"
    # Django's own records (runserver's access log, django.request's "Not Found: ...")
    record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "Not Found: %s", (line,), None)
    assert RedactTokens().filter(record) and token not in record.getMessage()
    handler = next(h for h in logging.getLogger().handlers if any(isinstance(f, RedactTokens) for f in h.filters))
    assert handler in logging.getLogger("django.server").handlers
    # gunicorn's access log: request line, path and referer
    logger = GunicornLogger.__new__(GunicornLogger)

    class Response:
        status = "302 Found"
        headers = [("Location", f"/delphi/p/{token}/")]
        sent = 10
        response_length = 10

    class Request:
        headers = [("REFERER", f"https://minicex.example.org/delphi/p/{token}/")]

    environ = {"REQUEST_METHOD": "GET", "RAW_URI": f"/delphi/p/{token}/", "SERVER_PROTOCOL": "HTTP/1.1",
               "PATH_INFO": f"/delphi/p/{token}/", "QUERY_STRING": "", "REMOTE_ADDR": "10.0.0.1",
               "HTTP_REFERER": f"https://minicex.example.org/delphi/p/{token}/", "HTTP_USER_AGENT": "x"}
    from datetime import timedelta

    atoms = logger.atoms(Response(), Request(), environ, timedelta(seconds=0.01))
    assert token not in " ".join(str(v) for v in atoms.values())
    assert atoms["r"] == "GET /delphi/p/[token]/ HTTP/1.1"


# ------------------------------------------------------------------------------------------------ item 11
def test_the_demo_preference_study_seed_is_drawn_not_written_in_the_source(db, monkeypatch, demo_scope):
    from annotation.demo import load_demo
    from scoring.preference import services
    from scoring.preference.demo import load_preference_demo
    from scoring.preference.models import PreferenceStudy

    class Drawn:
        def randrange(self, start, stop):
            return 1234567

    monkeypatch.setattr(services.random, "SystemRandom", Drawn)
    load_demo()
    study = PreferenceStudy.objects.get(pk=load_preference_demo()["study"])
    assert study.seed == 1234567
    source = (BASE_DIR / "scoring/preference/demo.py").read_text()
    assert not re.search(r"seed\s*=\s*\d", source)
