"""The UC Delta REST API (managed tables spec 1.0, `/delta/v1`) over the one table model and the
one ratification of `commits.delta`.

A table is addressed by catalog, schema and name. `updateTable` carries requirements and updates;
they apply in a fixed order under the table row's lock, in one transaction:

    lock the row → assert-table-uuid → replay? (add-commit of a version already ratified with the
    same file name: the whole request is a no-op, 200) → assert-etag → metadata actions on the
    row → managed-table contract on the result → set-latest-backfilled-version → add-commit
    (commits.delta: next version, maintenance policy, the bound with server-side publication)
    → uniform → save, audit

A worked sequence (etag E0 after createTable, version 0):

    writer A: add-commit v1 (data only)                → 200, latest 1, etag still E0
    writer B: assert-etag E0, add-commit v1            → 409 CommitVersionConflictException
    writer B: reload, assert-etag E0, add-commit v2    → 200 (data-only commits never move the etag)
    writer C: assert-etag E0, set-columns + add-commit v3 → 200, etag E1
    writer A: assert-etag E0, set-properties + add-commit v4 → 409 UpdateRequirementConflict

The legacy `/delta/preview/commits` path calls the same `_ratify`/`_backfill` under the same lock,
so a commit ratified here is listed there and the other way round.

The etag is a digest of what the catalog knows of the table's metadata (columns, partitioning,
properties with the protocol and domain-metadata projections, comment): it changes exactly when
one of them changes, through either API.
"""

from __future__ import annotations

import base64
import hashlib
import json

from django.db import transaction
from django.db.models import prefetch_related_objects
from django.utils import timezone

from catalog import resolve, selectors
from catalog.choices import DataSourceFormat, PathOperation, Privilege, SecurableType, TableOperation, TableType
from catalog.models import Principal, StagingTable, Table
from catalog.services import audit, grants, managed_tables, tables, temporary_credentials
from catalog.services.common import validate_comment
from catalog.services.names import validate_name
from catalog.storage import InvalidStorageUrl, join, normalize
from catalog.asset_selectors import parse_uuid
from commits import delta, delta_log, publication
from commits.models import DeltaCommit
from ucweb.errors import (
    AlreadyExists,
    CatalogError,
    InvalidParameter,
    PermissionDenied,
    TableAlreadyExists,
    TableDoesNotExist,
    TemporarilyUnavailable,
)

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
]

# What createStagingTable advertises: what the server checks (delta_log.validate_catalog_managed)
# is required; the rest of the spec's reference list is suggested.
REQUIRED_PROTOCOL = {
    "min-reader-version": delta_log.MIN_READER_VERSION,
    "min-writer-version": delta_log.MIN_WRITER_VERSION,
    "reader-features": ["catalogManaged", "vacuumProtocolCheck"],
    "writer-features": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"],
}
SUGGESTED_PROTOCOL = {
    "reader-features": ["deletionVectors", "v2Checkpoint", "columnMapping"],
    "writer-features": ["deletionVectors", "v2Checkpoint", "columnMapping", "domainMetadata", "rowTracking"],
}
SUGGESTED_PROPERTIES = {
    "delta.enableDeletionVectors": "true",
    "delta.checkpointPolicy": "v2",
    "delta.checkpoint.writeStatsAsStruct": "true",
    "delta.checkpoint.writeStatsAsJson": "true",
    "delta.columnMapping.mode": "name",
    "delta.columnMapping.maxColumnId": None,
    "delta.enableRowTracking": "true",
    "delta.randomizeFilePrefixes": "true",
    "delta.parquet.compression.codec": "zstd",
    "delta.rowTracking.materializedRowIdColumnName": None,
    "delta.rowTracking.materializedRowCommitVersionColumnName": None,
}

# Keys the server derives (spec: "Synthetic property keys"); clients never set them directly.
MIN_READER, MIN_WRITER = "delta.minReaderVersion", "delta.minWriterVersion"
FEATURE_PREFIX = "delta.feature."
LAST_UPDATE_VERSION, LAST_COMMIT_TIMESTAMP = "delta.lastUpdateVersion", "delta.lastCommitTimestamp"
CLUSTERING_COLUMNS, ROW_ID_HIGH_WATER_MARK = "delta.clusteringColumns", "delta.rowTracking.rowIdHighWaterMark"
DOMAINS = {"delta.clustering": CLUSTERING_COLUMNS, "delta.rowTracking": ROW_ID_HIGH_WATER_MARK}
UNIFORM_PROPERTY = "delta.universalFormat.enabledFormats"

ACTIONS = (
    "set-properties", "remove-properties", "set-protocol", "set-columns", "set-partition-columns",
    "set-table-comment", "set-domain-metadata", "remove-domain-metadata", "set-latest-backfilled-version",
    "add-commit", "update-metadata-snapshot-version",
)
# Changes with a Delta log representation travel with the add-commit that writes them.
LOG_REPRESENTED = ("set-protocol", "set-columns", "set-partition-columns", "set-domain-metadata",
                   "remove-domain-metadata")


# -- errors of this API without a Unity Catalog twin -----------------------------------------------
class BadRequest(InvalidParameter):
    """Malformed request or an action this API does not know (BadRequestException)."""


class UnsupportedTableFormat(InvalidParameter):
    """Not a Delta table: the client falls back to the UC table API."""


class RequirementFailed(CatalogError):
    status = 409
    error_code = "ABORTED"
    iceberg_type = "CommitFailedException"


class CommitVersionConflict(AlreadyExists):
    """The proposed version was ratified for another file (or this transaction was ratified
    already under another version)."""


# -- parsing helpers ---------------------------------------------------------------------------------
def _int(value, field: str, *, minimum: int | None = None, required: bool = True):
    if value is None:
        if required:
            raise InvalidParameter(f"{field} is required.")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter(f"{field} must be an integer.")
    if not -(2**63) <= value < 2**63:
        raise InvalidParameter(f"{field} is out of range.")
    if minimum is not None and value < minimum:
        raise InvalidParameter(f"{field} must be at least {minimum} (is {value}).")
    return value


def _object(value, field: str, *, required: bool = True) -> dict | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise InvalidParameter(f"{field} must be an object.")
    return value


def _strings(value, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InvalidParameter(f"{field} must be an array of strings.")
    return list(value)


def _string_map(value, field: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidParameter(f"{field} must map strings to strings.")
    return dict(value)


def _millis(moment) -> int:
    return int(moment.timestamp() * 1000) if moment else 0


# -- Delta types: the wire's hyphenated names and the log's camelCase ones ------------------------
_TO_LOG = {"element-type": "elementType", "contains-null": "containsNull", "key-type": "keyType",
           "value-type": "valueType", "value-contains-null": "valueContainsNull"}
_TO_WIRE = {log: wire for wire, log in _TO_LOG.items()}


def _convert_type(value, names: dict):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "fields" and isinstance(item, list):
                out[key] = [
                    {**f, "type": _convert_type(f.get("type"), names)} if isinstance(f, dict) else f for f in item
                ]
            else:
                out[names.get(key, key)] = _convert_type(item, names) if key in names else item
        return out
    return value


_UC_TO_DELTA = {"BOOLEAN": "boolean", "BYTE": "byte", "SHORT": "short", "INT": "integer", "LONG": "long",
                "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "TIMESTAMP": "timestamp",
                "TIMESTAMP_NTZ": "timestamp_ntz", "STRING": "string", "BINARY": "binary", "VARIANT": "variant"}


def parse_columns(value, partition_columns: list[str], field: str = "columns") -> list[dict]:
    """A DeltaStructType into the catalog's column rows (the Delta field kept in type_json)."""
    struct = _object(value, field)
    if struct.get("type") != "struct" or not isinstance(struct.get("fields"), list):
        raise InvalidParameter(f"{field} must be a DeltaStructType: {{type: struct, fields: [...]}}.")
    columns = []
    for position, item in enumerate(struct["fields"]):
        where = f"{field}.fields[{position}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise InvalidParameter(f"{where}.name is required.")
        if "type" not in item:
            raise InvalidParameter(f"{where}.type is required.")
        if not isinstance(item.get("nullable", True), bool):
            raise InvalidParameter(f"{where}.nullable must be a boolean.")
        metadata = item.get("metadata", {})
        if not isinstance(metadata, dict):
            raise InvalidParameter(f"{where}.metadata must be an object.")
        log_field = {"name": item["name"], "type": _convert_type(item["type"], _TO_LOG),
                     "nullable": item.get("nullable", True), "metadata": metadata}
        try:
            column = delta_log.field_to_column(log_field, position, partition_columns)
        except (delta_log.DeltaLogError, KeyError, TypeError) as exc:
            raise InvalidParameter(f"{where}: {exc}.") from None
        comment = metadata.get("comment")
        column["comment"] = comment if isinstance(comment, str) else None
        columns.append(column)
    clean = tables.validate_columns(columns)
    names = {c["name"].lower() for c in clean}
    missing = [name for name in partition_columns if name.lower() not in names]
    if missing:
        raise InvalidParameter(f"partition-columns names columns that do not exist: {', '.join(missing)}.")
    return clean


def render_columns(table: Table) -> tuple[dict, list[str]]:
    fields, partitions = [], []
    for column in sorted(table.columns.all(), key=lambda c: c.position):
        field = None
        if column.type_json:
            try:
                field = json.loads(column.type_json)
            except json.JSONDecodeError:
                field = None
        if not isinstance(field, dict) or "type" not in field:
            if column.type_name == "DECIMAL":
                kind = f"decimal({column.type_precision or 10},{column.type_scale or 0})"
            else:
                kind = _UC_TO_DELTA.get(column.type_name or "", (column.type_text or "string").lower())
            field = {"type": kind, "metadata": {}}
        metadata = dict(field.get("metadata") or {})
        if column.comment and "comment" not in metadata:
            metadata["comment"] = column.comment
        fields.append({"name": column.name, "type": _convert_type(field["type"], _TO_WIRE),
                       "nullable": column.nullable, "metadata": metadata})
        if column.partition_index is not None:
            partitions.append((column.partition_index, column.name))
    return {"type": "struct", "fields": fields}, [name for _, name in sorted(partitions)]


# -- protocol, domain metadata and properties ------------------------------------------------------
def parse_protocol(value, field: str = "protocol") -> dict:
    protocol = _object(value, field)
    return {
        "min-reader-version": _int(protocol.get("min-reader-version"), f"{field}.min-reader-version", minimum=1),
        "min-writer-version": _int(protocol.get("min-writer-version"), f"{field}.min-writer-version", minimum=1),
        "reader-features": _strings(protocol.get("reader-features", []), f"{field}.reader-features"),
        "writer-features": _strings(protocol.get("writer-features", []), f"{field}.writer-features"),
    }


def _protocol_properties(protocol: dict) -> dict:
    keys = {MIN_READER: str(protocol["min-reader-version"]), MIN_WRITER: str(protocol["min-writer-version"])}
    for feature in sorted(set(protocol["reader-features"]) | set(protocol["writer-features"])):
        keys[FEATURE_PREFIX + feature] = "supported"
    return keys


def _protocol_of(properties: dict) -> dict:
    """The protocol action the stored projection describes (features as writer features, and as
    reader features when the feature is a reader-writer one we know)."""
    features = sorted(k[len(FEATURE_PREFIX):] for k in properties if k.startswith(FEATURE_PREFIX))
    reader_writer = {"catalogManaged", "catalogOwned-preview", "vacuumProtocolCheck", "deletionVectors",
                     "v2Checkpoint", "columnMapping", "timestampNtz", "typeWidening", "variantType"}
    try:
        reader = int(properties.get(MIN_READER, "0"))
        writer = int(properties.get(MIN_WRITER, "0"))
    except ValueError:
        reader = writer = 0
    return {"minReaderVersion": reader, "minWriterVersion": writer,
            "readerFeatures": [f for f in features if f in reader_writer], "writerFeatures": features}


def _set_protocol(properties: dict, protocol: dict) -> None:
    for key in [k for k in properties if k.startswith(FEATURE_PREFIX) or k in (MIN_READER, MIN_WRITER)]:
        del properties[key]
    properties.update(_protocol_properties(protocol))


def parse_domains(value, field: str) -> dict:
    domains = _object(value, field)
    clean = {}
    for name, config in domains.items():
        if name not in DOMAINS:
            raise InvalidParameter(f"{field}: unknown domain {name!r} (known: {', '.join(sorted(DOMAINS))}).")
        config = _object(config, f"{field}.{name}")
        if name == "delta.clustering":
            paths = config.get("clusteringColumns")
            if not isinstance(paths, list) or not all(
                isinstance(p, list) and p and all(isinstance(part, str) for part in p) for p in paths
            ):
                raise InvalidParameter(f"{field}.delta.clustering.clusteringColumns must be an array of paths.")
            clean[name] = json.dumps(paths, separators=(",", ":"))
        else:
            clean[name] = str(_int(config.get("rowIdHighWaterMark"), f"{field}.delta.rowTracking.rowIdHighWaterMark",
                                   minimum=-1))
    return clean


def _is_synthetic(key: str) -> bool:
    return key.startswith(FEATURE_PREFIX) or key in (
        MIN_READER, MIN_WRITER, LAST_UPDATE_VERSION, LAST_COMMIT_TIMESTAMP, CLUSTERING_COLUMNS, ROW_ID_HIGH_WATER_MARK)


def _check_contract(table_id, properties: dict, protocol: dict | None = None) -> None:
    """The managed-table contract (the checks seed 000 makes on version 0) on the catalog's view:
    the declared protocol when the request carries one, else the stored projection."""
    if protocol is not None:
        protocol_action = {"minReaderVersion": protocol["min-reader-version"],
                           "minWriterVersion": protocol["min-writer-version"],
                           "readerFeatures": protocol["reader-features"], "writerFeatures": protocol["writer-features"]}
    else:
        protocol_action = _protocol_of(properties)
    actions = [{"protocol": protocol_action}, {"metaData": {"configuration": properties}}]
    try:
        delta_log.validate_catalog_managed(actions, table_id=str(table_id))
    except delta_log.DeltaLogError as exc:
        raise InvalidParameter(f"Not a catalog-managed Delta table: {exc}.") from None


def _uniform_enabled(properties: dict) -> bool:
    return "iceberg" in [f.strip().lower() for f in properties.get(UNIFORM_PROPERTY, "").split(",")]


def parse_uniform(value, *, location: str, field: str = "uniform") -> dict | None:
    if value is None:
        return None
    iceberg = _object(_object(value, field).get("iceberg"), f"{field}.iceberg")
    metadata_location = iceberg.get("metadata-location")
    if not isinstance(metadata_location, str) or not metadata_location:
        raise InvalidParameter(f"{field}.iceberg.metadata-location is required.")
    try:
        inside = normalize(metadata_location).startswith(normalize(location).rstrip("/") + "/")
    except InvalidStorageUrl:
        inside = False
    if not inside:
        raise InvalidParameter(f"{field}.iceberg.metadata-location must be inside the table's location {location}.")
    clean = {
        "metadata_location": metadata_location,
        "converted_delta_version": _int(iceberg.get("converted-delta-version"),
                                        f"{field}.iceberg.converted-delta-version", minimum=0),
        "converted_delta_timestamp": _int(iceberg.get("converted-delta-timestamp"),
                                          f"{field}.iceberg.converted-delta-timestamp", minimum=0),
    }
    base = _int(iceberg.get("base-converted-delta-version"), f"{field}.iceberg.base-converted-delta-version",
                minimum=0, required=False)
    if base is not None:
        clean["base_converted_delta_version"] = base
    return clean


def render_uniform(stored: dict | None) -> dict | None:
    if not stored:
        return None
    iceberg = {"metadata-location": stored.get("metadata_location"),
               "converted-delta-version": stored.get("converted_delta_version")}
    stamp = stored.get("converted_delta_timestamp")
    if isinstance(stamp, int):
        iceberg["converted-delta-timestamp"] = stamp
    elif isinstance(stamp, str):  # the legacy API stores the text it was sent
        try:
            iceberg["converted-delta-timestamp"] = int(
                timezone.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            iceberg["converted-delta-timestamp"] = 0
    if stored.get("base_converted_delta_version") is not None:
        iceberg["base-converted-delta-version"] = stored["base_converted_delta_version"]
    return {"iceberg": iceberg}


# -- reading a table -----------------------------------------------------------------------------
def etag(table: Table) -> str:
    columns = [(c.name, c.type_json, c.type_text, c.nullable, c.partition_index, c.comment)
               for c in sorted(table.columns.all(), key=lambda c: c.position)]
    state = json.dumps({"comment": table.comment, "properties": table.properties, "columns": columns},
                       sort_keys=True, separators=(",", ":"), default=str)
    return base64.urlsafe_b64encode(hashlib.sha256(state.encode()).digest()[:12]).decode()


def _is_catalog_managed(table: Table) -> bool:
    return table.table_type == TableType.MANAGED and table.latest_version is not None


def catalog_properties(table: Table) -> dict:
    """The table's properties as clients discover it. A table created through the seed 000 path
    stores no protocol projection; its version 0 was checked for at least REQUIRED_PROTOCOL, and
    readers (DuckDB, Delta) decide "catalog-managed" by delta.feature.catalogManaged, so the
    projection is added here (the Delta log stays authoritative for the full protocol)."""
    properties = dict(table.properties or {})
    if _is_catalog_managed(table) and MIN_READER not in properties:
        for key, value in _protocol_properties(REQUIRED_PROTOCOL).items():
            properties.setdefault(key, value)
        properties.setdefault(delta_log.TABLE_ID_PROPERTY, str(table.id))
    return properties


def describe(table: Table) -> dict:
    """The loadTable answer, from the row (columns prefetched) and its unbackfilled commits."""
    columns, partitions = render_columns(table)
    properties = catalog_properties(table)
    managed = _is_catalog_managed(table)
    properties.setdefault(LAST_UPDATE_VERSION, "0")
    properties.setdefault(LAST_COMMIT_TIMESTAMP, str(_millis(table.created_at)))
    try:
        last_version = int(properties[LAST_UPDATE_VERSION])
        last_timestamp = int(properties[LAST_COMMIT_TIMESTAMP])
    except ValueError:
        last_version, last_timestamp = 0, _millis(table.created_at)
    body = {
        "metadata": {
            "etag": etag(table),
            "table-type": table.table_type,
            "table-uuid": str(table.id),
            "location": table.storage_location,
            "created-time": _millis(table.created_at),
            "updated-time": _millis(table.updated_at or table.created_at),
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
        rows = DeltaCommit.objects.filter(
            table=table, version__gt=table.latest_published_version or 0, version__lte=table.latest_version
        ).order_by("-version").only("version", "timestamp", "file_name", "file_size", "file_modification_timestamp")
        body["commits"] = [
            {"version": row.version, "timestamp": row.timestamp, "file-name": row.file_name,
             "file-size": row.file_size, "file-modification-timestamp": row.file_modification_timestamp}
            for row in rows
        ]
        body["latest-table-version"] = table.latest_version
    uniform = render_uniform(table.uniform_iceberg)
    if uniform is not None:
        body["uniform"] = uniform
    return body


def _table(catalog: str, schema: str, name: str, *, for_update: bool = False) -> Table:
    return selectors.get_table(catalog, schema, name, for_update=for_update)


def _access(caller: Principal, table: Table) -> grants.Access:
    """The caller's access to a table; a table the caller may not see answers as a missing one
    (catalog.resolve), at the level that is hidden from them."""
    access = grants.Access.load(caller, table)
    level = resolve.hidden_level(access, SecurableType.TABLE)
    if level is not None:
        catalog_name, schema_name = table.schema.catalog.name, table.schema.name
        raise resolve.hidden([
            selectors.table_not_found(catalog_name, schema_name, table.name),
            selectors.schema_not_found(catalog_name, schema_name),
            selectors.catalog_not_found(catalog_name),
        ][level])
    grants.require_schema_use(access)
    return access


def _require(caller: Principal, table: Table, *privileges: str) -> grants.Access:
    access = _access(caller, table)
    for privilege in privileges:
        access.require(access.has(privilege), f"Missing {privilege} on table {table.full_name}.")
    return access


def _require_delta(table: Table) -> None:
    if table.data_source_format != DataSourceFormat.DELTA or table.table_type not in (
        TableType.MANAGED, TableType.EXTERNAL
    ):
        raise UnsupportedTableFormat(
            f"Table {table.full_name} is a {table.table_type} {table.data_source_format or ''} table, not a Delta "
            "table; use the Unity Catalog table API."
        )


def load_table(*, caller: Principal, catalog: str, schema: str, name: str) -> dict:
    table = _table(catalog, schema, name)
    _require(caller, table, Privilege.SELECT)
    _require_delta(table)
    return _after(table)


def table_exists(*, caller: Principal, catalog: str, schema: str, name: str) -> None:
    table = _table(catalog, schema, name)
    access = _access(caller, table)
    access.require(access.has(Privilege.SELECT) or access.has(Privilege.MODIFY),
                   f"Missing SELECT on table {table.full_name}.")


def list_tables(*, caller: Principal, catalog: str, schema: str, max_results=None, page_token=None):
    queryset = tables.visible_tables(caller=caller, catalog_name=catalog, schema_name=schema)
    items, token = selectors.paginate(queryset, max_results=max_results, page_token=page_token)
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
    selectors.get_catalog(catalog)
    if not any(major == SUPPORTED_MAJOR and minor >= SUPPORTED_MINOR for major, minor in offered):
        raise InvalidParameter(
            f"No protocol version in common: the server supports {PROTOCOL_VERSION}, "
            f"the client offered {protocol_versions}."
        )
    return {"endpoints": ENDPOINTS, "protocol-version": PROTOCOL_VERSION}


# -- credentials -----------------------------------------------------------------------------------
def _credentials(answer: dict, operation: str) -> dict:
    config = {}
    aws = answer.get("aws_temp_credentials")
    if aws:
        config = {"s3.access-key-id": aws["access_key_id"], "s3.secret-access-key": aws["secret_access_key"],
                  "s3.session-token": aws["session_token"]}
    return {"storage-credentials": [{
        "prefix": answer["url"], "operation": operation, "expiration-time-ms": answer["expiration_time"],
        "config": config,
    }]}


def _operation(value) -> str:
    if value not in (TableOperation.READ, TableOperation.READ_WRITE):
        raise BadRequest("operation must be READ or READ_WRITE.")
    return value


def table_credentials(*, caller: Principal, catalog: str, schema: str, name: str, operation) -> dict:
    """READ needs SELECT; READ_WRITE needs SELECT and MODIFY (403 otherwise: no silent downgrade)."""
    operation = _operation(operation)
    table = _table(catalog, schema, name)
    privileges = [Privilege.SELECT] + ([Privilege.MODIFY] if operation == TableOperation.READ_WRITE else [])
    _require(caller, table, *privileges)
    if not table.storage_location:
        raise UnsupportedTableFormat(f"Table {table.full_name} has no storage location.")
    answer = temporary_credentials.vend_for_url(
        table.storage_location, write=operation == TableOperation.READ_WRITE, caller=caller)
    audit.record(principal=caller.name, action="generateTemporaryTableCredentials", securable_type="table",
                 securable_name=table.full_name, securable_id=table.id,
                 details={"operation": operation, "url": answer["url"], "api": "delta/v1"})
    return _credentials(answer, operation)


def staging_table_credentials(*, caller: Principal, table_id) -> dict:
    staging = StagingTable.objects.filter(id=parse_uuid(table_id, field="table_id")).first()
    if staging is None or staging.finalized_at is not None:
        raise TableDoesNotExist(f"No staging table with id {table_id}.")
    if staging.created_by != caller.name:
        raise PermissionDenied("Only the principal that created the staging table may get its credentials.")
    answer = temporary_credentials.vend_for_url(staging.staging_location, write=True, caller=caller)
    return _credentials(answer, TableOperation.READ_WRITE)


def path_credentials(*, caller: Principal, location, operation) -> dict:
    """The same checks as the UC API's temporary-path-credentials (external locations only)."""
    operation = _operation(operation)
    answer = temporary_credentials.for_path(
        caller=caller, url=location,
        operation=PathOperation.PATH_READ if operation == TableOperation.READ else PathOperation.PATH_READ_WRITE,
    )
    return _credentials(answer, operation)


# -- staging and creation ----------------------------------------------------------------------------
def create_staging_table(*, caller: Principal, catalog: str, schema: str, body: dict) -> dict:
    staging = managed_tables.create_staging_table(
        caller=caller, name=body.get("name"), catalog_name=catalog, schema_name=schema)
    try:
        credentials = _credentials(
            temporary_credentials.vend_for_url(staging.staging_location, write=True, caller=caller),
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
        "required-protocol": REQUIRED_PROTOCOL,
        "suggested-protocol": SUGGESTED_PROTOCOL,
        "required-properties": {"delta.enableInCommitTimestamps": "true",
                                delta_log.TABLE_ID_PROPERTY: str(staging.id)},
        "suggested-properties": SUGGESTED_PROPERTIES,
    }


def create_table(*, caller: Principal, catalog: str, schema: str, body: dict) -> dict:
    name = body.get("name")
    validate_name(name)
    table_type = body.get("table-type")
    if table_type not in (TableType.MANAGED, TableType.EXTERNAL):
        raise InvalidParameter("table-type must be MANAGED or EXTERNAL.")
    location = body.get("location")
    if not isinstance(location, str) or not location:
        raise InvalidParameter("location is required.")
    partitions = _strings(body.get("partition-columns", []), "partition-columns")
    columns = parse_columns(body.get("columns"), partitions)
    properties = _string_map(body.get("properties"), "properties")
    protocol = parse_protocol(body.get("protocol"))
    domains = parse_domains(body.get("domain-metadata"), "domain-metadata") if body.get("domain-metadata") else {}
    timestamp = _int(body.get("last-commit-timestamp-ms"), "last-commit-timestamp-ms", minimum=0)
    comment = validate_comment(body.get("comment"))
    synthetic = sorted(key for key in properties if _is_synthetic(key) and not key.startswith(FEATURE_PREFIX))
    if synthetic:
        raise InvalidParameter(f"properties must not carry server-derived keys: {', '.join(synthetic)}.")
    stored = {**properties, **_protocol_properties(protocol),
              **{DOMAINS[domain]: value for domain, value in domains.items()},
              LAST_UPDATE_VERSION: "0", LAST_COMMIT_TIMESTAMP: str(timestamp)}

    with transaction.atomic():
        if table_type == TableType.EXTERNAL:
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
                selectors.get_schema(catalog, schema)
                raise TableDoesNotExist(f"No staging table has the location {location}.")
            _check_contract(staging.id, stored, protocol)
            uniform = parse_uniform(body.get("uniform"), location=staging_location)
            if _uniform_enabled(stored) != (uniform is not None):
                raise InvalidParameter("uniform is required exactly when the properties enable UniForm "
                                       f"({UNIFORM_PROPERTY} includes iceberg).")
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
    table = _table(catalog, schema, name)
    tables.delete_table(caller=caller, full_name=table.full_name)


@transaction.atomic
def rename_table(*, caller: Principal, catalog: str, schema: str, name: str, body: dict) -> None:
    new_name = body.get("new-name")
    validate_name(new_name, field="new-name")
    table = _table(catalog, schema, name, for_update=True)
    access = _access(caller, table)
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
    table = _table(catalog, schema, name)
    _require(caller, table, Privilege.SELECT)
    if str(parse_uuid(body.get("table-id"), field="table-id")) != str(table.id):
        raise InvalidParameter(f"table-id does not match table {table.full_name}.")
    report = _object(body.get("report"), "report", required=False) or {}
    commit_report = _object(report.get("commit-report"), "report.commit-report", required=False)
    legacy = {"table_id": str(table.id), "table_uri": table.storage_location}
    if commit_report is not None:
        histogram = _object(commit_report.get("file-size-histogram"), "file-size-histogram", required=False)
        converted = {key.replace("-", "_"): value for key, value in commit_report.items()
                     if key != "file-size-histogram"}
        if histogram is not None:
            converted["file_size_histogram"] = {
                key.replace("-", "_"): value for key, value in histogram.items() if key != "commit-version"}
        version = (histogram or {}).get("commit-version")
        converted["commit_version"] = version if version is not None else table.latest_version or 0
        legacy["report"] = {"commit_report": converted}
    delta.write_metrics(caller=caller, body=legacy)


# -- updateTable -----------------------------------------------------------------------------------
def _parse_update_request(body: dict) -> tuple[dict, dict]:
    requirements, updates = body.get("requirements"), body.get("updates")
    if not isinstance(requirements, list) or not isinstance(updates, list):
        raise BadRequest("requirements and updates must be arrays.")
    if not updates:
        raise InvalidParameter("updates must contain at least one action.")
    asserted = {}
    for index, item in enumerate(requirements):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind not in ("assert-table-uuid", "assert-etag"):
            raise BadRequest(f"requirements[{index}].type must be assert-table-uuid or assert-etag.")
        if kind in asserted:
            raise InvalidParameter(f"At most one {kind} requirement per request.")
        key = "uuid" if kind == "assert-table-uuid" else "etag"
        if not isinstance(item.get(key), str) or not item[key]:
            raise InvalidParameter(f"requirements[{index}].{key} is required.")
        asserted[kind] = item[key]
    if "assert-table-uuid" not in asserted:
        raise InvalidParameter("Every update needs an assert-table-uuid requirement.")
    asserted["assert-table-uuid"] = str(parse_uuid(asserted["assert-table-uuid"], field="assert-table-uuid.uuid"))
    actions = {}
    for index, item in enumerate(updates):
        action = item.get("action") if isinstance(item, dict) else None
        if action not in ACTIONS:
            raise BadRequest(f"updates[{index}].action {action!r} is not an action of this API.")
        if action in actions:
            raise InvalidParameter(f"At most one {action} action per request.")
        actions[action] = item
    return asserted, actions


class _Update:
    """The parsed actions of one updateTable request (shape checked before any lock is taken)."""

    def __init__(self, actions: dict):
        self.actions = actions
        get = actions.get
        self.set_properties = _string_map(get("set-properties").get("updates"), "set-properties.updates") \
            if "set-properties" in actions else None
        self.remove_properties = _strings(get("remove-properties").get("removals"), "remove-properties.removals") \
            if "remove-properties" in actions else None
        for keys in (self.set_properties or {}, self.remove_properties or []):
            synthetic = sorted(k for k in keys if _is_synthetic(k))
            if synthetic:
                raise InvalidParameter(f"Server-derived properties cannot be set or removed: {', '.join(synthetic)}.")
        if self.set_properties and self.remove_properties and set(self.set_properties) & set(self.remove_properties):
            raise InvalidParameter("set-properties and remove-properties touch the same key.")
        self.protocol = parse_protocol(get("set-protocol").get("protocol"), "set-protocol.protocol") \
            if "set-protocol" in actions else None
        self.partitions = _strings(get("set-partition-columns").get("partition-columns"),
                                   "set-partition-columns.partition-columns") \
            if "set-partition-columns" in actions else None
        self.columns_value = get("set-columns").get("columns") if "set-columns" in actions else None
        if "set-columns" in actions and self.columns_value is None:
            raise InvalidParameter("set-columns.columns is required.")
        self.comment = None
        if "set-table-comment" in actions:
            self.comment = get("set-table-comment").get("comment")
            if not isinstance(self.comment, str):
                raise InvalidParameter("set-table-comment.comment must be a string.")
        self.set_domains = parse_domains(get("set-domain-metadata").get("updates"), "set-domain-metadata.updates") \
            if "set-domain-metadata" in actions else None
        self.remove_domains = _strings(get("remove-domain-metadata").get("domains"), "remove-domain-metadata.domains") \
            if "remove-domain-metadata" in actions else None
        if self.remove_domains and any(d not in DOMAINS for d in self.remove_domains):
            raise InvalidParameter(f"remove-domain-metadata: known domains are {', '.join(sorted(DOMAINS))}.")
        if self.set_domains and self.remove_domains and set(self.set_domains) & set(self.remove_domains):
            raise InvalidParameter("set-domain-metadata and remove-domain-metadata touch the same domain.")
        self.commit = None
        if "add-commit" in actions:
            raw = _object(get("add-commit").get("commit"), "add-commit.commit")
            self.commit = delta.CommitInfo.parse({
                "version": raw.get("version"), "timestamp": raw.get("timestamp"), "file_name": raw.get("file-name"),
                "file_size": raw.get("file-size"), "file_modification_timestamp": raw.get("file-modification-timestamp"),
            })
            self.uniform_value = get("add-commit").get("uniform")
        self.backfilled = _int(get("set-latest-backfilled-version").get("latest-published-version"),
                               "set-latest-backfilled-version.latest-published-version", minimum=0) \
            if "set-latest-backfilled-version" in actions else None
        self.snapshot = None
        if "update-metadata-snapshot-version" in actions:
            item = get("update-metadata-snapshot-version")
            self.snapshot = (_int(item.get("last-commit-version"), "last-commit-version", minimum=0),
                             _int(item.get("last-commit-timestamp-ms"), "last-commit-timestamp-ms", minimum=0))
        self.changes_metadata = any(a in actions for a in (
            "set-properties", "remove-properties", "set-protocol", "set-columns", "set-partition-columns",
            "set-table-comment", "set-domain-metadata", "remove-domain-metadata"))


def _apply_metadata(table: Table, update: _Update, *, caller: Principal, version: int, timestamp: int) -> list[str]:
    properties = dict(table.properties or {})
    changed = []
    if update.set_properties:
        properties.update(update.set_properties)
    for key in update.remove_properties or []:
        properties.pop(key, None)
    if update.protocol is not None:
        _set_protocol(properties, update.protocol)
    for domain, value in (update.set_domains or {}).items():
        properties[DOMAINS[domain]] = value
    for domain in update.remove_domains or []:
        properties.pop(DOMAINS[domain], None)
    if update.columns_value is not None or update.partitions is not None:
        columns_now, partitions_now = render_columns(table)
        partitions = update.partitions if update.partitions is not None else partitions_now
        columns = parse_columns(update.columns_value if update.columns_value is not None else columns_now,
                                partitions, field="set-columns.columns")
        tables.replace_columns(table, columns)
        table._prefetched_objects_cache = {}
    if update.comment is not None:
        table.comment = update.comment
        changed.append("comment")
    grants.require_policy_unchanged_or_owner(grants.Access.load(caller, table), table.properties or {}, properties)
    properties[LAST_UPDATE_VERSION] = str(version)
    properties[LAST_COMMIT_TIMESTAMP] = str(timestamp)
    table.properties = properties
    return changed + ["properties"]


def _replayed(table: Table, commit) -> bool:
    if commit is None or commit.version > table.latest_version:
        return False
    return DeltaCommit.objects.filter(table=table, version=commit.version, file_name=commit.file_name).exists()


def _check_backfill(table: Table, version: int) -> None:
    """Never forget a ratified commit whose `_delta_log/<v>.json` was not seen: each newly
    reported version must be published (the server publishes it from the staged file when it
    can); otherwise the report is refused and the catalog keeps the commits."""
    start = table.latest_published_version or 0
    if version <= start or version > table.latest_version:
        return  # a no-op, or refused by commits.delta with its own message
    for commit in DeltaCommit.objects.filter(table=table, version__gt=start, version__lte=version).order_by("version"):
        if not publication.publish_one(table.storage_location, commit):
            raise InvalidParameter(
                f"Version {commit.version} of table {table.full_name} is not published: "
                f"{publication.log_file(table.storage_location, commit.version)} is missing or differs from "
                f"the ratified commit {commit.file_name}, and the server cannot publish it. The catalog keeps "
                "its record of it."
            )


def _ratified_once(table: Table, txn_id: str | None, version: int) -> None:
    """A client that lost the response to an accepted add-commit may rebuild its transaction on
    the next version (delta-io/delta#7700). The same commitInfo.txnId is the same data: refused."""
    if txn_id is None:
        return
    earlier = (DeltaCommit.objects.filter(table=table, txn_id=txn_id).exclude(version=version)
               .values_list("version", flat=True).first())
    if earlier is not None:
        raise CommitVersionConflict(
            f"Transaction {txn_id} was ratified already as version {earlier} of table {table.full_name}; "
            "it is not ratified again."
        )


def update_table(*, caller: Principal, catalog: str, schema: str, name: str, body: dict) -> dict:
    asserted, actions = _parse_update_request(body)
    update = _Update(actions)
    with transaction.atomic():
        table = _table(catalog, schema, name, for_update=True)
        _require(caller, table, Privilege.MODIFY)
        _require_delta(table)
        if str(table.id) != asserted["assert-table-uuid"]:
            raise RequirementFailed(f"assert-table-uuid failed: table {table.full_name} is {table.id}.")
        managed = _is_catalog_managed(table)
        if not managed and (update.commit is not None or update.backfilled is not None):
            raise InvalidParameter(f"Table {table.full_name} is not a catalog-managed table: add-commit and "
                                   "set-latest-backfilled-version are for managed tables only.")
        if managed and update.snapshot is not None:
            raise InvalidParameter("update-metadata-snapshot-version is for external tables only.")
        if managed and update.commit is None:
            lone = [a for a in LOG_REPRESENTED if a in actions]
            if lone:
                raise InvalidParameter(f"{', '.join(lone)} must travel with the add-commit whose staged commit "
                                       "writes the same change to the Delta log.")
        if _replayed(table, update.commit):
            return _after(table)  # an add-commit that was accepted already: the whole request is a no-op
        if "assert-etag" in asserted:
            current = etag(table)
            if asserted["assert-etag"] != current:
                raise RequirementFailed(f"assert-etag failed: the metadata of table {table.full_name} changed.")
        changed = ["updated_at", "updated_by"]
        version = update.commit.version if update.commit else (table.latest_version or 0)
        timestamp = update.commit.timestamp if update.commit else _millis(timezone.now())
        if update.snapshot is not None:
            version, timestamp = update.snapshot
        if update.changes_metadata:
            projected = MIN_READER in (table.properties or {})
            changed += _apply_metadata(table, update, caller=caller, version=version, timestamp=timestamp)
            if managed and (projected or update.protocol is not None):
                _check_contract(table.id, table.properties, update.protocol)
        elif update.snapshot is not None:
            table.properties = {**(table.properties or {}), LAST_UPDATE_VERSION: str(version),
                                LAST_COMMIT_TIMESTAMP: str(timestamp)}
            changed.append("properties")
        uniform = None
        if update.commit is not None:
            uniform = parse_uniform(update.uniform_value, location=table.storage_location, field="add-commit.uniform")
            if _uniform_enabled(table.properties or {}) != (uniform is not None):
                raise InvalidParameter("add-commit.uniform is required exactly when the table's properties after "
                                       f"this request enable UniForm ({UNIFORM_PROPERTY} includes iceberg).")
            stored = table.uniform_iceberg or {}
            base = (uniform or {}).get("base_converted_delta_version")
            if base is not None and base != stored.get("converted_delta_version"):
                raise RequirementFailed(
                    f"uniform.iceberg.base-converted-delta-version {base} is not the stored converted-delta-version "
                    f"{stored.get('converted_delta_version')}.")
        if update.backfilled is not None:
            _check_backfill(table, update.backfilled)
            changed += delta._backfill(table, update.backfilled)
        if update.commit is not None:
            staged = delta.read_staged_commit(table.storage_location, update.commit.file_name)
            txn_id = staged.txn_id
            _ratified_once(table, txn_id, update.commit.version)
            try:
                changed += delta._ratify(table, update.commit, caller=caller, metadata=None, uniform=None,
                                         staged=staged)
            except AlreadyExists as exc:
                raise CommitVersionConflict(exc.message) from None
            if txn_id is not None:
                DeltaCommit.objects.filter(table=table, version=update.commit.version).update(txn_id=txn_id)
            if uniform is not None:
                table.uniform_iceberg = uniform
                changed.append("uniform_iceberg")
            delta._nudge_publication(table)
        table.updated_at = timezone.now()
        table.updated_by = caller.name
        table.save(update_fields=sorted(set(changed)))
        audit.record(
            principal=caller.name, action="updateDeltaTable", securable_type="table",
            securable_name=table.full_name, securable_id=table.id,
            details={"actions": sorted(actions), "version": update.commit.version if update.commit else None,
                     "backfilled": update.backfilled},
        )
    return _after(table)


def _after(table: Table) -> dict:
    """The loadTable answer for a row already read (and, after an update, saved)."""
    table._prefetched_objects_cache = {}
    prefetch_related_objects([table], "columns")
    return describe(table)


def staged_commit_url(table: Table, file_name: str) -> str:
    return join(table.storage_location, "_delta_log", "_staged_commits", file_name)
