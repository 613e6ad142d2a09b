"""One local PySpark 3.5 session with Iceberg, shared by the whole test run.

``iceberg_spark_session(catalog_name, uri, warehouse, token)`` returns a ``local[2]`` session
whose catalog ``catalog_name`` is an Iceberg REST catalog (``org.apache.iceberg.spark.SparkCatalog``
with ``type=rest``) at ``uri`` (our server: ``<live_server.url>/api/catalog``), with Iceberg's
SQL extensions on. The Iceberg jars come from ``scripts/iceberg_spark_jars.py`` (called in
process; the first call of a machine assembles and caches them, later calls only check the cache).

Starting Spark costs seconds, so the session is cached at module level: calling again with the
same arguments returns the same session; a new catalog name is added to the running session
(catalog settings are runtime SQL settings, and Spark loads a catalog on first use); the same
name with different settings stops the session and starts a new one, since Spark keeps a loaded
catalog for the session's life. A session-scoped fixture looks like::

    @pytest.fixture(scope="session")
    def spark(...):
        from tests.spark_iceberg import iceberg_spark_session, stop_iceberg_spark_session

        yield iceberg_spark_session("ucweb", f"{url}/api/catalog", "main", token=token)
        stop_iceberg_spark_session()

PySpark 3.5 allows a local session and Spark Connect sessions in one process only when the
Connect ones are made with ``pyspark.sql.connect.session.SparkSession.builder.remote(url)`` and
use ``pyspark.sql.connect.functions``: the generic ``SparkSession.builder.remote()`` sets
``SPARK_CONNECT_MODE_ENABLED`` for the whole process, after which no local session can start
(this module then raises a RuntimeError saying so).

Catalog defaults: ``cache-enabled=false`` (Spark re-reads table metadata from the server on each
statement, so tests see server-side changes), and with a token ``rest.auth.type=oauth2`` with
token refresh off, so the static bearer token is sent as-is. ``extra_conf`` entries override
anything here; keys starting with ``spark.`` are used as they are, other keys are catalog
properties (``{"io-impl": ...}`` -> ``spark.sql.catalog.<name>.io-impl``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path

import pytest

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "iceberg_spark_jars.py"

SESSION_CONF = {
    "spark.master": "local[2]",
    "spark.app.name": "ucweb-tests",
    "spark.driver.memory": "1g",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
}

# py4j says goodbye at INFO while the interpreter shuts down, after pytest closed the streams.
logging.getLogger("py4j").setLevel(logging.WARNING)

_lock = threading.Lock()
_session = None
_static_conf: dict[str, str] | None = None
_catalogs: dict[str, dict[str, str]] = {}


def _jars_module():
    spec = importlib.util.spec_from_file_location("ucweb_iceberg_spark_jars", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _aws_module():
    spec = importlib.util.spec_from_file_location("ucweb_aws_sdk_jar", _SCRIPT.parent / "aws_sdk_jar.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def iceberg_jars_conf() -> dict[str, str]:
    """``{"spark.jars": ...}`` (or ``spark.jars.packages`` with UCWEB_SPARK_JARS_SOURCE=maven), with
    the AWS SDK v2 that S3FileIO needs (scripts/aws_sdk_jar.py)."""
    module = _jars_module()
    aws = _aws_module()
    try:
        conf = module.spark_jars_conf()
        if "spark.jars" in conf:
            conf["spark.jars"] += "," + str(aws.ensure_aws_sdk_jar())
        return conf
    except (module.AssemblyError, aws._jars_module().AssemblyError) as exc:
        raise RuntimeError(f"Iceberg jars for Spark are not available: {exc}") from exc


def catalog_conf(
    catalog_name: str,
    uri: str,
    warehouse: str,
    token: str | None = None,
    extra_conf: dict | None = None,
) -> dict[str, str]:
    """The ``spark.sql.catalog.<name>*`` settings (plus any ``spark.*`` keys of extra_conf)."""
    prefix = f"spark.sql.catalog.{catalog_name}"
    conf = {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri,
        f"{prefix}.warehouse": warehouse,
        f"{prefix}.cache-enabled": "false",
    }
    if token is not None:
        conf[f"{prefix}.token"] = token
        conf[f"{prefix}.rest.auth.type"] = "oauth2"
        conf[f"{prefix}.token-refresh-enabled"] = "false"
        conf[f"{prefix}.oauth2-server-uri"] = uri.rstrip("/") + "/v1/oauth/tokens"
    for key, value in (extra_conf or {}).items():
        full = key if key.startswith("spark.") else f"{prefix}.{key}"
        if value is None:
            conf.pop(full, None)
        else:
            conf[full] = str(value)
    return conf


def _is_catalog_key(key: str) -> bool:
    return key.startswith("spark.sql.catalog.")


def _start(static_conf: dict[str, str], catalog_settings: dict[str, str]):
    # The JVM and Python workers must use this interpreter, and Spark must not go looking for
    # a non-loopback address of the machine.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    connect_mode = [v for v in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE") if v in os.environ]
    if connect_mode:
        raise RuntimeError(
            f"{' and '.join(connect_mode)} set in this process: PySpark 3.5 then routes every "
            "SparkSession.builder (and pyspark.sql.functions) to Spark Connect, so a local "
            "session cannot be started. Create Spark Connect sessions with "
            "pyspark.sql.connect.session.SparkSession.builder.remote(...) (which leaves the "
            "variable unset) or run the Spark Connect tests in another process."
        )
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in {**static_conf, **catalog_settings}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def iceberg_spark_session(catalog_name: str, uri: str, warehouse: str, **options):
    """The shared local SparkSession with Iceberg REST catalog ``catalog_name`` configured;
    ``options`` (``token``, ``extra_conf``) are those of ``catalog_conf``."""
    global _session, _static_conf
    wanted = catalog_conf(catalog_name, uri, warehouse, **options)
    catalog_settings = {k: v for k, v in wanted.items() if _is_catalog_key(k)}
    session_settings = {k: v for k, v in wanted.items() if not _is_catalog_key(k)}
    with _lock:
        if _session is not None and _session.sparkContext._jsc is None:
            _reset()  # stopped behind our back
        if _session is None:
            static = {**SESSION_CONF, **iceberg_jars_conf(), **session_settings}
            _session = _start(static, catalog_settings)
            _static_conf = static
            _catalogs[catalog_name] = catalog_settings
            return _session

        known = _catalogs.get(catalog_name)
        if known == catalog_settings and all(
            _static_conf.get(k) == v for k, v in session_settings.items()
        ):
            return _session
        if known is None:
            # New catalog name: runtime settings on the live session; other spark.* settings
            # from extra_conf are applied too (static ones make Spark raise, which is wanted).
            for key, value in {**session_settings, **catalog_settings}.items():
                _session.conf.set(key, value)
            _static_conf.update(session_settings)
            _catalogs[catalog_name] = catalog_settings
            return _session

        # Same catalog name with other settings: Spark caches loaded catalogs, so restart with
        # every catalog registered so far (this one updated).
        _catalogs[catalog_name] = catalog_settings
        all_catalogs = {k: v for settings in _catalogs.values() for k, v in settings.items()}
        static = {**_static_conf, **session_settings}
        _session.stop()
        _session = _start(static, all_catalogs)
        _static_conf = static
        return _session


def _reset() -> None:
    global _session, _static_conf
    _session = None
    _static_conf = None
    _catalogs.clear()


def stop_iceberg_spark_session() -> None:
    """Stop the shared session (a session fixture's teardown); the next call starts a new one."""
    with _lock:
        if _session is not None:
            _session.stop()
        _reset()


# -- what the Spark test modules share --------------------------------------------------------------
SPARK_TOKEN = "ucw_spark_test_session_token"


def admit_token(token: str = SPARK_TOKEN) -> None:
    """Let `token` act as the metastore admin. The session keeps sending it while every test has
    a fresh database, so each test puts it back."""
    from catalog.models import Principal, Token

    Token.objects.create(key_hash=hashlib.sha256(token.encode()).hexdigest(),
                         principal=Principal.objects.get(name="admin"))


def spark_rows(spark, sql: str) -> list[tuple]:
    return [tuple(row) for row in spark.sql(sql).collect()]


@pytest.fixture(scope="session")
def spark(live_server):
    """The shared session with catalog `ucweb` (warehouse unity) on the live server, as SPARK_TOKEN."""
    session = iceberg_spark_session("ucweb", f"{live_server.url}/api/catalog", "unity", token=SPARK_TOKEN)
    yield session
    stop_iceberg_spark_session()


@pytest.fixture
def pyiceberg_catalog(live_server):
    """pyiceberg on the same catalog as `spark`, with the same token."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", token=SPARK_TOKEN, warehouse="unity")
