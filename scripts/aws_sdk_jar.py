#!/usr/bin/env python3
"""Assemble the AWS SDK for Java v2 jar that Iceberg's S3FileIO needs in Spark, offline.

Iceberg's Spark runtime carries S3FileIO and its remote signer but not the AWS SDK v2 they call
(upstream ships it as ``iceberg-aws-bundle`` on Maven Central, which our machines cannot reach).
The PyPI package ``sagemaker-feature-store-pyspark`` ships a Spark 3.5 jar that contains the SDK
(S3, STS, the Apache and URLConnection HTTP clients) relocated under ``smfs.shaded``. This script:

* downloads that wheel with ``pip download --no-deps`` (once; it is large) and takes its
  ``sagemaker-feature-store-spark-sdk-3.5.jar``;
* keeps the SDK, its relocated HTTP/commons dependencies, reactive-streams and eventstream
  (not the feature store, nor the copy of Iceberg it also carries);
* relocates ``smfs.shaded.software.amazon.awssdk`` back to ``software.amazon.awssdk`` with
  Debian's jarjar (as scripts/iceberg_spark_jars.py does), and moves the SDK's resource files
  (endpoint and default-configuration JSON) back to their own paths.

The result is cached as ``<cache>/aws-sdk-v2-for-iceberg.jar`` (the cache directory of
scripts/iceberg_spark_jars.py). Usage::

    python scripts/aws_sdk_jar.py     # build if needed; prints the jar's path
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

PACKAGE = "sagemaker-feature-store-pyspark==2.2.2"
INNER_JAR = "feature_store_pyspark/jars/sagemaker-feature-store-spark-sdk-3.5.jar"
SHADED = "smfs/shaded/"
KEEP = (f"{SHADED}software/amazon/awssdk/", f"{SHADED}org/apache/hc/", f"{SHADED}org/apache/commons/",
        "org/reactivestreams/", "software/amazon/eventstream/")
RULES = "rule smfs.shaded.software.amazon.awssdk.** software.amazon.awssdk.@1\n"
JAR_NAME = "aws-sdk-v2-for-iceberg.jar"
STAMP_NAME = "aws-sdk-v2-for-iceberg.json"
RECIPE_VERSION = 1
# Classes S3FileIO and the remote signer load, checked by name in the result.
REQUIRED = (
    "software/amazon/awssdk/services/s3/S3Client.class",
    "software/amazon/awssdk/http/apache/ApacheHttpClient.class",
    "software/amazon/awssdk/http/urlconnection/UrlConnectionHttpClient.class",
    "software/amazon/awssdk/auth/signer/internal/AbstractAws4Signer.class",
    "software/amazon/awssdk/regions/internal/region/endpoints.json",
)

_HERE = Path(__file__).resolve().parent


_module = None


def _jars_module():
    """scripts/iceberg_spark_jars.py (its cache directory, jarjar, logging and errors), loaded once."""
    global _module
    if _module is None:
        spec = importlib.util.spec_from_file_location("ucweb_iceberg_spark_jars", _HERE / "iceberg_spark_jars.py")
        _module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_module)
    return _module


def _cached(directory: Path) -> Path | None:
    jar = directory / JAR_NAME
    recorded = _jars_module().read_stamp(jar, directory / STAMP_NAME)
    if recorded is None or recorded.get("recipe") != RECIPE_VERSION or recorded.get("package") != PACKAGE \
            or recorded.get("size") != jar.stat().st_size:
        return None
    return jar


def _download(work: Path, jars) -> Path:
    jars.log(f"pip download {PACKAGE} (the AWS SDK v2 it carries)")
    jars._run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(work),
               PACKAGE], what="pip download")
    wheels = sorted(work.glob("sagemaker_feature_store_pyspark-*.whl"))
    if len(wheels) != 1:
        raise jars.AssemblyError(f"expected one sagemaker_feature_store_pyspark wheel in {work}")
    inner = work / "feature-store-3.5.jar"
    with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(INNER_JAR) as source, inner.open("wb") as target:
        while chunk := source.read(1 << 20):
            target.write(chunk)
    wheels[0].unlink()
    return inner


def ensure_aws_sdk_jar(*, directory: Path | None = None) -> Path:
    jars = _jars_module()
    directory = (directory or jars.cache_dir()).resolve()
    with jars._locked(directory):
        cached = _cached(directory)
        if cached is not None:
            return cached
        started = time.monotonic()
        java, jarjar = jars.java_executable(), jars.jarjar_jar()
        with tempfile.TemporaryDirectory(prefix="aws-sdk-jar-") as tmp:
            work = Path(tmp)
            inner = _download(work, jars)
            subset, relocated = work / "subset.jar", work / "relocated.jar"
            with zipfile.ZipFile(inner) as source, zipfile.ZipFile(subset, "w", zipfile.ZIP_DEFLATED) as out:
                for info in source.infolist():
                    if info.filename.startswith(KEEP) and not info.is_dir():
                        out.writestr(info.filename, source.read(info.filename))
            inner.unlink()
            (work / "rules.txt").write_text(RULES, encoding="utf-8")
            jars._run([java, "-jar", str(jarjar), "process", str(work / "rules.txt"), str(subset), str(relocated)],
                      what="jarjar")
            partial = directory / (JAR_NAME + ".partial")
            names = set()
            with zipfile.ZipFile(relocated) as source, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
                for info in source.infolist():
                    name = info.filename
                    if name.startswith(f"{SHADED}software/amazon/awssdk/"):
                        name = name[len(SHADED):]  # resources keep their shaded path in jarjar
                    if name.endswith("/") or name in names:
                        continue
                    names.add(name)
                    out.writestr(zipfile.ZipInfo(name, date_time=jars.FIXED_ZIP_TIME), source.read(info.filename),
                                 compress_type=zipfile.ZIP_DEFLATED)
            missing = [name for name in REQUIRED if name not in names]
            if missing:
                partial.unlink()
                raise jars.AssemblyError(f"the relocated AWS SDK jar lacks {', '.join(missing)}")
            jar = directory / JAR_NAME
            os.replace(partial, jar)
        seconds = round(time.monotonic() - started, 1)
        (directory / STAMP_NAME).write_text(json.dumps(
            {"recipe": RECIPE_VERSION, "package": PACKAGE, "size": jar.stat().st_size, "built_seconds": seconds},
            indent=2) + "\n", encoding="utf-8")
        jars.log(f"built {jar} in {seconds}s")
        return jar


def main() -> int:
    try:
        print(ensure_aws_sdk_jar())
    except _jars_module().AssemblyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
