"""DuckDB sessions against a live server. The extensions are loaded from the files that the
duckdb-extension-* packages of requirements-dev.txt ship: nothing is downloaded at run time."""

from __future__ import annotations

import importlib
from pathlib import Path

import duckdb

ICEBERG_EXTENSIONS = ("httpfs", "avro", "iceberg")
DELTA_EXTENSIONS = ("httpfs", "delta", "unity_catalog")


def extension_path(name: str) -> Path:
    """The extension file that the duckdb-extension-<name> package ships for this DuckDB."""
    package = importlib.import_module(f"duckdb_extension_{name}")
    return Path(package.__file__).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def duckdb_with(extensions: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    """A new in-memory session with `extensions` loaded (and no other loaded on demand)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for name in extensions:
        con.execute(f"LOAD {sql_string(str(extension_path(name)))}")
    return con


def iceberg_duckdb(endpoint: str, token: str, warehouse: str = "unity") -> duckdb.DuckDBPyConnection:
    """A session with the Iceberg REST catalog at `endpoint` (".../api/catalog") attached as
    `lake`, sending the bearer `token`."""
    con = duckdb_with(ICEBERG_EXTENSIONS)
    con.execute(f"CREATE SECRET ucweb (TYPE ICEBERG, TOKEN {sql_string(token)})")
    con.execute(f"ATTACH {sql_string(warehouse)} AS lake (TYPE ICEBERG, SECRET ucweb, ENDPOINT {sql_string(endpoint)})")
    return con


def unity_duckdb(server_url: str, token: str) -> duckdb.DuckDBPyConnection:
    """A session with the Unity Catalog catalog `unity` of the server at `server_url` attached as
    `lake`, as DuckDB documents it (its default schema, `default`, from the server's default
    namespace setting), sending the bearer `token`."""
    con = duckdb_with(DELTA_EXTENSIONS)
    con.execute(f"CREATE SECRET ucweb (TYPE unity_catalog, TOKEN {sql_string(token)}, "
                f"ENDPOINT {sql_string(server_url)}, AWS_REGION 'us-east-1')")
    con.execute("ATTACH 'unity' AS lake (TYPE unity_catalog, SECRET ucweb)")
    return con
