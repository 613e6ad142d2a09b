"""Maintenance of Iceberg tables with the Iceberg Spark procedures, on PySpark with the Iceberg
runtime the project assembles (scripts/iceberg_spark_jars.py), through this server's own Iceberg
REST catalog (UCWEB_ICEBERG_CATALOG_URL) as the catalog's service principal.

Spark runs `local[*]` in the worker, or on the cluster UCWEB_SPARK_MASTER names. Each run gets
its own Spark session (`newSession()`: its own catalog settings) over the one SparkContext, with
a token issued for the run and revoked after it. Where Java, PySpark or the jars are missing, the
run is SKIPPED with the reason.

    OPTIMIZE           rewrite_data_files(target-file-size-bytes, min-input-files)
    EXPIRE_SNAPSHOTS   expire_snapshots(older_than = now - max age, retain_last = min to keep)
    REMOVE_ORPHANS     remove_orphan_files(older_than = now - orphan retention)
    REWRITE_MANIFESTS  rewrite_manifests()"""

from __future__ import annotations

import importlib.util
import os
import shutil
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from django.conf import settings

from maintenance.errors import Conflict, Skip, TimeLimitExceeded

_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "iceberg_spark_jars.py"
_lock = threading.Lock()


def _jars_conf() -> dict:
    spec = importlib.util.spec_from_file_location("ucweb_iceberg_spark_jars", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return module.spark_jars_conf()
    except module.AssemblyError as exc:
        raise Skip(f"the Iceberg runtime for Spark is not available: {exc}") from None


def check_engine() -> dict:
    """The Spark settings that put the Iceberg runtime on the classpath; raises Skip with the
    reason when Iceberg maintenance cannot run in this process: no Java, no PySpark, or no Iceberg
    runtime (assembled here on first use, then cached per machine)."""
    if settings.JAVA_HOME:
        java = Path(settings.JAVA_HOME) / "bin" / "java"
        if not os.access(java, os.X_OK):
            raise Skip(f"Java is not installed where JAVA_HOME points ({java} is not a program); Iceberg "
                       f"maintenance runs on Spark.")
    elif not shutil.which("java"):
        raise Skip("Java is not installed (Iceberg maintenance runs on Spark); set JAVA_HOME or install a JRE "
                   "(Debian: apt-get install openjdk-17-jre-headless).")
    if importlib.util.find_spec("pyspark") is None:
        raise Skip("PySpark is not installed (Iceberg maintenance runs on Spark): `make run` installs it.")
    return _jars_conf()


def base_session():
    """The process's SparkSession (started on first use)."""
    jars = check_engine()
    from pyspark.sql import SparkSession

    with _lock:
        active = SparkSession.getActiveSession()
        if active is not None and active.sparkContext._jsc is not None:
            return active
        builder = SparkSession.builder.master(settings.UCWEB_SPARK_MASTER).appName("ucweb-maintenance")
        conf = {"spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC", **jars}
        if settings.UCWEB_SPARK_MASTER.startswith("local"):
            # Spark in the worker's own process listens on loopback only; a cluster's executors must
            # reach the driver, whose address SPARK_LOCAL_IP or spark-defaults.conf then gives.
            conf |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
        for key, value in conf.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
        session.sparkContext.setLogLevel("WARN")
        return session


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class SparkRun:
    """A Spark session with one catalog, `maint_<hex>`, on ucweb as the maintenance principal."""

    def __init__(self, table):
        from catalog.services import principals
        from maintenance.principal import catalog_principal

        self.table = table
        self.catalog = f"maint_{uuid.uuid4().hex[:12]}"
        self.session = base_session().newSession()  # first: without Spark no token is issued
        principal = catalog_principal()
        self.token = principals.issue_token(
            principal=principal, lifetime=timedelta(seconds=settings.UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS + 600),
            description=f"Spark maintenance of {table.full_name}")
        uri = settings.UCWEB_ICEBERG_CATALOG_URL.rstrip("/")
        prefix = f"spark.sql.catalog.{self.catalog}"
        for key, value in {
            prefix: "org.apache.iceberg.spark.SparkCatalog", f"{prefix}.type": "rest", f"{prefix}.uri": uri,
            f"{prefix}.warehouse": table.schema.catalog.name, f"{prefix}.cache-enabled": "false",
            f"{prefix}.token": self.token, f"{prefix}.rest.auth.type": "oauth2",
            f"{prefix}.token-refresh-enabled": "false", f"{prefix}.oauth2-server-uri": f"{uri}/v1/oauth/tokens",
        }.items():
            self.session.conf.set(key, value)
        self.identifier = ".".join(_quote(part) for part in [*table.schema.levels, table.name])
        self.full = f"{_quote(self.catalog)}.{self.identifier}"

    def close(self):
        from catalog.models import Token
        from catalog.services.principals import _digest

        Token.objects.filter(key_hash=_digest(self.token)).delete()

    def sql(self, text: str):
        return self.session.sql(text).collect()

    def call(self, procedure: str, arguments: str):
        return self.sql(f"CALL {_quote(self.catalog)}.system.{procedure}({arguments})")

    def check_files_are_its_own(self) -> None:
        """Expiry deletes the files only expired snapshots reference, orphan removal what lies
        under the location unreferenced: both only when the location is the table's own and
        every file any snapshot references lies under it."""
        import json

        from maintenance.ownership import own_location

        metadata = json.loads(self.table.iceberg.metadata_json)
        self.check_files_inside(own_location(self.table, metadata.get("location")), metadata)

    def check_files_inside(self, location: str | None = None, metadata: dict | None = None) -> None:
        """Every operation reads, rewrites or deletes the table's files through Spark, whose local
        file system follows symbolic links: a link in the table's folder (anyone who can write
        there can plant one) would have OPTIMIZE copy rows from wherever it leads into the table,
        and expiry or orphan removal delete files there. So a table whose folder holds a link, or
        whose metadata or snapshots name a file outside its location, is not maintained. Checked
        before Spark reads anything; a link planted after the check is not seen."""
        import json

        from catalog.storage import normalize, storage_for

        metadata = metadata if metadata is not None else json.loads(self.table.iceberg.metadata_json)
        mine = location or normalize(metadata.get("location") or self.table.storage_location)
        if mine.startswith("file:"):
            links = storage_for(mine).symbolic_links(mine)
            if links:
                raise Skip(f"the table's folder holds {len(links)} symbolic link(s), e.g. {links[0]}; Spark would "
                           f"follow them, so the catalog reads, rewrites and deletes nothing there until they are gone")
        outside = file_outside(metadata, mine)
        if outside is not None:
            raise Skip(f"the metadata references {outside}, outside the table location {mine}; the catalog "
                       f"reads, rewrites and deletes no files of this table")
        scheme, _, path = mine.partition("://")
        canonical = f"{scheme}://{path.lstrip('/')}" if scheme != "file" else f"file:///{path.lstrip('/')}"
        normalised = ("regexp_replace(regexp_replace(file_path, '^file:/+', 'file:///'), '^s3a://', 's3://')")
        outside = self.sql(f"SELECT file_path FROM (SELECT file_path FROM {self.full}.all_files UNION ALL "
                           f"SELECT path AS file_path FROM {self.full}.all_manifests) WHERE NOT "
                           f"startswith({normalised}, {_sql_string(canonical + '/')}) LIMIT 1")
        if outside:
            raise Skip(f"a snapshot references {outside[0][0]}, outside the table location {mine}; the catalog "
                       f"reads, rewrites and deletes no files of this table")

    def figures(self, small_file_bytes: int) -> dict:
        files = self.sql(f"SELECT count(*) AS n, coalesce(sum(file_size_in_bytes), 0) AS b, "
                         f"coalesce(sum(CASE WHEN file_size_in_bytes < {int(small_file_bytes)} THEN 1 ELSE 0 END), 0) "
                         f"AS s FROM {self.full}.data_files")[0]
        snapshots = self.sql(f"SELECT count(*) FROM {self.full}.snapshots")[0][0]
        manifests = self.sql(f"SELECT count(*) FROM {self.full}.manifests")[0][0]
        return {"files": files["n"], "bytes": files["b"],
                "small_file_share": round(files["s"] / files["n"], 4) if files["n"] else 0.0,
                "snapshots": snapshots, "manifests": manifests}


def file_outside(metadata: dict, location: str) -> str | None:
    """The first manifest list (or manifest) or statistics file in table metadata that does not lie inside
    `location` (expiring its snapshot would delete it), or None. Metadata written before commits
    were held to the table's location may name any place."""
    from catalog import locations
    from commits.formats.iceberg import files_referenced
    from ucweb.errors import InvalidParameter

    for path in files_referenced(metadata):
        try:
            locations.file_inside_table(path, location, field="file")
        except InvalidParameter:
            return str(path)
    return None


def _timestamp(hours_ago: float) -> str:
    moment = datetime.now(timezone.utc) - timedelta(hours=hours_ago)
    return "TIMESTAMP " + _sql_string(moment.strftime("%Y-%m-%d %H:%M:%S.%f"))


def run(operation: str, table, policy, ctx) -> dict:
    ctx.progress("starting Spark")
    spark = SparkRun(table)
    # The time limit stops the Spark jobs of this run: they run in their own job group, which a
    # timer cancels at the deadline.
    group = f"ucweb-maintenance-{uuid.uuid4().hex[:8]}"
    context = spark.session.sparkContext
    timer = threading.Timer(max(ctx.deadline - time.monotonic(), 0.0), context.cancelJobGroup, args=(group,))
    timer.daemon = True
    try:
        context.setJobGroup(group, f"{operation} {table.full_name}", interruptOnCancel=True)
        timer.start()
        return _run(spark, operation, policy, ctx)
    except Exception as exc:
        if time.monotonic() >= ctx.deadline:
            raise TimeLimitExceeded(
                f"the run went past its time limit of {settings.UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS} s "
                f"(its Spark jobs were cancelled)") from exc
        if lost_race(exc):
            raise Conflict(f"a writer committed to {table.full_name} while {operation} ran, and Iceberg could not "
                           f"commit the run on top of it") from exc
        raise
    finally:
        timer.cancel()
        spark.close()


def lost_race(exc: BaseException) -> bool:
    """Whether Spark gave up committing because other commits kept changing the table (Iceberg's
    CommitFailedException or ValidationException, after its own retries)."""
    from maintenance.errors import describe

    text = describe(exc)
    return "CommitFailedException" in text or "ValidationException" in text


def _run(spark: SparkRun, operation: str, policy, ctx) -> dict:
    if operation in ("REMOVE_ORPHANS", "EXPIRE_SNAPSHOTS"):
        spark.check_files_are_its_own()
    else:
        spark.check_files_inside()
    before = spark.figures(policy.small_file_bytes)
    ctx.before(before)
    ctx.progress(f"{operation} on Spark")
    table_arg = f"table => {_sql_string(spark.identifier)}"
    if operation == "OPTIMIZE":
        result = spark.call("rewrite_data_files", f"{table_arg}, options => map("
                            f"'target-file-size-bytes', '{int(policy.target_file_bytes)}', "
                            f"'min-input-files', '{int(policy.min_input_files)}')")
        row = result[0].asDict() if result else {}
        summary = (f"rewrote {row.get('rewritten_data_files_count', 0)} data files into "
                   f"{row.get('added_data_files_count', 0)}")
    elif operation == "EXPIRE_SNAPSHOTS":
        result = spark.call("expire_snapshots", f"{table_arg}, older_than => "
                            f"{_timestamp(policy.snapshot_max_age_hours)}, retain_last => {int(policy.snapshots_min_keep)}")
        row = result[0].asDict() if result else {}
        summary = (f"expired snapshots older than {policy.snapshot_max_age_hours:g} h keeping at least "
                   f"{policy.snapshots_min_keep}; deleted {row.get('deleted_data_files_count', 0)} data files and "
                   f"{row.get('deleted_manifest_files_count', 0)} manifests")
    elif operation == "REMOVE_ORPHANS":
        result = spark.call("remove_orphan_files", f"{table_arg}, older_than => "
                            f"{_timestamp(policy.orphan_retention_hours)}")
        summary = (f"removed {len(result)} files no metadata references, older than "
                   f"{policy.orphan_retention_hours:g} h")
    elif operation == "REWRITE_MANIFESTS":
        result = spark.call("rewrite_manifests", table_arg)
        row = result[0].asDict() if result else {}
        summary = (f"rewrote {row.get('rewritten_manifests_count', 0)} manifests into "
                   f"{row.get('added_manifests_count', 0)}")
    else:
        raise Skip(f"{operation} does not apply to Iceberg tables.")
    ctx.check()
    after = spark.figures(policy.small_file_bytes)
    if operation == "REMOVE_ORPHANS":
        after["orphans_removed"] = len(result)
    return {"before": before, "after": after, "summary": summary}
