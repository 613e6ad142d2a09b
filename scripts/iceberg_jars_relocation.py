"""Writing and checking the relocated-dependencies jar: the Jackson and httpclient5 classes are
merged, moved into the Iceberg runtime's shaded packages with jarjar, written as one jar
(sorted entries, fixed timestamps), and verified against the class names the runtime jar
refers to.

Part of scripts/iceberg_spark_jars.py (see its docstring for how this module is found). A change
here that changes the jar it writes must bump RECIPE_VERSION there, so existing caches are rebuilt.
"""

from __future__ import annotations

import re
import struct
import zipfile
from pathlib import Path

from iceberg_jars_common import ICEBERG_VERSION, AssemblyError, _run, log

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
# Every entry gets this timestamp, so the jar's contents do not depend on when it was built.
FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


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
