"""The Delta REST API's wire (managed tables spec 1.0): its errors, and the parsing and rendering
of its bodies (hyphenated names) into what the services take. Every rule about a value's shape
lives here and, for updateTable's request, in commits.delta_v1.update_wire; commits.delta_v1.update
and commits.delta_v1.tables decide the rest."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal
from uuid import UUID

from django.utils import timezone
from pydantic import BeforeValidator, Field, ValidationError, WithJsonSchema, field_validator, model_validator

from catalog import locations, rows
from catalog.models import Table
from catalog.names import validate_name
from catalog.services.tables import validate_columns
from commits.delta_wire import DeltaCommit, integer
from commits.formats import delta_log, delta_types
from commits.formats import delta_protocol as dp
from ucweb.bodies import PATH, Hyphenated, HyphenatedAbsentAsNull, Int64, NonEmpty, refusal, refusing, worded
from ucweb.errors import AlreadyExists, CatalogError, InvalidParameter


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
# Each model both reads its request and describes it in the document, in this API's spelling.
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
    columns = rows.columns_of(table)
    partitions = sorted((c.partition_index, c.name) for c in columns if c.partition_index is not None)
    return ({"type": "struct", "fields": [delta_types.column_to_field(c) for c in columns]},
            [name for _, name in partitions])


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



# -- the createTable and updateTable requests -------------------------------------------------------
# Each member is checked in the order below, which is the order its refusals have always come in;
# what depends on the table (its partitions for set-columns, its location for uniform) is the
# services' (commits.delta_v1.update, commits.delta_v1.tables), on the members read here.
Strings = worded(list[NonEmpty], f"{PATH} must be an array of strings.")
StringMap = worded(dict[str, str], f"{PATH} must map strings to strings.")


def object_of(kind):
    """A member holding an object of `kind`: a null one is refused as not an object, a wrong object
    by its own members' words."""
    return worded(kind, f"{PATH} must be an object.", null_only=True)


class DeltaProtocol(Hyphenated):
    min_reader_version: Int64(1)
    min_writer_version: Int64(1)
    reader_features: Strings = Field(default_factory=list)
    writer_features: Strings = Field(default_factory=list)


class DeltaClustering(HyphenatedAbsentAsNull):
    clustering_columns: worded(list[Annotated[list[str], Field(min_length=1)]],
                               f"{PATH} must be an array of paths.") = Field(alias="clusteringColumns")


class DeltaRowTracking(Hyphenated):
    row_id_high_water_mark: Int64(-1) = Field(alias="rowIdHighWaterMark")


class DeltaDomainMetadata(Hyphenated):
    """The domain metadata the catalog keeps, by domain (delta_protocol.DOMAINS)."""

    clustering: object_of(DeltaClustering) = Field(None, alias="delta.clustering")
    row_tracking: object_of(DeltaRowTracking) = Field(None, alias="delta.rowTracking")

    @model_validator(mode="wrap")
    @classmethod
    def _known(cls, data, handler):
        """An unknown domain is refused where it stands among the domains sent: a wrong one before
        it is named first."""
        if not isinstance(data, dict):
            return handler(data)
        try:
            domains = handler(data)
            wrong = None
        except ValidationError as exc:
            domains, wrong = exc, exc.errors()[0]["loc"][0]
        for name in data:
            if name == wrong:
                break
            if name not in dp.DOMAINS:
                raise refusal(f"{PATH}: unknown domain {name!r} (known: {', '.join(sorted(dp.DOMAINS))}).")
        if wrong is not None:
            raise domains
        return domains

    def stored(self) -> dict[str, str]:
        """Each domain sent, as its property's value (delta_protocol.DOMAINS)."""
        values = {}
        if self.clustering is not None:
            values["delta.clustering"] = json.dumps(self.clustering.clustering_columns, separators=(",", ":"))
        if self.row_tracking is not None:
            values["delta.rowTracking"] = str(self.row_tracking.row_id_high_water_mark)
        return values


def _no_domain_metadata(value):
    return value or None  # an empty (or false) domain-metadata declares none


class DeltaCreateTableRequest(HyphenatedAbsentAsNull):
    name: Annotated[NonEmpty, BeforeValidator(lambda value: refusing(validate_name, value))]
    table_type: worded(Literal["MANAGED", "EXTERNAL"], f"{PATH} must be MANAGED or EXTERNAL.")
    location: worded(NonEmpty, f"{PATH} is required.")
    partition_columns: Strings = Field(default_factory=list)
    columns: StructType
    properties: StringMap
    protocol: object_of(DeltaProtocol)
    domain_metadata: Annotated[DeltaDomainMetadata | None, BeforeValidator(_no_domain_metadata)] = None
    last_commit_timestamp_ms: Int64(0)
    comment: str | None = None
    uniform: Json = Field(None, description="Required when the properties enable UniForm; "
                                            "its metadata-location lies inside the table's location.")

    @field_validator("columns")
    @classmethod
    def _columns(cls, value, info):
        if "partition_columns" not in info.data:
            return value  # refused already
        return refusing(parse_columns, value, info.data["partition_columns"])

    @model_validator(mode="after")
    def _not_derived(self) -> DeltaCreateTableRequest:
        synthetic = sorted(key for key in self.properties
                           if dp.is_synthetic(key) and not key.startswith(dp.FEATURE_PREFIX))
        if synthetic:
            raise refusal(f"properties must not carry server-derived keys: {', '.join(synthetic)}.")
        return self


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
