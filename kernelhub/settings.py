"""KernelHub settings: every knob from the environment, with embedded defaults.

With no variable set the app runs on the embedded default: SQLite and Chroma under
KERNELHUB_DATA_DIR (default `var/`), the in-memory channel layer and a local executor.
Set DATABASE_URL, REDIS_URL and CHROMA_URL for the distributed mode.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from exc


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def _default_data_dir() -> str:
    # pytest-django loads settings before any conftest runs: a test run without an explicit
    # data dir gets a fresh temporary one, so tests never write into a developer's var/.
    if "pytest" in sys.modules:
        import tempfile

        return tempfile.mkdtemp(prefix="kernelhub-test-")
    return str(BASE_DIR / "var")


def _data_dir() -> Path:
    path = Path(env_str("KERNELHUB_DATA_DIR") or _default_data_dir()).resolve()
    # Parallel test workers (pytest-xdist) inherit one data dir from the controller: each
    # takes a folder of its own in it (SQLite, Chroma, media), once, even in subprocesses
    # that import pytest with the worker's environment.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker and "pytest" in sys.modules and path.name != worker:
        path = path / worker
    return path


KERNELHUB_DATA_DIR = _data_dir()
KERNELHUB_DATA_DIR.mkdir(parents=True, exist_ok=True)

# Debug pages only when asked (DEBUG=1): `make run` serves plain error pages by default.
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "testserver"}
# Served beyond this machine: HTTPS-only cookies, HSTS and the SSL redirect (below), and a
# SECRET_KEY that the operator sets. Loopback only (`make run`): plain HTTP works.
KERNELHUB_HTTPS = env_bool("KERNELHUB_HTTPS", not DEBUG and not set(ALLOWED_HOSTS) <= LOCAL_HOSTS)


def _secret_key_from_data_dir() -> str:
    """The embedded default's key: generated once into the data directory, then reused, so
    sessions survive a restart and no key ships in the code."""
    path = KERNELHUB_DATA_DIR / "secret_key"
    if not path.exists():
        import secrets
        import tempfile

        # Written whole, then linked into place: a second process starting at the same
        # moment either wins the link or reads the winner's complete key.
        fd, temporary = tempfile.mkstemp(dir=KERNELHUB_DATA_DIR, prefix=".secret_key.")
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
    return path.read_text().strip()


SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if KERNELHUB_HTTPS:
        raise ImproperlyConfigured("SECRET_KEY must be set when KernelHub is served beyond "
                                   "this machine (ALLOWED_HOSTS names other hosts)")
    SECRET_KEY = _secret_key_from_data_dir()
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "kernelhub.teams",
    "kernelhub.optimization",
    "kernelhub.review",
    "kernelhub.api",
    "knowledge",
    "axes",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Pages and JSON compressed (Django's BREACH mitigation pads each gzip stream);
    # static files come precompressed from WhiteNoise and pass through untouched.
    "django.middleware.gzip.GZipMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "kernelhub.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "kernelhub.context_processors.kernelhub",
            ],
        },
    },
]
WSGI_APPLICATION = "kernelhub.wsgi.application"
ASGI_APPLICATION = "kernelhub.asgi.application"

# --- database: SQLite under the data dir unless DATABASE_URL names PostgreSQL -------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": KERNELHUB_DATA_DIR / "kernelhub.sqlite3",
            # Threads of the embedded runner write while requests read.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE",
                        "init_command": "PRAGMA journal_mode=WAL;"},
            # Tests get a file like the embedded default, not Django's shared-cache in-memory
            # database: there a background thread's write fails at once with "table is
            # locked" instead of waiting (the busy timeout does not cover shared-cache locks).
            "TEST": {"NAME": str(KERNELHUB_DATA_DIR / "test-kernelhub.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- events: in-memory channel layer unless REDIS_URL is set --------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- work: a thread + subprocesses by default; Celery on Redis in the distributed mode ------
KERNELHUB_EXECUTOR = env_str("KERNELHUB_EXECUTOR", "celery" if REDIS_URL else "local")
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = "search"  # kernelhub/queues.py: SEARCH_QUEUE
KERNELHUB_DEFAULT_TARGET = env_str("KERNELHUB_DEFAULT_TARGET", "auto")
# Embedded default: the targets this server evaluates on ("" = probe: the interpreter and this
# host's GPU). A session on another target waits for a worker instead of failing every candidate.
KERNELHUB_LOCAL_TARGETS = env_str("KERNELHUB_LOCAL_TARGETS")
KERNELHUB_EVAL_TIMEOUT_S = env_float("KERNELHUB_EVAL_TIMEOUT_S", 180.0)
# The embedded server asks for the problems' coverage checks when it starts (kernelhub/asgi.py).
# A test process imports that module for its in-process clients: no background thread there
# (it would touch the test database and race pytest's collection; servers the tests start
# as subprocesses still do it).
KERNELHUB_COVERAGE_CHECKS_ON_START = env_bool("KERNELHUB_COVERAGE_CHECKS_ON_START",
                                              "pytest" not in sys.modules)
# Long GPU jobs: a message is acknowledged only after its task ran, and goes back to the queue
# when the process running it dies (kernelhub.placement's ledger stops a redelivery loop:
# at most KERNELHUB_EVAL_MAX_ATTEMPTS starts, then the candidate fails with the reason).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker whose slots are all busy takes no further message (it stays in Redis for an idle
# worker). The prefetch count alone does not hold across a broker restart: the reconnected
# channel starts with no unacknowledged message, so a busy worker would take one more
# ("Skipping prefetch count reduction"); this checks the worker's own reserved requests.
CELERY_WORKER_DISABLE_PREFETCH = True
# A fresh child process per task: each evaluation gets a clean CUDA context, and a kernel
# that corrupted one (an illegal memory access) cannot harm the next. The parent never
# imports torch.
# (Not named CELERY_*: the celery command reads those as its own options.) 0: never recycle.
CELERY_WORKER_MAX_TASKS_PER_CHILD = env_int("KERNELHUB_EVAL_TASKS_PER_CHILD", 1) or None
KERNELHUB_EVAL_MAX_ATTEMPTS = env_int("KERNELHUB_EVAL_MAX_ATTEMPTS", 3)
# One evaluation runs reference, trials, timing and profile, each bounded by the timeout.
KERNELHUB_EVAL_SOFT_LIMIT_S = env_float("KERNELHUB_EVAL_SOFT_LIMIT_S",
                                        KERNELHUB_EVAL_TIMEOUT_S * 4 + 60)
KERNELHUB_EVAL_HARD_LIMIT_S = KERNELHUB_EVAL_SOFT_LIMIT_S + 60
# One screening (issue 29) compiles and times a whole family (up to hundreds) in one worker.
KERNELHUB_SCREEN_SOFT_LIMIT_S = env_float("KERNELHUB_SCREEN_SOFT_LIMIT_S",
                                          max(KERNELHUB_EVAL_SOFT_LIMIT_S, 1800.0))
# A queued evaluation no worker took in this long is dropped by the broker (the ledger then
# fails it with that reason); a session's loop is owned by a lease renewed this often.
KERNELHUB_EVAL_QUEUE_EXPIRES_S = env_float("KERNELHUB_EVAL_QUEUE_EXPIRES_S", 6 * 3600.0)
KERNELHUB_JOB_STALE_S = env_float("KERNELHUB_JOB_STALE_S", 20.0)  # no heartbeat: lost
KERNELHUB_SESSION_LEASE_S = env_float("KERNELHUB_SESSION_LEASE_S", 20.0)
KERNELHUB_WORKER_BEAT_S = env_float("KERNELHUB_WORKER_BEAT_S", 2.0)
# Redis redelivers an unacknowledged message after this long: longer than the longest job.
# (Session loops may run longer; their lease, not the message, says who runs them.)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("KERNELHUB_VISIBILITY_TIMEOUT_S",
                                  int(max(2 * KERNELHUB_EVAL_HARD_LIMIT_S,
                                          2 * (KERNELHUB_SCREEN_SOFT_LIMIT_S + 60), 7200))),
    "socket_keepalive": True, "socket_connect_timeout": 5, "retry_on_timeout": True,
    "health_check_interval": 10,
}
# Survive a broker restart: retry the connection forever, at start and after a loss; keep
# running tasks going (they store their results in the database, not the broker).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 10, "interval_start": 0.5,
                                    "interval_step": 1.0, "interval_max": 5.0}
CELERY_REDIS_SOCKET_KEEPALIVE = True
CELERY_REDIS_RETRY_ON_TIMEOUT = True
CELERY_REDIS_BACKEND_HEALTH_CHECK_INTERVAL = 10
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"retry_policy": {"timeout": 10.0}}
CELERY_RESULT_EXPIRES = 24 * 3600
# A worker's main process reports its presence and reaps lost session loops.
CELERY_IMPORTS = ("kernelhub.optimization.worker",)

# --- vectors: Chroma on disk unless CHROMA_URL names a server --------------------------------
CHROMA_URL = env_str("CHROMA_URL")
# Longest request target (path + query) served; longer ones get 414 (kernelhub/http_limits.py).
KERNELHUB_MAX_URL_BYTES = env_int("KERNELHUB_MAX_URL_BYTES", 8 * 1024)
KB_MAX_UPLOAD_BYTES = env_int("KB_MAX_UPLOAD_BYTES", 50 * 1024 * 1024)
KB_MAX_PDF_PAGES = env_int("KB_MAX_PDF_PAGES", 2000)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- LLM: offline synthesizer unless an OpenAI-compatible endpoint is configured ------------
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
# One setting for the model(s): LLM_MODEL (aliases KERNELHUB_LLM_MODEL, OPENAI_MODEL, read in
# that order, as search_engine.synthesis.endpoints.MODEL_ENV_NAMES). Several, comma separated
# (each may be MODEL@BASE_URL), are spread by a bandit on yield per cost.
LLM_MODEL = (env_str("LLM_MODEL") or env_str("KERNELHUB_LLM_MODEL") or env_str("OPENAI_MODEL")
             or "gpt-4o-mini")
KERNELHUB_LLM_MODEL = LLM_MODEL.split(",")[0].split("@")[0].strip()  # alias: the first model
LLM_CONFIGURED = bool(OPENAI_BASE_URL or OPENAI_API_KEY)
# USD per million tokens, "model=in:out, other=in:out", over the table of known models in
# search_engine/synthesis/pricing.py. A session with a cost budget needs a price.
KERNELHUB_LLM_PRICES = env_str("KERNELHUB_LLM_PRICES")
KERNELHUB_LLM_TIMEOUT_S = env_float("KERNELHUB_LLM_TIMEOUT_S", 120.0)  # per request
KERNELHUB_LLM_RETRIES = env_int("KERNELHUB_LLM_RETRIES", 4)  # per request: timeouts, 429, 5xx
KERNELHUB_LLM_BACKOFF_S = env_float("KERNELHUB_LLM_BACKOFF_S", 1.0)  # first wait; doubles
KERNELHUB_LLM_CONTEXT_TOKENS = env_int("KERNELHUB_LLM_CONTEXT_TOKENS", 32_000)
KERNELHUB_LLM_MAX_ANSWER_CHARS = env_int("KERNELHUB_LLM_MAX_ANSWER_CHARS", 60_000)
# An endpoint outage pauses the session; it tries again after this long (doubling, to 300 s).
KERNELHUB_LLM_OUTAGE_RETRY_S = env_float("KERNELHUB_LLM_OUTAGE_RETRY_S", 30.0)

# --- auth ------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): after AXES_FAILURE_LIMIT failed logins from one username
# and IP, that pair is locked out for the cool-off. Axes' backend must come first.
AUTHENTICATION_BACKENDS = [
    "kernelhub.auth_backends.AxesLoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = _dt.timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"

# Plotly is served from static/vendor/plotly/: bundles of only the trace types the pages draw
# (tools/plotly_bundle builds them, pinned to the plotly.js the `plotly` package targets), not
# the package's full 4.8 MB plotly.min.js (issue 32).
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = KERNELHUB_DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
# Static files: WhiteNoise (in MIDDLEWARE, so it serves under Daphne through the ASGI app as
# well as under WSGI) with compressed (gzip + brotli), content-hashed copies written by
# `collectstatic`. Hashed names are cached for a year ("immutable"); kernelhub.staticfiles
# uses them whenever a manifest exists, DEBUG or not (see there).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "kernelhub.staticfiles.KernelHubStaticFilesStorage"},
}
WHITENOISE_MAX_AGE = env_int("WHITENOISE_MAX_AGE", 0 if DEBUG else 3600)  # unhashed names
MEDIA_ROOT = KERNELHUB_DATA_DIR / "media"
MEDIA_URL = "media/"

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KernelHub API",
    "VERSION": "1.0.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- production hardening: on whenever served beyond this machine (KERNELHUB_HTTPS) ---------
if KERNELHUB_HTTPS:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
