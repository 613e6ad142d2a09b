"""The legacy commit API's wire (seed 000 `/delta/commit`, `/delta/preview/commits`,
`/delta/metrics`): every body is a model (ucweb.bodies), which both checks a request and is its
OpenAPI component, so what the document promises is what the parser takes. The rules a member's
type cannot say (a file name that is not a path, a histogram's boundaries) are the model's
validators, here too; the services (commits.delta) decide the rest under the row lock. The Delta
REST API (commits.delta_v1) reads a commit as DeltaCommit, DeltaCommitInfo in its own spelling;
both APIs hold a UniForm metadata location to catalog.locations.file_inside_table.

A worked reading: `read(DeltaCommitRequest, {"table_id": "…", "table_uri": "s3://b/t",
"commit_info": {"version": 3, …}})` checks each member in order and answers the model, None for
an absent optional member. `{"commit_info": {"version": 0, …}}` stops at `commit_info.version
must be at least 1 (is 0).`, and `"3"` at `commit_info.version must be an integer.`: only the
query parameters of DeltaGetCommitsParameters are read from digit strings."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, WithJsonSchema, model_validator

from catalog.services.common import validate_properties
from catalog.services.tables import validate_columns
from commits.formats import delta_log, delta_types
from ucweb.bodies import COMPONENT, Body, Id, Int64, NonEmpty, digits_as_integers, hyphenated, refusal, refusing
from ucweb.errors import InvalidParameter

def integer(value, field: str, *, minimum: int | None = None, required: bool = True) -> int | None:
    """A 64-bit integer (a JSON number) of a body read member by member (commits.delta_v1)."""
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


# -- commit_info ---------------------------------------------------------------------------------------
class DeltaCommitInfo(Body):
    version: Int64(1)
    timestamp: Int64(1)
    file_name: NonEmpty = Field(description="The staged commit's name in _delta_log/_staged_commits/.")
    file_size: Int64(1)
    file_modification_timestamp: Int64(1)

    @model_validator(mode="after")
    def _a_file_name(self) -> DeltaCommitInfo:
        name = self.file_name
        if "/" in name or "\\" in name or name in (".", "..") or "\x00" in name:
            raise refusal(f"{self.at('file_name')} must be a single file name, not a path.")
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > delta_log.MAX_FILE_NAME_BYTES:
            raise refusal(f"{self.at('file_name')} must be at most {delta_log.MAX_FILE_NAME_BYTES} bytes long "
                          f"(UTF-8), not {size}.")
        return self


class DeltaCommit(DeltaCommitInfo):
    """The commit of the Delta REST API's add-commit: the legacy commit_info, hyphenated."""

    model_config = ConfigDict(alias_generator=hyphenated)


# -- metadata ------------------------------------------------------------------------------------------
# The UC API's own ColumnInfo component (catalog.api.uc.serializers), which the document holds.
Columns = Annotated[Any, WithJsonSchema({
    "type": "array", "items": {COMPONENT: "ColumnInfo"},
    "description": "An array of columns, or {columns: [...]}."})]
# validate_properties takes an empty value, so the document does too.
Properties = Annotated[Any, WithJsonSchema({
    "type": "object", "additionalProperties": {"type": "string"}, "description": "A map, or {properties: {...}}."})]


class DeltaMetadata(Body):
    """The metadata a commit changes. `columns` (`schema` on the wire: an array of ColumnInfo or
    of Delta fields, or {columns: [...]}) and `properties` (a map, or {properties: {...}}) are
    the catalog's clean columns and properties once read."""

    description: str | None = None
    columns: Columns | None = Field(None, alias="schema")
    partition_columns: list[NonEmpty] | None = None
    properties: Properties | None = None

    @property
    def has_description(self) -> bool:
        return "description" in self.model_fields_set

    @model_validator(mode="after")
    def _clean(self) -> DeltaMetadata:
        self.columns = _columns(self.columns, self.partition_columns, self.at("columns"))
        self.properties = _properties(self.properties, self.at("properties"))
        return self


def _columns(schema, partition_columns: list[str] | None, where: str) -> list[dict] | None:
    if schema is None:
        return None
    if isinstance(schema, dict):
        schema = schema.get("columns")
    if not isinstance(schema, list):
        raise refusal(f"{where} must be an array of columns or {{columns: [...]}}.")
    columns = []
    for position, column in enumerate(schema):
        if isinstance(column, dict) and "type" in column and "type_name" not in column:
            try:
                columns.append(delta_types.field_to_column(column, position, partition_columns or []))
            except delta_log.DeltaLogError as exc:
                raise refusal(f"{where}: {exc}.") from None
        else:
            columns.append(column)
    return refusing(validate_columns, columns)


def _properties(properties, where: str) -> dict | None:
    if properties is None:
        return None
    if isinstance(properties, dict) and set(properties) == {"properties"} and isinstance(properties["properties"], dict):
        properties = properties["properties"]
    return refusing(validate_properties, properties, field=where)


# -- uniform -------------------------------------------------------------------------------------------
class DeltaUniformIceberg(Body):
    metadata_location: NonEmpty = Field(description="Inside the table's location.")
    converted_delta_version: Int64(0)
    converted_delta_timestamp: NonEmpty
    base_converted_delta_version: Int64(0) | None = None


class DeltaUniform(Body):
    iceberg: DeltaUniformIceberg

    def stored(self) -> dict:
        """What a table keeps (Table.uniform_iceberg): the iceberg object's members that were sent."""
        return self.iceberg.model_dump(exclude_none=True)


# -- requests ------------------------------------------------------------------------------------------
class DeltaCommitRequest(Body):
    table_id: Id
    table_uri: NonEmpty
    commit_info: DeltaCommitInfo | None = None
    latest_published_version: Int64(0) | None = None
    latest_backfilled_version: Int64(0) | None = Field(None, description="The same as latest_published_version.")
    metadata: DeltaMetadata | None = None
    uniform: DeltaUniform | None = None


Parameter = digits_as_integers(Int64(0))


class DeltaGetCommitsParameters(Body):
    table_id: Id = Field(description="Also accepted in the JSON body.")
    table_uri: NonEmpty = Field(description="Also accepted in the JSON body.")
    start_version: Parameter | None = Field(None, description="Inclusive; default 0.")
    end_version: Parameter | None = Field(None, description="Inclusive; default the latest version.")


class DeltaGetCommitsResponse(Body):
    commits: list[DeltaCommitInfo]
    latest_table_version: Int64() = Field(description="-1 for a table this catalog does not manage.")


Count = Int64(0)


class Histogram(Body):
    sorted_bin_boundaries: list[Count]
    file_counts: list[Count]
    total_bytes: list[Count]

    @model_validator(mode="after")
    def _bins(self) -> Histogram:
        boundaries = self.sorted_bin_boundaries
        if not boundaries or boundaries[0] != 0:
            raise refusal(f"{self.at('sorted_bin_boundaries')} must start at 0.")
        if any(later <= earlier for earlier, later in zip(boundaries, boundaries[1:])):
            raise refusal(f"{self.at('sorted_bin_boundaries')} must be strictly increasing.")
        if not len(boundaries) == len(self.file_counts) == len(self.total_bytes):
            raise refusal(f"{self.at('file_counts')} and total_bytes must have one entry per bin of "
                          "sorted_bin_boundaries.")
        return self


class CommitReport(Body):
    commit_version: Count
    num_files_added: Count | None = None
    num_bytes_added: Count | None = None
    num_clustered_bytes_added: Count | None = None
    num_files_removed: Count | None = None
    num_bytes_removed: Count | None = None
    num_clustered_bytes_removed: Count | None = None
    num_rows_inserted: Count | None = None
    num_rows_removed: Count | None = None
    num_rows_updated: Count | None = None
    file_size_histogram: Histogram | None = None


class Report(Body):
    commit_report: CommitReport | None = None


class DeltaMetricsRequest(Body):
    table_id: Id
    table_uri: NonEmpty
    report: Report | None = None
