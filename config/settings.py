"""Settings for Mini-CEX Workbench.

Everything comes from environment variables with safe defaults. Two run modes:

* embedded (no DATABASE_URL / CELERY_BROKER_URL): SQLite and kombu's filesystem transport under
  ``var/``, DEBUG on, a secret key generated once and kept in ``var/secret_key``;
* production (DEBUG=0, the default as soon as DATABASE_URL or CELERY_BROKER_URL is set):
  PostgreSQL and Redis, SECRET_KEY required.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from csp.constants import NONE, SELF

from config.errors import ConfigError

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("MINICEX_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean: use 1/0, true/false, yes/no or on/off.")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number.") from None


DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip()
EMBEDDED = not DATABASE_URL and not CELERY_BROKER_URL
DEBUG = env_bool("DEBUG", default=EMBEDDED)


def _secret_key() -> str:
    key = os.environ.get("SECRET_KEY", "").strip()
    if key:
        return key
    if not DEBUG:
        raise ConfigError(
            "SECRET_KEY is not set. In production mode (DEBUG off) set SECRET_KEY to a long random string, "
            "e.g. SECRET_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(50))')."
        )
    # Development: keep one generated key so sessions survive restarts.
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "projects",
    "core",
    "annotation",
    "scoring",
    "delphi",
    "studies",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "config.middleware.PrivateResponsesMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.failures.RejectUnstorableText",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The page's language: Django's LocaleMiddleware, after the user is known, as it reads the account's preference
    # first (config/language.py). No URL carries a language prefix, so it need not come before CommonMiddleware.
    "config.language.LanguageMiddleware",
    # request.project and its scope: the project a page works in (projects/access.py; the API's authentication
    # does the same).
    "projects.access.ProjectMiddleware",
    # The app's own 404 page, also with DEBUG on (config/failures.py).
    "config.failures.AppNotFound",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Turns a login lockout (core/site/throttle.py) into a 429 page or JSON answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "projects.context_processors.roles",
                "config.manual.help_link",
            ],
        },
    },
]


# The web server and the worker write concurrently: WAL and immediate transactions avoid
# "database is locked" under that load.
SQLITE_OPTIONS = {
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
}


def _database() -> dict:
    if not DATABASE_URL:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": SQLITE_OPTIONS,
            # A file, not memory, so a worker process started by the tests sees the test database.
            "TEST": {"NAME": VAR_DIR / "test.sqlite3"},
        }
    try:
        config = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
    except Exception as exc:  # dj_database_url raises ValueError/KeyError for unknown schemes
        raise ConfigError(
            f"DATABASE_URL is not a valid database URL ({exc}); expected e.g. "
            "postgres://USER:PASSWORD@HOST:5432/NAME"
        ) from None
    if not config.get("ENGINE") or not config.get("NAME"):
        raise ConfigError("DATABASE_URL names no database; expected e.g. postgres://USER@HOST:5432/NAME")
    config["CONN_HEALTH_CHECKS"] = True
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {**SQLITE_OPTIONS, **config.get("OPTIONS", {})}
    if config["ENGINE"] == "django.db.backends.postgresql":
        config.setdefault("OPTIONS", {})["connect_timeout"] = env_int("DB_CONNECT_TIMEOUT", 5)
    return config


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _cache() -> dict:
    url = os.environ.get("CACHE_URL", "").strip()
    if not url:
        return {"BACKEND": "config.cache.FileCache", "LOCATION": str(VAR_DIR / "cache")}
    scheme = urlsplit(url).scheme
    if scheme in {"redis", "rediss"}:
        return {"BACKEND": "config.cache.RedisCache", "LOCATION": url}
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    raise ConfigError(f"CACHE_URL={url!r}: use redis://HOST:6379/1 or locmem://")


CACHES = {"default": _cache()}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Login throttling (django-axes, core/site/throttle.py): failed logins on the login page, the admin and
# /api/auth/token/ are counted per (username, client address), per username and per address, each with its own
# limit; reaching one pauses logging in for LOGIN_LOCKOUT_SECONDS after the last failure.
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 5)
LOGIN_MAX_FAILURES_PER_USERNAME = env_int("LOGIN_MAX_FAILURES_PER_USERNAME", 20)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 200)
LOGIN_LOCKOUT_SECONDS = env_int("LOGIN_LOCKOUT_SECONDS", 15 * 60)
# How many reverse proxies in front of the app append to X-Forwarded-For. 0 (the default): the client address is
# REMOTE_ADDR and X-Forwarded-For is ignored (anyone can send one). N: the client address is the N-th entry from
# the right of X-Forwarded-For, the one the outermost trusted proxy saw.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
AXES_HANDLER = "core.site.throttle.LoginThrottle"
AXES_FAILURE_LIMIT = LOGIN_MAX_FAILURES
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username", "ip_address"]
AXES_COOLOFF_TIME = "core.site.throttle.cool_off"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "core.site.throttle.lockout_response"
AXES_ENABLE_ADMIN = False  # counts live in the cache, not in axes' tables
AXES_CLIENT_IP_CALLABLE = "core.site.throttle.client_address"

# The languages of the pages (docs/translators.md says how to add one). What a person sees: the language set in their
# account menu, else the one their browser asks for (Accept-Language), else LANGUAGE_CODE (config/language.py).
# Catalogues: each app's Python strings in <app>/locale/, the site's templates, config/ and static/js in locale/.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]


def _language_code() -> str:
    raw = os.environ.get("LANGUAGE_CODE", "").strip().lower()
    if not raw:
        return "en"
    codes = [code for code, _ in LANGUAGES]
    if raw not in codes:
        raise ConfigError(f"LANGUAGE_CODE={raw!r} is not one of this instance's languages: {', '.join(codes)}.")
    return raw


LANGUAGE_CODE = _language_code()
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# The site's icons are also served at the root, where browsers and phones ask for them (/favicon.ico,
# /apple-touch-icon.png) whatever the page links.
WHITENOISE_ROOT = BASE_DIR / "static" / "icons"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
MEDIA_URL = "media/"

# Sessions are stored in the database and read through the cache: every click on the rating page needs the
# session, and the cache spares the database that read (a cache flush only costs a database read).
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
# axes first: it refuses a paused login before the password is checked.
AUTHENTICATION_BACKENDS = ["core.site.throttle.LoginThrottleBackend", "core.site.auth.CachedUserBackend"]
# How long the signed-in user's row may be served from the cache (saves and deletes evict it; 0 turns it off).
USER_CACHE_SECONDS = env_int("USER_CACHE_SECONDS", 60)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"
# The language chosen before signing in (the login page's menu) or last chosen in the account menu, for a year.
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"


def _proxy_ssl_header() -> tuple[str, str] | None:
    """SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto: the TLS-terminating proxy says the request came over https, so
    links the app builds (e-mailed panel links among them) start with https:// and secure cookies work. Only set
    it when the proxy always sets (or strips) that header: otherwise a client could claim https."""
    raw = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
    if not raw:
        return None
    name, _, value = raw.partition("=")
    if not re.fullmatch(r"[A-Za-z0-9-]+", name.strip()):
        raise ConfigError(f"SECURE_PROXY_SSL_HEADER={raw!r}: give a header name, e.g. X-Forwarded-Proto "
                          "(or X-Forwarded-Proto=https).")
    return "HTTP_" + name.strip().upper().replace("-", "_"), (value.strip() or "https")


SECURE_PROXY_SSL_HEADER = _proxy_ssl_header()
# Served over HTTPS (SECURE_COOKIES=1): plain http is redirected and browsers are told to use https only (HSTS).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=SESSION_COOKIE_SECURE)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000 if SESSION_COOKIE_SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=SESSION_COOKIE_SECURE)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=SESSION_COOKIE_SECURE)
if SECURE_SSL_REDIRECT and not SECURE_PROXY_SSL_HEADER and "SECURE_SSL_REDIRECT" not in os.environ:
    raise ConfigError(
        "SECURE_COOKIES=1 redirects http to https; behind a TLS-terminating proxy that loops forever unless the app "
        "reads the proxy's header: set SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto (or SECURE_SSL_REDIRECT=0 when the "
        "proxy redirects, or =1 when gunicorn itself serves TLS).")
# /healthz answers load balancers over plain http inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy (django-csp): scripts, styles, fonts and fetches only from this site, no inline code
# (templates and static/js use none; htmx is told not to add its own <style> or to eval), images from this
# site or data: URIs (Swagger UI's icons), nothing may frame the app.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Largest dialogue file accepted by the importer (browser and CLI).
DIALOGUE_IMPORT_MAX_BYTES = env_int("DIALOGUE_IMPORT_MAX_BYTES", 200 * 1024 * 1024)

# E-mail (Delphi panel links). Printed e-mail goes through config.mail.ConsoleBackend, which redacts panel links:
# the embedded mode's default, and what "console" or Django's own console backend mean. In production mode
# `python -m config.run` refuses to start unless EMAIL_BACKEND is set (EMAIL_BACKEND_SET).
EMAIL_BACKEND_SET = bool(os.environ.get("EMAIL_BACKEND", "").strip())
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "").strip() or "config.mail.ConsoleBackend"
if EMAIL_BACKEND in {"console", "django.core.mail.backends.console.EmailBackend"}:
    EMAIL_BACKEND = "config.mail.ConsoleBackend"
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost").strip()
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", default=False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "minicex@localhost")
# How long an invitation to a project (projects/invitations.py) can be accepted.
INVITATION_DAYS = env_int("INVITATION_DAYS", 14)

# LLM endpoint used when a judge configuration names none (OpenAI, Azure, vLLM, Ollama...).
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "").strip()
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "").strip()
# Environment variables an LLM key may be read from, besides OPENAI_API_KEY and names starting with LLM_KEY_
# (scoring/llm/keys.py). Any other name is refused, so nobody can have SECRET_KEY or DATABASE_URL sent to an endpoint.
LLM_KEY_VARIABLES = [v.strip() for v in os.environ.get("LLM_KEY_VARIABLES", "").split(",") if v.strip()]
_SERVER_SECRETS = {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "LIMITER_URL",
                   "CELERY_RESULT_BACKEND", "EMAIL_HOST_PASSWORD"}
if _SERVER_SECRETS & set(LLM_KEY_VARIABLES):
    raise ConfigError(f"LLM_KEY_VARIABLES lists {', '.join(sorted(_SERVER_SECRETS & set(LLM_KEY_VARIABLES)))}: the "
                      "server's own secrets can never hold an LLM key (they would be sent to the endpoint).")

# API tokens expire this many days after they are made (projects/tokens.py); a password change replaces them.
API_TOKEN_DAYS = env_int("API_TOKEN_DAYS", 30)
REST_FRAMEWORK = {
    # The token first: its scheme is the WWW-Authenticate header of a 401, so a missing, bad or expired token is
    # a 401 (with the session first it would be a 403, session authentication having no header to offer).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "projects.access.ProjectTokenAuthentication",
        "projects.access.ProjectSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON is read by the one reader of pages and API (core/site/jsonbody.py): depth and number limits, 400 not 500.
    "DEFAULT_PARSER_CLASSES": ["config.parsers.SafeJSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "DEFAULT_SCHEMA_CLASS": "config.api_contract.ContractSchema",
    "DEFAULT_PAGINATION_CLASS": "core.site.pagination.Pagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "annotation.api.exception_handler",
    # Not a throttle: the API's input checks, which DRF runs right after authentication and permissions.
    "DEFAULT_THROTTLE_CLASSES": ["config.api_checks.RequestChecks"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Mini-CEX Workbench API",
    "DESCRIPTION": "Scales, corpora, annotation, LLM judges and agreement statistics for the LLM-specific Mini-CEX.",
    "VERSION": "2.0.0",  # config.api_contract.VERSION sets it (docs/api.md: the changelog)
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "config.api_contract.document_errors"],
    "SERVE_INCLUDE_SCHEMA": False,
    # request bodies have components of their own (CampaignRequest): a generated client builds them without the
    # read-only fields of the answer
    "COMPONENT_SPLIT_REQUEST": True,
    # bodies are documented as JSON (forms are read too, undocumented): one body type per operation for clients
    "PARSER_WHITELIST": ["config.parsers.SafeJSONParser"],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Several models have a "status" field; name the scale versions' enum (otherwise "Status860Enum" and a
    # warning from `manage.py check --deploy`).
    "ENUM_NAME_OVERRIDES": {"ScaleVersionStatusEnum": "annotation.models.ScaleVersion.Status",
                            "RatedTargetEnum": "annotation.models.Scale.Target",
                            "PreferenceStudyKindEnum": "scoring.preference.models.PreferenceStudy.Kind",
                            "LLMJobStatusEnum": "scoring.llm.models.EngineJob.Status",
                            "InstrumentLanguageEnum": "annotation.models.Language"},
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery. The embedded default is kombu's filesystem transport: a real broker in files under var/,
# with fanout support so worker pings (health checks) work; no server needed.
BROKER_DIR = VAR_DIR / "broker"
if CELERY_BROKER_URL:
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
else:
    # kombu's filesystem transport, but a message file appears only once it is complete (config/broker.py, which
    # config/celery.py imports so that every process knows the scheme).
    CELERY_BROKER_URL = "minicexfs://localhost//"  # a host named: kombu warns "No hostname was supplied" otherwise
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(BROKER_DIR / "control"),
        # An idle worker looks at the folder this often (kombu's default is every second): a judge run's first
        # request, a report job or a health check waits for it. A listing of a small folder, ten times a second.
        "polling_interval": float(os.environ.get("CELERY_POLLING_INTERVAL", "0.1")),
    }
# Queue of the LLM calls (judge runs, preference judging, dialogue generation): I/O-bound, consumed by a
# threads-pool worker.
# Reports are computed when their inputs change, once the changes stop for this long (core/jobs/figures.py).
FIGURES_DEBOUNCE_SECONDS = float(os.environ.get("FIGURES_DEBOUNCE_SECONDS", "3"))
CELERY_LLM_QUEUE = os.environ.get("CELERY_LLM_QUEUE", "minicex-llm")
CELERY_TASK_ROUTES = {name: {"queue": CELERY_LLM_QUEUE} for name in ("scoring.llm.wake", "scoring.llm.poll_batch")}
# The LLM engine (scoring/llm/engine.py): requests in flight per worker process, units claimed per round trip, the
# heartbeat of each engine and when a silent engine counts as gone (its claims and slots are then freed), how often
# provider batches are polled, and how often the reconciler in every worker looks for work nobody does.
LLM_MAX_IN_FLIGHT = env_int("LLM_MAX_IN_FLIGHT", 1024)
LLM_CLAIM_BATCH = env_int("LLM_CLAIM_BATCH", 256)
LLM_HEARTBEAT_SECONDS = env_int("LLM_HEARTBEAT_SECONDS", 1)
# Dead after this many heartbeats missed in a row (its claims free, its units taken up by any live engine within
# seconds); LLM_WORKER_DEAD_AFTER sets the silence in seconds directly.
LLM_WORKER_MISSED_BEATS = env_int("LLM_WORKER_MISSED_BEATS", 5)
LLM_WORKER_DEAD_AFTER = env_int("LLM_WORKER_DEAD_AFTER", LLM_HEARTBEAT_SECONDS * LLM_WORKER_MISSED_BEATS)
LLM_ANSWER_JOURNAL = env_bool("LLM_ANSWER_JOURNAL", True)  # answers journaled until stored (var/llm-journal)
LLM_BATCH_POLL_SECONDS = env_int("LLM_BATCH_POLL_SECONDS", 60)
# The LLM request cache is per project: another project's identical request is sent (and paid) again, so no project
# learns what another has judged. An administrator of an instance whose projects trust each other may share it.
LLM_CACHE_SHARED = env_bool("LLM_CACHE_SHARED", False)
RECONCILE_SECONDS = env_int("RECONCILE_SECONDS", 5)
# Shared concurrency / rate limits for LLM calls: Redis when set (or when the broker is Redis), else file locks.
LIMITER_URL = os.environ.get("LIMITER_URL", "").strip()
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "").strip() or None
CELERY_TASK_IGNORE_RESULT = CELERY_RESULT_BACKEND is None  # results live in the domain tables
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660)
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "minicex")
# Remote control (the health check's ping of the workers) is broadcast on this exchange: instances that share a
# Redis broker with queues of their own keep their pings apart with names of their own.
CELERY_CONTROL_EXCHANGE = os.environ.get("CELERY_CONTROL_EXCHANGE", "").strip() or "celery"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_SEND_TASK_EVENTS = False
# The worker's timer thread: the longest sleep a warm shutdown waits for (Celery's default is 1 s), and a timer
# whose stop does not wait out its idle second (config.celery.PromptTimer).
CELERY_WORKER_TIMER_PRECISION = 0.25
CELERY_WORKER_TIMER = "config.celery:PromptTimer"
# Celery's Django fixup closes the database connection around every task unless this is set: a new PostgreSQL
# connection per task costs more CPU than a short LLM task itself. config/celery.py applies CONN_MAX_AGE and the
# health checks instead (close_old_connections), as Django does around a request.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 1000)
CELERY_TIMEZONE = TIME_ZONE

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # Personal Delphi panel links hold a token: never written to the log (config/logredact.py).
    "filters": {"redact_tokens": {"()": "config.logredact.RedactTokens"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact_tokens"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django's own loggers go through the filtered handler only (its default handlers would print unfiltered).
    "loggers": {"django": {"handlers": ["console"], "level": "INFO", "propagate": False},
                "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
                "django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}, "httpx": {"level": "WARNING"},
                "httpx2": {"level": "WARNING"}, "openai": {"level": "WARNING"}},
}


