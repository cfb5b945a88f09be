"""Django settings, derived entirely from the declarative config (xworkmate.config).

Nothing here is meant to be edited per deployment: change xworkmate.toml or
the environment instead. A broken config raises ConfigError at import, so no
process (web, worker, beat, CLI) starts half-configured.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xworkmate import __version__
from xworkmate.config.kernel import ADMIN, SERVICE, request_body_limit
from xworkmate.datahome import ensure_home, stored_secret
from xworkmate.filebroker import use_whole_file_messages
from xworkmate.lib.dburl import database_settings
from xworkmate.wiring import load_config

# The package folder: templates and the catalogue are package data, so an installed
# wheel carries them as the checkout does (issue 20).
PACKAGE_DIR = Path(__file__).resolve().parent

XWORKMATE = load_config()
HOME = XWORKMATE.home
ensure_home(HOME)
# prometheus_client reads this when it is first imported: every process of the
# service (web workers, worker, beat, commands) loads these settings before,
# so the request counters of all web workers land in one folder (D-K26).
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(HOME / "metrics")
(HOME / "metrics").mkdir(parents=True, exist_ok=True)

SECRET_KEY = SERVICE.of(XWORKMATE).secret_key or stored_secret(HOME, "django_secret_key")
DEBUG = bool(SERVICE.of(XWORKMATE).debug)
ALLOWED_HOSTS = list(SERVICE.of(XWORKMATE).allowed_hosts)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Admin sign-in throttling (D-K14): the failed sign-ins it counts are tables of its own.
    "axes",
    "xworkmate",
    # The outbox is part of the kernel, with tables of its own.
    "xworkmate.delivery",
    # The apps, in the order their gateway methods are registered (§1.4).
    "gateway",
    "artifacts",
    "plans",
    "longrun",
]

MIDDLEWARE = [
    # Outermost, so every answer is counted (D-K26) and every log line of the
    # request carries its id (D-K27).
    "xworkmate.metrics.RequestMetricsMiddleware",
    "xworkmate.logs.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the body or answers: chunked bodies, request strings.
    "xworkmate.api_input.ApiInputMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "xworkmate.middleware.UserLanguageMiddleware",
    # A view that meets a database outage answers 503 + Retry-After (D-K22).
    "xworkmate.api_errors.DatabaseOutageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a refused admin sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "xworkmate.urls"
WSGI_APPLICATION = "xworkmate.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Each app carries its own admin templates (<app>/templates/admin/<app>/).
        # The kernel's folder is also searched first: django.contrib.admin comes
        # before xworkmate in INSTALLED_APPS, and the kernel's admin/base_site.html
        # (the shared stylesheet and icon) must win over the admin's own.
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": database_settings(XWORKMATE.database_url)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Admin sign-in throttling (D-K14) ----------------------------------------
# django-axes refuses a sign-in before any password is checked once one
# username has failed login_failure_limit times from one address within
# login_cooloff. Only authenticate() calls reach it, and only the admin's login
# form makes them: API keys are checked by xworkmate.auth, never counted.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = ADMIN.of(XWORKMATE).login_failure_limit
AXES_COOLOFF_TIME = ADMIN.of(XWORKMATE).login_cooloff
AXES_ONLY_ADMIN_SITE = True
AXES_CLIENT_IP_CALLABLE = "xworkmate.admin_login.client_ip"
AXES_LOCKOUT_CALLABLE = "xworkmate.admin_login.lockout_response"
# A lock lasts login_cooloff from the failure that set it, as the lockout page
# says; tries during the lock are neither counted nor stored, so hammering a
# locked sign-in neither extends it nor grows its record.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# A successful sign-in forgets that pair's earlier typos.
AXES_RESET_ON_SUCCESS = True
# Only failures are kept (and they expire); a row per successful sign-in would
# grow without bound, and nothing shows it (the lockouts have no admin page:
# `manage.py xworkmate unlock` lifts them).
AXES_DISABLE_ACCESS_LOG = True
AXES_ENABLE_ADMIN = False
# No start-up banner: every command would print it to stderr. Its warnings
# (failures, lockouts) are logged as usual, username and address masked.
AXES_VERBOSE = False

LANGUAGE_CODE = SERVICE.of(XWORKMATE).language_code
LANGUAGES = [("zh-hans", "简体中文"), ("en", "English")]
LOCALE_PATHS = [PACKAGE_DIR / "locale"]
TIME_ZONE = SERVICE.of(XWORKMATE).time_zone
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = HOME / "static"
# Serve admin assets straight from the installed packages: no collectstatic
# step is needed for the one-command run, and production may still run it.
WHITENOISE_USE_FINDERS = True

LOGIN_URL = "admin:login"

# Every API body is read and limited by xworkmate.parsers (gateway.max_body_bytes);
# this bound covers the admin forms.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(2621440, request_body_limit(XWORKMATE))

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["xworkmate.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["xworkmate.auth.DenyAll"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["xworkmate.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "xworkmate.api_errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "xworkmate API",
    "DESCRIPTION": (
        "Gateway methods for the XWorkmate bridge, artifacts, plans and long-run mode. "
        "Authenticate with `Authorization: Bearer <api key>`. Every request body is a UTF-8 "
        "JSON object of at most `gateway.max_body_bytes`, nested at most 128 levels, with "
        "finite numbers within the range of a 64-bit float; no string of a body (keys "
        "included) or of a query may contain NUL or a lone surrogate. Anything else is "
        "refused with 400 INVALID_REQUEST naming the field. Gateway answers are "
        '`{"ok": true, "payload": ...}` or `{"ok": false, "error": {"code", "message"}}`, '
        'other endpoints answer errors as `{"error": {"code", "message"}}`.'
    ),
    "VERSION": __version__,
    "SERVE_INCLUDE_SCHEMA": False,
    # A request body is required exactly where `{}` would be refused (xworkmate.openapi).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "xworkmate.openapi.postprocess_schema",
    ],
    "SERVE_PERMISSIONS": ["xworkmate.auth.ApiKeyOrStaff"],
    "SERVE_AUTHENTICATION": [
        "xworkmate.auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Serve Swagger UI from the installed package: the docs page must work
    # on machines without internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -----------------------------------------------------------------
BROKER_SOCKET_TIMEOUT = 5.0
# Seconds between the file broker's looks at an empty (or held-back) queue (D-K20).
FILE_BROKER_POLLING_INTERVAL = 0.1
CELERY_BROKER_URL = XWORKMATE.broker_url
if CELERY_BROKER_URL.startswith("filesystem://"):
    # Each message whole or not at all: kombu's own file transport lets a worker
    # read a message half written and die (D-K20).
    use_whole_file_messages()
    _folder = XWORKMATE.broker_folder
    for _sub in ("queue", "processed", "control"):
        (_folder / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
        "data_folder_in": str(_folder / "queue"),
        "data_folder_out": str(_folder / "queue"),
        "processed_folder": str(_folder / "processed"),
        "control_folder": str(_folder / "control"),
        "store_processed": False,
        # kombu's default (1 s) is also its pause whenever the worker holds its
        # prefetch: the worker then takes about two tasks a second and the
        # periodic jobs wait behind the queue. A listdir every 0.1 s is cheap.
        "polling_interval": FILE_BROKER_POLLING_INTERVAL,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        # A Redis that hangs instead of refusing must not hang whoever talks to it:
        # every socket operation gives up after BROKER_SOCKET_TIMEOUT (D-K23).
        CELERY_BROKER_TRANSPORT_OPTIONS |= {
            "socket_timeout": BROKER_SOCKET_TIMEOUT,
            "socket_connect_timeout": BROKER_SOCKET_TIMEOUT,
        }
# Connecting to any broker is bounded too (seconds).
CELERY_BROKER_CONNECTION_TIMEOUT = BROKER_SOCKET_TIMEOUT
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
# Results are kept only for the file operations a workspace's host answers (D-K31):
# in the broker's Redis, or as AMQP replies; the embedded file broker has no hosts.
CELERY_RESULT_BACKEND = (
    CELERY_BROKER_URL
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else "rpc://"
    if CELERY_BROKER_URL.startswith(("amqp://", "pyamqp://"))
    else None
)
CELERY_RESULT_EXPIRES = 3600
CELERY_REDIS_SOCKET_TIMEOUT = BROKER_SOCKET_TIMEOUT
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = BROKER_SOCKET_TIMEOUT
CELERY_TIMEZONE = TIME_ZONE
CELERY_ENABLE_UTC = True
# Early acknowledgement unless a task says it is safe to run twice (D-K6).
CELERY_TASK_ACKS_LATE = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fix-up closes every database connection around each task
# unless this is set; with it, xworkmate.celery recycles them per task the way
# Django does per request (CONN_MAX_AGE, CONN_HEALTH_CHECKS). A new PostgreSQL
# connection per task was half of what one outbox send cost (bench/delivery.py).
CELERY_DB_REUSE_MAX = 10**9
# The schedule is built from the configured periodic jobs when beat starts: the
# apps declare their default jobs in ready(), after this module has loaded.
CELERY_BEAT_SCHEDULER = "xworkmate.periodic:ConfiguredScheduler"
CELERY_BEAT_SCHEDULE_FILENAME = str(HOME / "celerybeat-schedule")
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery points sys.stdout and sys.stderr at its `celery.redirected` logger in
# the worker and in beat (beat reads the worker's setting). Django configures
# LOGGING after that, when the fix-up sets Django up, so the console handler's
# stream was that logger: each line came out again as `WARNING celery.redirected`.
# Nothing of the service prints; the handlers write to the real stderr (D-K27).
CELERY_WORKER_REDIRECT_STDOUTS = False

# Text by default; `service.log_format = "json"` writes one object a line with the
# request id, session, run and task bound (xworkmate.logs, D-K27).
_LOG_FORMATTER = "json" if SERVICE.of(XWORKMATE).log_format == "json" else "plain"
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "xworkmate.logs.ContextFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "xworkmate.logs.JsonFormatter"},
    },
    "handlers": {
        # The real stderr, whatever a process did to sys.stderr (see above).
        "console": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.__stderr__",
            "formatter": _LOG_FORMATTER,
            "filters": ["context"],
        },
        "file": {
            "class": "logging.handlers.WatchedFileHandler",
            "filename": str(HOME / "logs" / "xworkmate.log"),
            "formatter": _LOG_FORMATTER,
            "filters": ["context"],
        },
    },
    "root": {"handlers": ["console", "file"], "level": "INFO"},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # Its INFO lines narrate each failed sign-in; the failures and lockouts are warnings.
        "axes": {"level": "WARNING"},
    },
}
