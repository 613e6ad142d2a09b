"""The system side of the Iceberg jar assembly: Java, Debian's jarjar, and the httpclient5 /
httpcore5 jars downloaded from Debian's archive through a private apt configuration (in a
temporary directory, so the system's apt sources, lists and caches are not touched).

Part of scripts/iceberg_spark_jars.py (see its docstring for how this module is found). A change
here that changes which jars are relocated must bump RECIPE_VERSION there, so existing caches are
rebuilt.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from iceberg_jars_common import ICEBERG_VERSION, AssemblyError, _run, _version_tuple, log

DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_SUITE = "unstable"
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# Debian package -> (jar base names it must provide, minimum upstream version)
DEBIAN_PACKAGES = {
    "libhttpclient5-java": (("httpclient5",), (5, 4)),
    "libhttpcore5-java": (("httpcore5", "httpcore5-h2"), (5, 3)),
}
DEBIAN_JARJAR = Path("/usr/share/java/jarjar.jar")


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
