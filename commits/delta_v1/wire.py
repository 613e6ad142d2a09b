"""The Delta REST API's wire (managed tables spec 1.0): its errors, and the parsing and rendering
of its bodies (hyphenated names) into what the services take. Every rule about a value's shape
lives here; commits.delta_v1.update and commits.delta_v1.tables decide the rest."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from uuid import UUID

from django.utils import timezone
from pydantic import Field, WithJsonSchema

from catalog import locations
from catalog.models import Table
from catalog.services.tables import validate_columns
from commits.delta_wire import DeltaCommit, integer
from commits.formats import delta_log, delta_types
from commits.formats import delta_protocol as dp
from ucweb.bodies import Hyphenated, NonEmpty, read
from ucweb.errors import AlreadyExists, CatalogError, InvalidParameter
from ucweb.ids import parse_uuid

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


def millis(moment) -> int:
    return int(moment.timestamp() * 1000) if moment else 0


# -- the bodies of the OpenAPI document ---------------------------------------------------------------
# Requests are read by the functions below (their refusals name this API's members); these models
# describe the bodies for the document, in this API's spelling.
Json = Annotated[Any, WithJsonSchema({})]
StructType = Annotated[Any, WithJsonSchema({"description": "DeltaStructType"})]


class DeltaTableMetadata(Hyphenated):
    etag: str
    table_type: str
    table_uuid: UUID
    location: str
    created_time: int
    updated_time: int
    columns: StructType
    partition_columns: list[str]
    properties: dict[str, str]
    last_commit_version: int
    last_commit_timestamp_ms: int


class DeltaLoadTableResponse(Hyphenated):
    metadata: DeltaTableMetadata
    commits: list[DeltaCommit] = None
    uniform: Json = None
    latest_table_version: int = None


class DeltaCatalogConfig(Hyphenated):
    endpoints: list[str]
    protocol_version: str


class DeltaStorageCredential(Hyphenated):
    prefix: str
    operation: str
    expiration_time_ms: int
    config: dict[str, str]


class DeltaCredentialsResponse(Hyphenated):
    storage_credentials: list[DeltaStorageCredential]


class DeltaCreateStagingTableRequest(Hyphenated):
    name: NonEmpty


class DeltaStagingTableResponse(Hyphenated):
    table_id: UUID
    table_type: str
    location: str
    storage_credentials: list[DeltaStorageCredential]
    required_protocol: Json
    suggested_protocol: Json
    required_properties: Json
    suggested_properties: Json


class DeltaCreateTableRequest(Hyphenated):
    name: NonEmpty
    table_type: Literal["MANAGED", "EXTERNAL"]
    location: NonEmpty
    comment: NonEmpty = None
    columns: StructType
    partition_columns: list[NonEmpty] = None
    properties: dict[str, NonEmpty]
    protocol: Json
    domain_metadata: Json = None
    last_commit_timestamp_ms: int
    uniform: Json = None


class DeltaUpdateTableRequest(Hyphenated):
    requirements: list[dict] = Field(description="assert-table-uuid (required), assert-etag")
    updates: list[dict] = Field(description=(
        "add-commit, set-latest-backfilled-version, set-properties, remove-properties, set-protocol, "
        "set-columns, set-partition-columns, set-table-comment, set-domain-metadata, "
        "remove-domain-metadata, update-metadata-snapshot-version (external tables)"))


class DeltaRenameTableRequest(Hyphenated):
    new_name: NonEmpty


class DeltaReportMetricsRequest(Hyphenated):
    table_id: UUID
    report: Json = None


class DeltaListTablesResponse(Hyphenated):
    tables: list[dict]
    next_page_token: str = None


# -- parsing helpers ---------------------------------------------------------------------------------
def json_object(value, field: str, *, required: bool = True) -> dict | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise InvalidParameter(f"{field} must be an object.")
    return value


def string_list(value, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InvalidParameter(f"{field} must be an array of strings.")
    return list(value)


def string_map(value, field: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidParameter(f"{field} must map strings to strings.")
    return dict(value)




def parse_columns(value, partition_columns: list[str], field: str = "columns") -> list[dict]:
    """A DeltaStructType into the catalog's column rows (the Delta field kept in type_json)."""
    struct = json_object(value, field)
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
        log_field = {"name": item["name"], "type": delta_types.wire_to_log(item["type"]),
                     "nullable": item.get("nullable", True), "metadata": metadata}
        try:
            column = delta_types.field_to_column(log_field, position, partition_columns)
        except delta_log.DeltaLogError as exc:
            raise InvalidParameter(f"{where}: {exc}.") from None
        comment = metadata.get("comment")
        column["comment"] = comment if isinstance(comment, str) else None
        columns.append(column)
    clean = validate_columns(columns)
    names = {c["name"].lower() for c in clean}
    missing = [name for name in partition_columns if name.lower() not in names]
    if missing:
        raise InvalidParameter(f"partition-columns names columns that do not exist: {', '.join(missing)}.")
    return clean


def render_columns(table: Table) -> tuple[dict, list[str]]:
    """The table's columns as a DeltaStructType, and its partition columns."""
    columns = sorted(table.columns.all(), key=lambda c: c.position)
    partitions = sorted((c.partition_index, c.name) for c in columns if c.partition_index is not None)
    return ({"type": "struct", "fields": [delta_types.column_to_field(c) for c in columns]},
            [name for _, name in partitions])


# -- protocol, domain metadata and properties ------------------------------------------------------
def parse_protocol(value, field: str = "protocol") -> dict:
    protocol = json_object(value, field)
    return {
        "min-reader-version": integer(protocol.get("min-reader-version"), f"{field}.min-reader-version", minimum=1),
        "min-writer-version": integer(protocol.get("min-writer-version"), f"{field}.min-writer-version", minimum=1),
        "reader-features": string_list(protocol.get("reader-features", []), f"{field}.reader-features"),
        "writer-features": string_list(protocol.get("writer-features", []), f"{field}.writer-features"),
    }



def parse_domains(value, field: str) -> dict:
    domains = json_object(value, field)
    clean = {}
    for name, config in domains.items():
        if name not in dp.DOMAINS:
            raise InvalidParameter(f"{field}: unknown domain {name!r} (known: {', '.join(sorted(dp.DOMAINS))}).")
        config = json_object(config, f"{field}.{name}")
        if name == "delta.clustering":
            paths = config.get("clusteringColumns")
            if not isinstance(paths, list) or not all(
                isinstance(p, list) and p and all(isinstance(part, str) for part in p) for p in paths
            ):
                raise InvalidParameter(f"{field}.delta.clustering.clusteringColumns must be an array of paths.")
            clean[name] = json.dumps(paths, separators=(",", ":"))
        else:
            clean[name] = str(integer(config.get("rowIdHighWaterMark"), f"{field}.delta.rowTracking.rowIdHighWaterMark",
                                   minimum=-1))
    return clean



def check_contract(table_id, properties: dict, protocol: dict | None = None) -> None:
    """The managed-table contract (the checks seed 000 makes on version 0) on the catalog's view:
    the declared protocol when the request carries one, else the stored projection."""
    action = dp.protocol_action(protocol) if protocol is not None else dp.protocol_of(properties)
    actions = [{"protocol": action}, {"metaData": {"configuration": properties}}]
    try:
        delta_log.validate_catalog_managed(actions, table_id=str(table_id))
    except delta_log.DeltaLogError as exc:
        raise InvalidParameter(f"Not a catalog-managed Delta table: {exc}.") from None



def parse_uniform(value, *, location: str, field: str = "uniform") -> dict | None:
    if value is None:
        return None
    iceberg = json_object(json_object(value, field).get("iceberg"), f"{field}.iceberg")
    metadata_location = iceberg.get("metadata-location")
    if not isinstance(metadata_location, str) or not metadata_location:
        raise InvalidParameter(f"{field}.iceberg.metadata-location is required.")
    clean = {
        "metadata_location": locations.file_inside_table(metadata_location, location,
                                                         field=f"{field}.iceberg.metadata-location"),
        "converted_delta_version": integer(iceberg.get("converted-delta-version"),
                                        f"{field}.iceberg.converted-delta-version", minimum=0),
        "converted_delta_timestamp": integer(iceberg.get("converted-delta-timestamp"),
                                          f"{field}.iceberg.converted-delta-timestamp", minimum=0),
    }
    base = integer(iceberg.get("base-converted-delta-version"), f"{field}.iceberg.base-converted-delta-version",
                minimum=0, required=False)
    if base is not None:
        clean["base_converted_delta_version"] = base
    return clean


def render_uniform(stored: dict | None, location: str) -> dict | None:
    """The stored UniForm metadata of the table at `location`; none when the metadata location is
    not inside the table (a row written before that was checked), which readers must not follow."""
    if not stored or not locations.is_file_inside_table(stored.get("metadata_location"), location):
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



# -- updateTable -----------------------------------------------------------------------------------
def parse_update_request(body: dict) -> tuple[dict, dict]:
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


class Update:
    """The parsed actions of one updateTable request (shape checked before any lock is taken)."""

    def __init__(self, actions: dict):
        self.actions = actions
        get = actions.get
        self.set_properties = string_map(get("set-properties").get("updates"), "set-properties.updates") \
            if "set-properties" in actions else None
        self.remove_properties = string_list(get("remove-properties").get("removals"), "remove-properties.removals") \
            if "remove-properties" in actions else None
        for keys in (self.set_properties or {}, self.remove_properties or []):
            synthetic = sorted(k for k in keys if dp.is_synthetic(k))
            if synthetic:
                raise InvalidParameter(f"Server-derived properties cannot be set or removed: {', '.join(synthetic)}.")
        if self.set_properties and self.remove_properties and set(self.set_properties) & set(self.remove_properties):
            raise InvalidParameter("set-properties and remove-properties touch the same key.")
        self.protocol = parse_protocol(get("set-protocol").get("protocol"), "set-protocol.protocol") \
            if "set-protocol" in actions else None
        self.partitions = string_list(get("set-partition-columns").get("partition-columns"),
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
        self.remove_domains = string_list(get("remove-domain-metadata").get("domains"), "remove-domain-metadata.domains") \
            if "remove-domain-metadata" in actions else None
        if self.remove_domains and any(d not in dp.DOMAINS for d in self.remove_domains):
            raise InvalidParameter(f"remove-domain-metadata: known domains are {', '.join(sorted(dp.DOMAINS))}.")
        if self.set_domains and self.remove_domains and set(self.set_domains) & set(self.remove_domains):
            raise InvalidParameter("set-domain-metadata and remove-domain-metadata touch the same domain.")
        self.commit = None
        if "add-commit" in actions:
            self.commit = read(DeltaCommit, get("add-commit").get("commit"), "add-commit.commit")
            self.uniform_value = get("add-commit").get("uniform")
        self.backfilled = integer(get("set-latest-backfilled-version").get("latest-published-version"),
                               "set-latest-backfilled-version.latest-published-version", minimum=0) \
            if "set-latest-backfilled-version" in actions else None
        self.snapshot = None
        if "update-metadata-snapshot-version" in actions:
            item = get("update-metadata-snapshot-version")
            self.snapshot = (integer(item.get("last-commit-version"), "last-commit-version", minimum=0),
                             integer(item.get("last-commit-timestamp-ms"), "last-commit-timestamp-ms", minimum=0))
        self.changes_metadata = any(a in actions for a in (
            "set-properties", "remove-properties", "set-protocol", "set-columns", "set-partition-columns",
            "set-table-comment", "set-domain-metadata", "remove-domain-metadata"))


def storage_credentials(answer: dict, operation: str) -> dict:
    config = {}
    aws = answer.get("aws_temp_credentials")
    if aws:
        config = {"s3.access-key-id": aws["access_key_id"], "s3.secret-access-key": aws["secret_access_key"],
                  "s3.session-token": aws["session_token"]}
    return {"storage-credentials": [{
        "prefix": answer["url"], "operation": operation, "expiration-time-ms": answer["expiration_time"],
        "config": config,
    }]}
