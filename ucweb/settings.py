"""Settings: everything comes from the environment, with embedded defaults that need nothing
installed (SQLite, file:// storage under var/, no Redis)."""

import json
import os
import secrets
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("UCWEB_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_str(name: str, default: str | None = None) -> str | None:
    """The variable's text; `default` when it is unset or empty."""
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


# UCWEB_ENV=production: the server refuses to start without UCWEB_SECRET_KEY (no generated key).
UCWEB_ENV = os.environ.get("UCWEB_ENV", "development").strip().lower()


def _generated_secret_key(path: Path) -> str:
    """The key in `path`, created (mode 0600, random) by the first process that needs it. Every
    process of the server (web workers, Celery, manage.py) reads the same file; of two processes
    that start together, exactly one creates it (a hard link cannot replace an existing file)."""
    if not path.exists():
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(64) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process created it first: use that one
        finally:
            temporary.unlink(missing_ok=True)
    key = path.read_text().strip()
    if len(key) < 32:
        raise ImproperlyConfigured(f"{path} holds no usable key: set UCWEB_SECRET_KEY, or remove the file.")
    return key


# Keys that earlier versions shipped as defaults: public, so never a key (see
# catalog.services.secrets, which re-encrypts secrets that were stored under them).
PUBLISHED_SECRET_KEYS = ("ucweb-local-development-key-change-me", "change-me-in-production")

if os.environ.get("UCWEB_SECRET_KEY"):
    SECRET_KEY = os.environ["UCWEB_SECRET_KEY"]
    if SECRET_KEY in PUBLISHED_SECRET_KEYS:
        raise ImproperlyConfigured("UCWEB_SECRET_KEY is a published example value: set a random one.")
elif UCWEB_ENV == "production":
    raise ImproperlyConfigured(
        "UCWEB_ENV=production needs UCWEB_SECRET_KEY (a long random string; it signs sessions and, "
        "unless UCWEB_ENCRYPTION_KEY is set, encrypts stored credential secrets)."
    )
else:
    # Development (`make run`): a random key kept in the var directory, never a published one.
    SECRET_KEY = _generated_secret_key(VAR_DIR / "secret_key")
DEBUG = env_bool("UCWEB_DEBUG", False)
ALLOWED_HOSTS = os.environ.get("UCWEB_ALLOWED_HOSTS", "*").split(",")

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
    "django_celery_beat",
    "django_celery_results",
    "catalog",
    "commits",
    "maintenance",
]

MIDDLEWARE = [
    # First, so that the latency it records covers every other middleware (ucweb.metrics).
    "ucweb.middleware.request_metrics",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Sessions, CSRF, the signed-in user and messages, for the console's pages only: the API's
    # routes authenticate by token and skip them (ucweb.middleware.ConsoleOnly).
    "ucweb.middleware.ConsoleOnly",
    # No page of this server may be framed by another site (the console's forms change grants and
    # admins): X-Frame-Options for older browsers, CSP frame-ancestors for the rest.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "ucweb.middleware.no_framing",
]
X_FRAME_OPTIONS = "DENY"
# The admin's checks look for its middleware in MIDDLEWARE itself; ConsoleOnly runs it for the
# console's pages (tests/test_wsgi_application.py).
SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410"]

ROOT_URLCONF = "ucweb.urls"
APPEND_SLASH = False

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
                "ucweb.auth.console_sign_in",
            ],
        },
    },
]

WSGI_APPLICATION = "ucweb.wsgi.application"

# The ASGI application (ucweb.asgi) loads these settings while it is itself being imported. It keeps
# a bounded number of request threads (ucweb.asgi.Lanes); past the bound a request's thread ends
# with it, so a connection kept open past the request would never be used again, and without the
# pool (UCWEB_DB_POOL_SIZE=0) such requests would leave one behind each until the garbage collector
# found it: there, connections close with their request unless UCWEB_DB_CONN_MAX_AGE says otherwise. The other processes (WSGI, Celery, management
# commands) keep their threads, and their connections for a minute.
SERVING_ASGI = "ucweb.asgi" in sys.modules
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'ucweb.sqlite3'}",
        conn_max_age=env_int("UCWEB_DB_CONN_MAX_AGE", 0 if SERVING_ASGI else 60),
    )
}
if os.environ.get("UCWEB_TEST_DATABASE_NAME"):
    # Lets two test runs share one PostgreSQL server without sharing a test database.
    DATABASES["default"]["TEST"] = {"NAME": os.environ["UCWEB_TEST_DATABASE_NAME"]}
# A pool of PostgreSQL connections per server process (psycopg_pool) instead of one persistent
# connection per thread: a web worker has more threads (UCWEB_THREADS, 32) than requests that need
# a connection at once, and an ASGI server may run each request on a fresh thread. Set by
# scripts/run_server.sh for the web server; 0 (the default) keeps Django's own connections (see
# SERVING_ASGI above).
UCWEB_DB_POOL_SIZE = env_int("UCWEB_DB_POOL_SIZE", 0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and UCWEB_DB_POOL_SIZE > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps the connections
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": UCWEB_DB_POOL_SIZE,
        "timeout": env_int("UCWEB_DB_POOL_TIMEOUT", 30),
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default is written by the web server's threads, the worker and the beat at once.
    # WAL lets readers go on while one writes; every transaction takes the write lock when it
    # begins (IMMEDIATE), so none fails half-way with "database is locked" when its read turns into
    # a write (that upgrade cannot wait, a BEGIN can); a writer waits up to 30 s for its turn.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "timeout": 30, "transaction_mode": "IMMEDIATE",
        # FULL: a commit the catalog has confirmed survives a power failure (NORMAL may lose the
        # last ones in WAL mode, and another writer could then win the same version); measured
        # no slower under the suite's storms.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
    })
    DATABASES["default"]["CONN_MAX_AGE"] = 0
# A kept connection (CONN_MAX_AGE, or the pool's) that the database ended meanwhile (a restart,
# pg_terminate_backend, an idle timeout) is found and replaced before a request uses it, instead of
# failing that request; the pool checks a connection when it is taken (Django passes it this flag;
# the servers' own check asks the socket first and sends a query only when it has something to
# say: ucweb.pool).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = bool(
    DATABASES["default"]["CONN_MAX_AGE"] or "pool" in DATABASES["default"].get("OPTIONS", {}))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
FORMAT_MODULE_PATH = ["ucweb.formats"]
LANGUAGE_CODE = "en-us"
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# Static files (admin, Swagger UI) are found in the installed apps even before collectstatic.
WHITENOISE_USE_FINDERS = True

# A 10 MB body is refused with 413 by the request-size guard before anything parses it.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("UCWEB_MAX_BODY_BYTES", 8 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["ucweb.auth.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["ucweb.auth.IsAuthenticatedPrincipal"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["ucweb.parsers.LenientJSONParser"],
    "EXCEPTION_HANDLER": "ucweb.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "ucweb",
    "DESCRIPTION": (
        "An open lakehouse catalog: the Unity Catalog REST API (/api/2.1/unity-catalog), "
        "catalog-managed Delta commits, and the Iceberg REST catalog. Authenticate with "
        "`Authorization: Bearer <token>` (see `python manage.py issue_token`)."
    ),
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI's files are served by this server, not fetched from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "Privilege": "catalog.choices.Privilege",
        "ColumnTypeName": "catalog.choices.ColumnTypeName",
    },
    "PREPROCESSING_HOOKS": ["ucweb.openapi.one_iceberg_root"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "ucweb.openapi.distinct_operation_ids",
        "ucweb.openapi.describe_iceberg_roots",
    ],
}

# --- ucweb ------------------------------------------------------------------------------------
UCWEB_ALLOW_ANONYMOUS = env_bool("UCWEB_ALLOW_ANONYMOUS", False)
UCWEB_TOKEN_CACHE_SECONDS = env_int("UCWEB_TOKEN_CACHE_SECONDS", 5)
UCWEB_STORAGE_ROOT = os.environ.get("UCWEB_STORAGE_ROOT") or (VAR_DIR / "storage").as_uri()
UCWEB_DEFAULT_PAGE_SIZE = env_int("UCWEB_DEFAULT_PAGE_SIZE", 100)
UCWEB_MAX_PAGE_SIZE = env_int("UCWEB_MAX_PAGE_SIZE", 1000)
UCWEB_MAX_UNPUBLISHED_COMMITS = env_int("UCWEB_MAX_UNPUBLISHED_COMMITS", 10)
# How many published Delta commits to keep per table, beyond the unpublished ones; unset keeps all.
UCWEB_DELTA_COMMIT_RETENTION = (
    env_int("UCWEB_DELTA_COMMIT_RETENTION", 0) if os.environ.get("UCWEB_DELTA_COMMIT_RETENTION") else None
)
UCWEB_DELTA_COMMITS_PAGE_SIZE = env_int("UCWEB_DELTA_COMMITS_PAGE_SIZE", 1000)
# Iceberg REST: the catalog /v1/config answers for when no warehouse is named; how long an
# Idempotency-Key is remembered; how long an OAuth client-credentials token lives.
UCWEB_DEFAULT_WAREHOUSE = os.environ.get("UCWEB_DEFAULT_WAREHOUSE", "unity")
UCWEB_IDEMPOTENCY_LIFETIME_SECONDS = env_int("UCWEB_IDEMPOTENCY_LIFETIME_SECONDS", 1800)
UCWEB_OAUTH_TOKEN_SECONDS = env_int("UCWEB_OAUTH_TOKEN_SECONDS", 3600)
# Server-side scan planning (docs/iceberg.md): how long a plan id and its plan tasks are answered,
# and how many file scan tasks one page (the inline answer, or one plan task) holds.
UCWEB_SCAN_PLAN_LIFETIME_SECONDS = env_int("UCWEB_SCAN_PLAN_LIFETIME_SECONDS", 3600)
UCWEB_SCAN_PLAN_PAGE_SIZE = env_int("UCWEB_SCAN_PLAN_PAGE_SIZE", 1000)
# The entries of manifests read for planning, kept per server process (about 2.4 KB each for a
# table of three columns, more with more columns: 50,000 entries are about 120 MB).
UCWEB_SCAN_MANIFEST_CACHE_ENTRIES = env_int("UCWEB_SCAN_MANIFEST_CACHE_ENTRIES", 50_000)


# OpenID Connect providers (docs/security.md): their tokens are accepted on every API and
# exchanged at the OAuth token endpoint; their users sign in to the console. One provider from the
# UCWEB_OIDC_* variables, or several from UCWEB_OIDC_PROVIDERS (a JSON list of the same fields).
OIDC_USERNAME_CLAIMS = ("sub", "email", "preferred_username")


def oidc_provider(fields: dict) -> dict:
    if not isinstance(fields, dict) or not isinstance(fields.get("issuer"), str) or not fields["issuer"]:
        raise ImproperlyConfigured("Each OpenID provider needs an issuer URL.")
    issuer = fields["issuer"].rstrip("/")
    provider = {
        "issuer": issuer,
        "name": fields.get("name") or issuer.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0],
        "audience": fields.get("audience") or fields.get("client_id"),
        "username_claim": fields.get("username_claim") or "sub",
        "groups_claim": fields.get("groups_claim") or "groups",
        "client_id": fields.get("client_id") or "",
        "client_secret": fields.get("client_secret") or "",
        "staff_group": fields.get("staff_group") or "",
        "scopes": fields.get("scopes") or "openid email profile",
    }
    if not provider["audience"]:
        raise ImproperlyConfigured(f"OpenID provider {issuer} needs an audience (or a client id).")
    if provider["username_claim"] not in OIDC_USERNAME_CLAIMS:
        raise ImproperlyConfigured(f"The username claim must be one of {', '.join(OIDC_USERNAME_CLAIMS)}.")
    return provider


def oidc_providers_from_environment() -> list[dict]:
    if env_str("UCWEB_OIDC_PROVIDERS"):
        try:
            listed = json.loads(os.environ["UCWEB_OIDC_PROVIDERS"])
        except ValueError as exc:
            raise ImproperlyConfigured(f"UCWEB_OIDC_PROVIDERS is not JSON: {exc}") from exc
        if not isinstance(listed, list):
            raise ImproperlyConfigured("UCWEB_OIDC_PROVIDERS must be a JSON list of providers.")
    elif env_str("UCWEB_OIDC_ISSUER"):
        listed = [{field: env_str(f"UCWEB_OIDC_{field.upper()}") for field in (
            "issuer", "name", "audience", "username_claim", "groups_claim", "client_id", "client_secret",
            "staff_group", "scopes")}]
    else:
        return []
    providers = [oidc_provider(fields) for fields in listed]
    for key in ("issuer", "name"):
        values = [provider[key] for provider in providers]
        if len(set(values)) != len(values):
            raise ImproperlyConfigured(f"Two OpenID providers have the same {key}.")
    return providers


UCWEB_OIDC_PROVIDERS = oidc_providers_from_environment()
# Clock skew allowed on a provider token's exp, nbf and iat.
UCWEB_OIDC_LEEWAY_SECONDS = env_int("UCWEB_OIDC_LEEWAY_SECONDS", 60)
# UCWEB_LOCAL_PASSWORDS=0: the console's password form is off; people sign in through a provider.
UCWEB_LOCAL_PASSWORDS = env_bool("UCWEB_LOCAL_PASSWORDS", True)
AUTHENTICATION_BACKENDS = ["ucweb.auth.ConsoleLoginBackend"]

# Maintenance (Celery): publish-verify waits this long for clients to publish themselves; plans.
UCWEB_PUBLISH_VERIFY_AFTER_SECONDS = env_int("UCWEB_PUBLISH_VERIFY_AFTER_SECONDS", 30)
UCWEB_SMALL_FILE_BYTES = env_int("UCWEB_SMALL_FILE_BYTES", 8 * 1024 * 1024)
UCWEB_OPTIMIZE_SMALL_FILE_SHARE = float(os.environ.get("UCWEB_OPTIMIZE_SMALL_FILE_SHARE", "0.5"))
UCWEB_OPTIMIZE_MIN_FILES = env_int("UCWEB_OPTIMIZE_MIN_FILES", 10)
UCWEB_CHECKPOINT_INTERVAL = env_int("UCWEB_CHECKPOINT_INTERVAL", 100)
UCWEB_VACUUM_RETENTION_HOURS = env_int("UCWEB_VACUUM_RETENTION_HOURS", 168)
UCWEB_STAGING_TTL_SECONDS = env_int("UCWEB_STAGING_TTL_SECONDS", 24 * 3600)
# How long a dropped table or volume is kept, restorable, before its row and managed files go
# (catalog.services.dropped); 0 deletes at once.
UCWEB_DROP_RETENTION_SECONDS = env_int("UCWEB_DROP_RETENTION_SECONDS", 0)
# Maintenance runs (table properties override these per table: see maintenance/policy.py).
UCWEB_TARGET_FILE_BYTES = env_int("UCWEB_TARGET_FILE_BYTES", 128 * 1024 * 1024)
UCWEB_DELTA_LOG_RETENTION_HOURS = env_int("UCWEB_DELTA_LOG_RETENTION_HOURS", 30 * 24)
UCWEB_SNAPSHOT_MAX_AGE_HOURS = env_int("UCWEB_SNAPSHOT_MAX_AGE_HOURS", 5 * 24)
UCWEB_SNAPSHOTS_MIN_KEEP = env_int("UCWEB_SNAPSHOTS_MIN_KEEP", 1)
UCWEB_ORPHAN_RETENTION_HOURS = env_int("UCWEB_ORPHAN_RETENTION_HOURS", 3 * 24)
UCWEB_MAINTENANCE_PRINCIPAL = os.environ.get("UCWEB_MAINTENANCE_PRINCIPAL", "ucweb-maintenance")
UCWEB_MAINTENANCE_LEASE_SECONDS = env_int("UCWEB_MAINTENANCE_LEASE_SECONDS", 120)
UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS = env_int("UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS", 6 * 3600)
UCWEB_MAINTENANCE_MAX_ATTEMPTS = env_int("UCWEB_MAINTENANCE_MAX_ATTEMPTS", 4)
UCWEB_MAINTENANCE_BACKOFF_SECONDS = env_int("UCWEB_MAINTENANCE_BACKOFF_SECONDS", 60)
# Iceberg maintenance runs the Iceberg Spark procedures through this server's own Iceberg REST
# catalog: local[*] in the worker unless UCWEB_SPARK_MASTER names a cluster.
UCWEB_SPARK_MASTER = os.environ.get("UCWEB_SPARK_MASTER", "local[*]")
# By default the server that scripts/run_server.sh starts beside the worker (UCWEB_PORT, on loopback
# unless it is bound to one address only).
_bind = env_str("UCWEB_BIND", "127.0.0.1")
_host = "127.0.0.1" if _bind in ("0.0.0.0", "::", "[::]") else (f"[{_bind.strip('[]')}]" if ":" in _bind else _bind)
UCWEB_ICEBERG_CATALOG_URL = env_str(
    "UCWEB_ICEBERG_CATALOG_URL", f"http://{_host}:{env_int('UCWEB_PORT', 8080)}/api/catalog")
# Spark finds its JVM through JAVA_HOME (else `java` on PATH) and starts its Python workers with
# PYSPARK_PYTHON, this interpreter unless it is set.
JAVA_HOME = env_str("JAVA_HOME")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# --- object storage (catalog.storage) and credential vending (catalog.services.vendor) --------
# S3: an S3-compatible endpoint (path-style addressing when set; unset means AWS), its region and
# the server's own keys (unset: boto3's default chain). UCWEB_S3_CONDITIONAL_WRITES=false only for
# a server without conditional writes and one writer per table (see catalog/storage/s3.py).
UCWEB_S3_ENDPOINT_URL = env_str("UCWEB_S3_ENDPOINT_URL")
UCWEB_S3_REGION = env_str("UCWEB_S3_REGION", "us-east-1")
AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID")
AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY")
AWS_SESSION_TOKEN = env_str("AWS_SESSION_TOKEN")
UCWEB_S3_CONDITIONAL_WRITES = env_str("UCWEB_S3_CONDITIONAL_WRITES", "true").strip().lower() not in {
    "0", "false", "no", "off"}
# Credentials vended for managed storage: AssumeRole of UCWEB_STS_ROLE_ARN (else
# GetFederationToken with the server's keys) at UCWEB_STS_ENDPOINT_URL (else the S3 endpoint).
UCWEB_STS_ENDPOINT_URL = env_str("UCWEB_STS_ENDPOINT_URL")
UCWEB_STS_ROLE_ARN = env_str("UCWEB_STS_ROLE_ARN")
UCWEB_STS_EXTERNAL_ID = env_str("UCWEB_STS_EXTERNAL_ID")
UCWEB_TEMPORARY_CREDENTIALS_SECONDS = max(60, env_int("UCWEB_TEMPORARY_CREDENTIALS_SECONDS", 3600))
# The IAM identity storage credentials answer as theirs (`aws_iam_role.unity_catalog_iam_arn`).
UCWEB_IAM_ARN = env_str("UCWEB_IAM_ARN")
# Encrypts stored credential secrets (any passphrase); unset: derived from SECRET_KEY.
UCWEB_ENCRYPTION_KEY = env_str("UCWEB_ENCRYPTION_KEY")

# A bearer token that may read /metrics and nothing else (a Prometheus scraper's); metastore
# admins' tokens may read it too (ucweb.scrape).
UCWEB_METRICS_TOKEN = env_str("UCWEB_METRICS_TOKEN")

# --- Celery -----------------------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
# With nothing configured the broker is a folder under var/ (kombu's filesystem transport), so
# `make run` has a worker and a schedule without any server; REDIS_URL switches to Redis.
# (The host in the URL means nothing to that transport; without one kombu warns on every connection.)
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or REDIS_URL or "filesystem://localhost//"
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "celery-broker"
    (_broker_dir / "processed").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir),
        "data_folder_out": str(_broker_dir),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    # kombu's filesystem transport, with messages that appear whole (ucweb.broker).
    CELERY_BROKER_TRANSPORT = "ucweb.broker:Transport"
else:
    # A broker that is down must not hold up a request: publishing gives up fast, and the
    # periodic sweeps pick up whatever was not delivered.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0}
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_RESULT_BACKEND = "django-db"
CELERY_RESULT_EXTENDED = True
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# django-celery-beat's schedule in the database, sent only by the beat that holds the lease: every
# server may run a beat (maintenance.liveness).
CELERY_BEAT_SCHEDULER = "maintenance.liveness:LeaderScheduler"
# A worker writes its heartbeat and a beat records its tick this often; readiness takes a process
# for gone after UCWEB_HEARTBEAT_STALE_SECONDS without one (default: three periods).
UCWEB_HEARTBEAT_SECONDS = max(1, env_int("UCWEB_HEARTBEAT_SECONDS", 10))
UCWEB_HEARTBEAT_STALE_SECONDS = env_int("UCWEB_HEARTBEAT_STALE_SECONDS", 3 * UCWEB_HEARTBEAT_SECONDS)
CELERY_TASK_ACKS_LATE = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The beat schedule that `manage.py bootstrap` installs once (governance edits it in the admin):
# name -> (task, every so many seconds). The tasks are maintenance/tasks.py's.
UCWEB_MAINTENANCE_SCHEDULE = {
    "publish-verify": ("maintenance.publish_verify", 30),
    "purge-pending": ("maintenance.purge_pending", 60),
    "expire-staging-tables": ("maintenance.expire_staging_tables", 600),
    "expire-dropped": ("maintenance.expire_dropped", 600),
    "refresh-health-and-plans": ("maintenance.refresh_health", 300),
    "run-due-maintenance": ("maintenance.run_due", 300),
    "deliver-change-events": ("maintenance.deliver_change_events", 5),
}
# Other intervals for the first install, as "name=seconds,name=seconds" (a name above).
for _entry in filter(None, (env_str("UCWEB_MAINTENANCE_SCHEDULE_SECONDS", "") or "").split(",")):
    _name, _, _seconds = _entry.partition("=")
    if _name.strip() not in UCWEB_MAINTENANCE_SCHEDULE or not _seconds.strip().isdigit() or int(_seconds) < 1:
        raise ImproperlyConfigured(
            f"UCWEB_MAINTENANCE_SCHEDULE_SECONDS: {_entry!r} is not name=seconds with a name of "
            f"{', '.join(UCWEB_MAINTENANCE_SCHEDULE)}")
    UCWEB_MAINTENANCE_SCHEDULE[_name.strip()] = (UCWEB_MAINTENANCE_SCHEDULE[_name.strip()][0], int(_seconds))

# --- change events (catalog.services.change_events writes them, maintenance.change_events delivers)
# Written only when a sink is configured: NATS JetStream (subject template with `{type}`, in a
# stream of that name, created when missing) and/or a webhook receiving CloudEvents over HTTP.
UCWEB_EVENTS_NATS_URL = env_str("UCWEB_EVENTS_NATS_URL")
UCWEB_EVENTS_NATS_SUBJECT = env_str("UCWEB_EVENTS_NATS_SUBJECT", "ucweb.events.{type}")
UCWEB_EVENTS_NATS_STREAM = env_str("UCWEB_EVENTS_NATS_STREAM", "UCWEB_EVENTS")
UCWEB_EVENTS_WEBHOOK_URL = env_str("UCWEB_EVENTS_WEBHOOK_URL")
UCWEB_EVENTS_SOURCE = env_str("UCWEB_EVENTS_SOURCE", "/ucweb")
UCWEB_EVENTS_KEEP_DELIVERED = env_int("UCWEB_EVENTS_KEEP_DELIVERED", 10000)
UCWEB_EVENTS_BACKOFF_SECONDS = env_int("UCWEB_EVENTS_BACKOFF_SECONDS", 5)
UCWEB_EVENTS_TIMEOUT_SECONDS = env_int("UCWEB_EVENTS_TIMEOUT_SECONDS", 10)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": sys.stderr}},
    "root": {"handlers": ["console"], "level": os.environ.get("UCWEB_LOG_LEVEL", "INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
