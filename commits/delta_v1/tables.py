"""The Delta REST API's tables (managed tables spec 1.0, `/delta/v1`): configuration, loadTable,
listing, creation (staging tables, managed and external tables), rename, drop and metrics, over
the one table model. Commits are commits.delta_v1.update's."""

from __future__ import annotations

import base64
import hashlib
import json

from django.db import transaction
from django.utils import timezone

from catalog import authz, pagination, resolve, rows
from catalog import lookup_errors
from catalog.choices import DataSourceFormat, Privilege, SecurableType, TableOperation, TableType
from catalog.models import Principal, StagingTable, Table
from catalog.services import audit, managed_tables as staging_tables, tables, temporary_credentials
from catalog.names import quote_part, schema_paths, validate_name
from catalog.storage import InvalidStorageUrl, normalize
from commits import delta, managed_tables
from commits.delta_v1.wire import (
    DeltaCreateTableRequest, UnsupportedTableFormat, check_contract, json_object, millis, parse_uniform,
    render_columns, render_uniform, storage_credentials,
)
from commits.formats import delta_log
from commits.formats import delta_protocol as dp
from commits.models import DeltaCommit
from commits.ratification import is_catalog_managed
from ucweb.bodies import read
from ucweb.errors import InvalidParameter, TableAlreadyExists, TableDoesNotExist, TemporarilyUnavailable
from ucweb.ids import parse_uuid
from ucweb.renderers import RawJSON

PROTOCOL_VERSION = "1.0"
SUPPORTED_MAJOR, SUPPORTED_MINOR = 1, 0

ENDPOINTS = [
    "POST /v1/catalogs/{catalog}/schemas/{schema}/staging-tables",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "DELETE /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "HEAD /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/rename",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/credentials",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/metrics",
    "GET /v1/staging-tables/{table_id}/credentials",
    "GET /v1/temporary-path-credentials",
    "POST /v1/transactions/commit",
]

# What createStagingTable advertises: what the server checks (delta_log.validate_catalog_managed)
# is required; the rest of the spec's reference list is suggested.


# -- reading a table -----------------------------------------------------------------------------
def etag(table: Table) -> str:
    columns = [(c.name, c.type_json, c.type_text, c.nullable, c.partition_index, c.comment)
               for c in rows.columns_of(table)]
    state = json.dumps({"comment": table.comment, "properties": table.properties, "columns": columns},
                       sort_keys=True, separators=(",", ":"), default=str)
    return base64.urlsafe_b64encode(hashlib.sha256(state.encode()).digest()[:12]).decode()


def catalog_properties(table: Table) -> dict:
    """The table's properties as clients discover it. A table created through the seed 000 path
    stores no protocol projection; its version 0 was checked for at least dp.REQUIRED_PROTOCOL, and
    readers (DuckDB, Delta) decide "catalog-managed" by delta.feature.catalogManaged, so the
    projection is added here (the Delta log stays authoritative for the full protocol)."""
    properties = dict(table.properties or {})
    if is_catalog_managed(table) and dp.MIN_READER not in properties:
        for key, value in dp.protocol_properties(dp.REQUIRED_PROTOCOL).items():
            properties.setdefault(key, value)
        properties.setdefault(delta_log.TABLE_ID_PROPERTY, str(table.id))
    return properties


def describe(table: Table) -> dict:
    """The loadTable answer, from the row (columns prefetched) and its unbackfilled commits."""
    columns, partitions = render_columns(table)
    properties = catalog_properties(table)
    managed = is_catalog_managed(table)
    properties.setdefault(dp.LAST_UPDATE_VERSION, "0")
    properties.setdefault(dp.LAST_COMMIT_TIMESTAMP, str(millis(table.created_at)))
    try:
        last_version = int(properties[dp.LAST_UPDATE_VERSION])
        last_timestamp = int(properties[dp.LAST_COMMIT_TIMESTAMP])
    except ValueError:
        last_version, last_timestamp = 0, millis(table.created_at)
    body = {
        "metadata": {
            "etag": etag(table),
            "table-type": table.table_type,
            "table-uuid": str(table.id),
            "location": table.answered_location,
            "created-time": millis(table.created_at),
            "updated-time": millis(table.updated_at or table.created_at),
            "columns": columns,
            "partition-columns": partitions,
            "properties": properties,
            "last-commit-version": last_version,
            "last-commit-timestamp-ms": last_timestamp,
        },
    }
    if table.comment is not None:
        body["metadata"]["comment"] = table.comment
    if managed:
        body["commits"] = _pending_commits(table)
        body["latest-table-version"] = table.latest_version
    uniform = render_uniform(table.uniform_iceberg, table.storage_location)
    if uniform is not None:
        body["uniform"] = uniform
    return body


# An answer's commit: each key, and the field of the ratified commit it holds.
COMMIT_KEYS = (("version", "version"), ("timestamp", "timestamp"), ("file-name", "file_name"),
               ("file-size", "file_size"), ("file-modification-timestamp", "file_modification_timestamp"))


def _pending_commits(table: Table) -> RawJSON | list[dict]:
    """The ratified commits after latest_published_version, newest first: their JSON as read with
    the row (catalog.rows.PendingCommits) when that list is whole, else from the database."""
    known = getattr(table, "pending", None)
    if known is not None and known.whole(table):
        return RawJSON(known.text)
    start, end = table.latest_published_version or 0, table.latest_version
    found = DeltaCommit.objects.filter(table=table, version__gt=start, version__lte=end).order_by("-version")
    return [{key: row[field] for key, field in COMMIT_KEYS} for row in found.values(*rows.COMMIT_FIELDS)]


def table_for(caller: Principal, catalog: str, schema: str, name: str, *, for_update: bool = False,
              pending: bool = False, columns: bool = False, ratified: tuple[int, str] | None = None) -> Table:
    """The table, with the caller's grants (and on request its unpublished commits, its columns
    and whether it holds a ratified commit: catalog.rows) in as few queries as the request allows."""
    paths = schema_paths(schema)  # the paths the name may mean, likelier first (catalog.resolve's rule)
    found = {row.schema.path: row for row in rows.tables(
        caller, rows.by_name(len(paths)), [catalog, *paths, name], for_update=for_update,
        pending=COMMIT_KEYS if pending else None, ratified=ratified,
        columns=columns and not for_update)  # a locked read may have waited: see catalog.rows
    } if paths else {}
    table = next((found[path] for path in paths if path in found), None)
    if table is None:
        # A catalog or schema hidden from the caller answers as a missing one, as its table would.
        resolve.schema(caller, catalog, schema)
        raise lookup_errors.table_not_found(catalog, quote_part(schema), name)
    if columns and not rows.has_columns(table):
        rows.read_columns(table)
    return table


def access_to(caller: Principal, table: Table) -> authz.Access:
    """The caller's access to a table read by `table_for`; a table the caller may not see answers
    as a missing one (catalog.resolve), at the level that is hidden from them."""
    access = authz.access_to_read(caller, table)
    level = authz.hidden_level(access, SecurableType.TABLE)
    if level is not None:
        catalog_name, schema_name = table.schema.catalog.name, table.schema.name
        raise authz.hidden([
            lookup_errors.table_not_found(catalog_name, quote_part(schema_name), table.name),
            lookup_errors.schema_not_found(catalog_name, quote_part(schema_name)),
            lookup_errors.catalog_not_found(catalog_name),
        ][level]).about(table)
    authz.require_schema_use(access)
    return access


def require(caller: Principal, table: Table, *privileges: str) -> authz.Access:
    access = access_to(caller, table)
    for privilege in privileges:
        access.require(access.has(privilege), f"Missing {privilege} on table {table.full_name}.")
    return access


def require_delta(table: Table) -> None:
    if table.data_source_format != DataSourceFormat.DELTA or table.table_type not in (
        TableType.MANAGED, TableType.EXTERNAL
    ):
        raise UnsupportedTableFormat(
            f"Table {table.full_name} is a {table.table_type} {table.data_source_format or ''} table, not a Delta "
            "table; use the Unity Catalog table API."
        )


def load_table(*, caller: Principal, catalog: str, schema: str, name: str) -> dict:
    table = table_for(caller, catalog, schema, name, pending=True, columns=True)
    require(caller, table, Privilege.SELECT)
    require_delta(table)
    return describe(table)


def table_exists(*, caller: Principal, catalog: str, schema: str, name: str) -> None:
    table = table_for(caller, catalog, schema, name)
    access = access_to(caller, table)
    access.require(access.has(Privilege.SELECT) or access.has(Privilege.MODIFY),
                   f"Missing SELECT on table {table.full_name}.")


def list_tables(*, caller: Principal, catalog: str, schema: str, max_results=None, page_token=None):
    queryset = tables.visible_tables(caller=caller, catalog_name=catalog, schema_name=schema)
    items, token = pagination.paginate(queryset, max_results=max_results, page_token=page_token)
    body = {"tables": [
        {"name": t.name, "table-type": t.table_type, "data-source-format": t.data_source_format,
         "table-uuid": str(t.id)} for t in items
    ]}
    if token:
        body["next-page-token"] = token
    return body


# -- configuration ---------------------------------------------------------------------------------
def get_config(*, caller: Principal, catalog, protocol_versions) -> dict:
    if not isinstance(catalog, str) or not catalog:
        raise InvalidParameter("The query parameter catalog is required.")
    if not isinstance(protocol_versions, str) or not protocol_versions:
        raise InvalidParameter("The query parameter protocol-versions is required (for example 1.0).")
    offered = []
    for item in protocol_versions.split(","):
        major, _, minor = item.strip().partition(".")
        if not major.isdigit() or not (minor or "0").isdigit():
            raise InvalidParameter(f"protocol-versions: {item.strip()!r} is not a version such as 1.0.")
        offered.append((int(major), int(minor or 0)))
    resolve.catalog(caller, catalog)  # a catalog the caller cannot see has no configuration either
    if not any(major == SUPPORTED_MAJOR and minor >= SUPPORTED_MINOR for major, minor in offered):
        raise InvalidParameter(
            f"No protocol version in common: the server supports {PROTOCOL_VERSION}, "
            f"the client offered {protocol_versions}."
        )
    return {"endpoints": ENDPOINTS, "protocol-version": PROTOCOL_VERSION}



# -- staging and creation ----------------------------------------------------------------------------
def create_staging_table(*, caller: Principal, catalog: str, schema: str, body: dict) -> dict:
    staging = staging_tables.create_staging_table(
        caller=caller, name=body.get("name"), catalog_name=catalog, schema_name=schema)
    try:
        credentials = storage_credentials(
            temporary_credentials.for_staging_table(caller=caller, staging=staging),
            TableOperation.READ_WRITE)
    except TemporarilyUnavailable:
        # The staging table exists; a token service that is down must not make the client retry
        # into a second one. It asks getStagingTableCredentials again (or uses its own access).
        credentials = {"storage-credentials": []}
    return {
        "table-id": str(staging.id),
        "table-type": TableType.MANAGED,
        "location": staging.staging_location,
        "storage-credentials": credentials["storage-credentials"],
        "required-protocol": dp.REQUIRED_PROTOCOL,
        "suggested-protocol": dp.SUGGESTED_PROTOCOL,
        "required-properties": {"delta.enableInCommitTimestamps": "true",
                                delta_log.TABLE_ID_PROPERTY: str(staging.id)},
        "suggested-properties": dp.SUGGESTED_PROPERTIES,
    }


def create_table(*, caller: Principal, catalog: str, schema: str, body: dict) -> dict:
    request = read(DeltaCreateTableRequest, body)
    name, location, columns, comment = request.name, request.location, request.columns, request.comment
    protocol = request.protocol.model_dump(by_alias=True)
    domains = request.domain_metadata.stored() if request.domain_metadata else {}
    stored = {**request.properties, **dp.protocol_properties(protocol),
              **{dp.DOMAINS[domain]: value for domain, value in domains.items()},
              dp.LAST_UPDATE_VERSION: "0", dp.LAST_COMMIT_TIMESTAMP: str(request.last_commit_timestamp_ms)}

    with transaction.atomic():
        if request.table_type == TableType.EXTERNAL:
            table = tables.create_table(
                caller=caller, name=name, catalog_name=catalog, schema_name=schema, table_type=TableType.EXTERNAL,
                data_source_format=DataSourceFormat.DELTA, columns=columns, storage_location=location,
                comment=comment, properties=stored,
            )
        else:
            try:
                staging_location = normalize(location)
            except InvalidStorageUrl:
                raise InvalidParameter(f"location {location!r} is not a storage URL.") from None
            staging = StagingTable.objects.filter(staging_location=staging_location).first()
            if staging is None:
                resolve.schema(caller, catalog, schema)
                raise TableDoesNotExist(f"No staging table has the location {location}.")
            check_contract(staging.id, stored, protocol)
            uniform = parse_uniform(request.uniform, location=staging_location)
            if dp.uniform_enabled(stored) != (uniform is not None):
                raise InvalidParameter("uniform is required exactly when the properties enable UniForm "
                                       f"({dp.UNIFORM_PROPERTY} includes iceberg).")
            if uniform is not None and uniform["converted_delta_version"] != 0:
                raise InvalidParameter("uniform.iceberg.converted-delta-version must be 0 at creation.")
            table = managed_tables.create_managed_delta_table(
                caller=caller, name=name, catalog_name=catalog, schema_name=schema,
                data_source_format=DataSourceFormat.DELTA, storage_location=location, columns=columns,
                comment=comment, properties=stored,
            )
            if uniform is not None:
                table.uniform_iceberg = uniform
                table.save(update_fields=["uniform_iceberg"])
    return describe(Table.objects.select_related("schema__catalog").prefetch_related("columns").get(id=table.id))


# -- lifecycle -----------------------------------------------------------------------------------------
@transaction.atomic
def delete_table(*, caller: Principal, catalog: str, schema: str, name: str) -> None:
    table = table_for(caller, catalog, schema, name)
    tables.delete_table(caller=caller, full_name=table.full_name)


@transaction.atomic
def rename_table(*, caller: Principal, catalog: str, schema: str, name: str, body: dict) -> None:
    new_name = body.get("new-name")
    validate_name(new_name, field="new-name")
    table = table_for(caller, catalog, schema, name, for_update=True)
    access = access_to(caller, table)
    access.require(access.owns(), f"Only the owner of table {table.full_name} may rename it.")
    if new_name == table.name:
        return
    if Table.objects.filter(schema=table.schema, name=new_name).exists():
        raise TableAlreadyExists(f"Table '{catalog}.{schema}.{new_name}' already exists.")
    old = table.full_name
    table.name = new_name
    table.updated_at = timezone.now()
    table.updated_by = caller.name
    table.save(update_fields=["name", "updated_at", "updated_by"])
    audit.record(principal=caller.name, action="renameTable", securable_type="table",
                 securable_name=table.full_name, securable_id=table.id, details={"from": old})


def report_metrics(*, caller: Principal, catalog: str, schema: str, name: str, body: dict) -> None:
    """Stored as the legacy /delta/metrics report of the same table (one metrics model)."""
    table = table_for(caller, catalog, schema, name)
    require(caller, table, Privilege.SELECT)
    if str(parse_uuid(body.get("table-id"), field="table-id")) != str(table.id):
        raise InvalidParameter(f"table-id does not match table {table.full_name}.")
    report = json_object(body.get("report"), "report", required=False) or {}
    commit_report = json_object(report.get("commit-report"), "report.commit-report", required=False)
    legacy = {"table_id": str(table.id), "table_uri": table.storage_location}
    if commit_report is not None:
        histogram = json_object(commit_report.get("file-size-histogram"), "file-size-histogram", required=False)
        converted = {key.replace("-", "_"): value for key, value in commit_report.items()
                     if key != "file-size-histogram"}
        if histogram is not None:
            converted["file_size_histogram"] = {
                key.replace("-", "_"): value for key, value in histogram.items() if key != "commit-version"}
        version = (histogram or {}).get("commit-version")
        converted["commit_version"] = version if version is not None else table.latest_version or 0
        legacy["report"] = {"commit_report": converted}
    delta.write_metrics(caller=caller, body=legacy)


