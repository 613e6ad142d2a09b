"""The legacy commit API's wire (seed 000 `/delta/commit`, `/delta/preview/commits`,
`/delta/metrics`), described once: every body is a `Shape` of `Member`s. `read` checks a body
against its shape, and the OpenAPI document is generated from the same shapes
(catalog.api.wire_schema), so what the document promises is what the parser takes. The rules a
member's type cannot say (a file name that is not a path, a histogram's boundaries) are the
shape's `build`, here too; the services (commits.delta) decide the rest under the row lock.
The Delta REST API (commits.delta_v1) reads a commit through COMMIT_INFO in its own spelling; both
APIs hold a UniForm metadata location to catalog.locations.file_inside_table.

A worked reading: `read(COMMIT_REQUEST, {"table_id": "…", "table_uri": "s3://b/t",
"commit_info": {"version": 3, …}})` checks each member in order, builds the nested CommitInfo,
and answers a dict with every member (None for an absent optional one). `{"commit_info":
{"version": 0, …}}` stops at `commit_info.version must be at least 1 (is 0).`, and `"3"` at
`commit_info.version must be an integer.`: only a shape of query parameters (GET_COMMITS) reads
digit strings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, get_args, get_origin
from uuid import UUID

from catalog.services.common import validate_properties
from catalog.services.tables import validate_columns
from commits.formats import delta_log, delta_types
from ucweb.errors import InvalidParameter
from ucweb.ids import parse_uuid


def integer(value, field: str, *, minimum: int | None = None, required: bool = True,
            text: bool = False) -> int | None:
    """A 64-bit integer: a JSON number; with `text`, also ASCII digits in a string (a query
    parameter), optionally after one minus sign."""
    if value is None:
        if required:
            raise InvalidParameter(f"{field} is required.")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if text and isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
            value = int(value)
        else:
            raise InvalidParameter(f"{field} must be an integer.")
    if not -(2**63) <= value < 2**63:
        raise InvalidParameter(f"{field} is out of range.")
    if minimum is not None and value < minimum:
        raise InvalidParameter(f"{field} must be at least {minimum} (is {value}).")
    return value


# -- the vocabulary of a description ------------------------------------------------------------------
class Columns:
    """The type of `metadata.schema`: an array of columns (seed 000) or {columns: [...]} (the SDK);
    a column is a ColumnInfo (`type_name`/`type_text`) or a Delta field (`type`)."""


class Properties:
    """The type of a property map: strings to strings, or {properties: {...}} (the SDK)."""


@dataclass(frozen=True)
class Member:
    """One member of a JSON object. `type` is int (64-bit), str, UUID, list[int], list[str],
    list[<Shape>], Columns, Properties or a Shape."""

    name: str
    type: Any
    required: bool = False
    minimum: int | None = None  # of an integer, or of each integer of an array
    description: str = ""

    def item(self) -> Member:
        """What each item of an array member is read as: present, and under the same minimum."""
        (kind,) = get_args(self.type)
        return Member(self.name, kind, required=True, minimum=self.minimum)


Spelling = Callable[[str], str]  # a member's name on the wire (the Delta REST API hyphenates)
At = Callable[[str], str]  # a member's path in the body, for messages: at("file_name") → "commit_info.file_name"


@dataclass(frozen=True)
class Shape:
    """A JSON object, named as its OpenAPI component. `build(values, data, at)` turns the members
    read into what the services take (default: the dict of members, None for an absent one).
    `query`: the members may arrive as query parameters, where an integer is a digit string."""

    name: str
    members: tuple[Member, ...]
    build: Callable[[dict, dict, At], Any] | None = None
    query: bool = False


def read(shape: Shape, data, where: str = "", *, spelling: Spelling | None = None):
    """`data` checked against `shape`; `where` is the path of `data` in the body, for messages."""
    if not isinstance(data, dict):
        raise InvalidParameter(f"{where or 'The request body'} must be an object.")

    def on_the_wire(name: str) -> str:
        return spelling(name) if spelling else name

    def at(name: str) -> str:
        return f"{where}.{on_the_wire(name)}" if where else on_the_wire(name)

    values = {member.name: _value(member, data.get(on_the_wire(member.name)), at(member.name), spelling,
                                  text=shape.query)
              for member in shape.members}
    return shape.build(values, data, at) if shape.build else values


def _value(member: Member, value, path: str, spelling: Spelling | None, *, text: bool = False):
    kind = member.type
    if value is None:
        if member.required:
            raise InvalidParameter(f"{path} is required.")
        return None
    if kind is int:
        return integer(value, path, minimum=member.minimum, text=text)
    if kind is str:
        if not isinstance(value, str):
            raise InvalidParameter(f"{path} must be a string.")
        if member.required and not value:
            raise InvalidParameter(f"{path} must not be empty.")
        return value
    if kind is UUID:
        return str(parse_uuid(value, field=path))
    if isinstance(kind, Shape):
        return read(kind, value, path, spelling=spelling)
    if get_origin(kind) is list:
        if not isinstance(value, list):
            raise InvalidParameter(f"{path} must be an array.")
        each = member.item()
        return [_value(each, v, f"{path}[{i}]", spelling) for i, v in enumerate(value)]
    return value  # Columns, Properties: the shape's build reads them


# -- commit_info ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommitInfo:
    version: int
    timestamp: int
    file_name: str
    file_size: int
    file_modification_timestamp: int

    @classmethod
    def build(cls, values: dict, data: dict, at: At) -> CommitInfo:
        file_name = values["file_name"]
        if "/" in file_name or "\\" in file_name or file_name in (".", "..") or "\x00" in file_name:
            raise InvalidParameter(f"{at('file_name')} must be a single file name, not a path.")
        size = len(file_name.encode("utf-8", "surrogatepass"))
        if size > delta_log.MAX_FILE_NAME_BYTES:
            raise InvalidParameter(
                f"{at('file_name')} must be at most {delta_log.MAX_FILE_NAME_BYTES} bytes long (UTF-8), not {size}.")
        return cls(**values)


COMMIT_INFO = Shape("DeltaCommitInfo", (
    Member("version", int, required=True, minimum=1),
    Member("timestamp", int, required=True, minimum=1),
    Member("file_name", str, required=True, description="The staged commit's name in _delta_log/_staged_commits/."),
    Member("file_size", int, required=True, minimum=1),
    Member("file_modification_timestamp", int, required=True, minimum=1),
), build=CommitInfo.build)


# -- metadata ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetadataChange:
    description: str | None
    has_description: bool
    columns: list[dict] | None
    properties: dict | None

    @classmethod
    def build(cls, values: dict, data: dict, at: At) -> MetadataChange:
        return cls(
            description=values["description"],
            has_description="description" in data,
            columns=_columns(values["schema"], values["partition_columns"], at("schema")),
            properties=_properties(values["properties"], at("properties")),
        )


def _columns(schema, partition_columns: list[str] | None, where: str) -> list[dict] | None:
    if schema is None:
        return None
    if isinstance(schema, dict):
        schema = schema.get("columns")
    if not isinstance(schema, list):
        raise InvalidParameter(f"{where} must be an array of columns or {{columns: [...]}}.")
    columns = []
    for position, column in enumerate(schema):
        if isinstance(column, dict) and "type" in column and "type_name" not in column:
            try:
                columns.append(delta_types.field_to_column(column, position, partition_columns or []))
            except delta_log.DeltaLogError as exc:
                raise InvalidParameter(f"{where}: {exc}.") from None
        else:
            columns.append(column)
    return validate_columns(columns)


def _properties(properties, where: str) -> dict | None:
    if properties is None:
        return None
    if isinstance(properties, dict) and set(properties) == {"properties"} and isinstance(properties["properties"], dict):
        properties = properties["properties"]
    return validate_properties(properties, field=where)


METADATA = Shape("DeltaMetadata", (
    Member("description", str),
    Member("schema", Columns, description="An array of columns, or {columns: [...]}."),
    Member("partition_columns", list[str]),
    Member("properties", Properties, description="A map, or {properties: {...}}."),
), build=MetadataChange.build)


# -- uniform -------------------------------------------------------------------------------------------
def _present(values: dict, data: dict, at: At) -> dict:
    return {name: value for name, value in values.items() if value is not None}


def _iceberg(values: dict, data: dict, at: At) -> dict:
    """`uniform` is read as its one member, the iceberg object, because that is what a table keeps
    (Table.uniform_iceberg); the document still shows the wire's {iceberg: {...}}."""
    return values["iceberg"]


UNIFORM_ICEBERG = Shape("DeltaUniformIceberg", (
    Member("metadata_location", str, required=True, description="Inside the table's location."),
    Member("converted_delta_version", int, required=True, minimum=0),
    Member("converted_delta_timestamp", str, required=True),
    Member("base_converted_delta_version", int, minimum=0),
), build=_present)
UNIFORM = Shape("DeltaUniform", (Member("iceberg", UNIFORM_ICEBERG, required=True),), build=_iceberg)


# -- requests ------------------------------------------------------------------------------------------
COMMIT_REQUEST = Shape("DeltaCommitRequest", (
    Member("table_id", UUID, required=True),
    Member("table_uri", str, required=True),
    Member("commit_info", COMMIT_INFO),
    Member("latest_published_version", int, minimum=0),
    Member("latest_backfilled_version", int, minimum=0, description="The same as latest_published_version."),
    Member("metadata", METADATA),
    Member("uniform", UNIFORM),
))

GET_COMMITS = Shape("DeltaGetCommitsParameters", (
    Member("table_id", UUID, required=True, description="Also accepted in the JSON body."),
    Member("table_uri", str, required=True, description="Also accepted in the JSON body."),
    Member("start_version", int, minimum=0, description="Inclusive; default 0."),
    Member("end_version", int, minimum=0, description="Inclusive; default the latest version."),
), query=True)
GET_COMMITS_RESPONSE = Shape("DeltaGetCommitsResponse", (
    Member("commits", list[COMMIT_INFO], required=True),
    Member("latest_table_version", int, required=True, description="-1 for a table this catalog does not manage."),
))


def _histogram(values: dict, data: dict, at: At) -> dict:
    boundaries = values["sorted_bin_boundaries"]
    if not boundaries or boundaries[0] != 0:
        raise InvalidParameter(f"{at('sorted_bin_boundaries')} must start at 0.")
    if any(later <= earlier for earlier, later in zip(boundaries, boundaries[1:])):
        raise InvalidParameter(f"{at('sorted_bin_boundaries')} must be strictly increasing.")
    if not len(boundaries) == len(values["file_counts"]) == len(values["total_bytes"]):
        raise InvalidParameter(f"{at('file_counts')} and total_bytes must have one entry per bin of "
                               "sorted_bin_boundaries.")
    return values


HISTOGRAM = Shape("Histogram", (
    Member("sorted_bin_boundaries", list[int], required=True, minimum=0),
    Member("file_counts", list[int], required=True, minimum=0),
    Member("total_bytes", list[int], required=True, minimum=0),
), build=_histogram)
COMMIT_REPORT = Shape("CommitReport", (
    Member("commit_version", int, required=True, minimum=0),
    *(Member(counter, int, minimum=0) for counter in (
        "num_files_added", "num_bytes_added", "num_clustered_bytes_added", "num_files_removed",
        "num_bytes_removed", "num_clustered_bytes_removed", "num_rows_inserted", "num_rows_removed",
        "num_rows_updated")),
    Member("file_size_histogram", HISTOGRAM),
))
METRICS_REQUEST = Shape("DeltaMetricsRequest", (
    Member("table_id", UUID, required=True),
    Member("table_uri", str, required=True),
    Member("report", Shape("Report", (Member("commit_report", COMMIT_REPORT),))),
))
