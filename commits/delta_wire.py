"""The legacy commit API's wire (seed 000 `/delta/commit`, `/delta/preview/commits`,
`/delta/metrics`): parsing of request bodies into the types the services take. Every rule about
a value's shape lives here; the services (commits.delta) decide the rest under the row lock."""

from __future__ import annotations

from dataclasses import dataclass

from catalog.services.common import validate_properties
from catalog.services.tables import validate_columns
from commits.formats import delta_log, delta_types
from ucweb.errors import InvalidParameter
from ucweb.ids import parse_uuid


def integer(value, field: str, *, minimum: int | None = None, required: bool = True,
            text: bool = True) -> int | None:
    """A 64-bit integer; with `text`, digits in a string count too (query parameters)."""
    if value is None:
        if required:
            raise InvalidParameter(f"{field} is required.")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if text and isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        else:
            raise InvalidParameter(f"{field} must be an integer.")
    if not -(2**63) <= value < 2**63:
        raise InvalidParameter(f"{field} is out of range.")
    if minimum is not None and value < minimum:
        raise InvalidParameter(f"{field} must be at least {minimum} (is {value}).")
    return value


@dataclass(frozen=True)
class CommitInfo:
    version: int
    timestamp: int
    file_name: str
    file_size: int
    file_modification_timestamp: int

    @classmethod
    def parse(cls, data) -> CommitInfo:
        if not isinstance(data, dict):
            raise InvalidParameter("commit_info must be an object.")
        file_name = data.get("file_name")
        if not isinstance(file_name, str) or not file_name:
            raise InvalidParameter("commit_info.file_name is required.")
        if "/" in file_name or "\\" in file_name or file_name in (".", "..") or "\x00" in file_name:
            raise InvalidParameter("commit_info.file_name must be a single file name, not a path.")
        return cls(
            version=integer(data.get("version"), "commit_info.version", minimum=1),
            timestamp=integer(data.get("timestamp"), "commit_info.timestamp", minimum=1),
            file_name=file_name,
            file_size=integer(data.get("file_size"), "commit_info.file_size", minimum=1),
            file_modification_timestamp=integer(
                data.get("file_modification_timestamp"), "commit_info.file_modification_timestamp", minimum=1
            ),
        )


@dataclass(frozen=True)
class MetadataChange:
    description: str | None
    has_description: bool
    columns: list[dict] | None
    properties: dict | None

    @classmethod
    def parse(cls, data) -> MetadataChange:
        if not isinstance(data, dict):
            raise InvalidParameter("metadata must be an object.")
        description = data.get("description")
        if description is not None and not isinstance(description, str):
            raise InvalidParameter("metadata.description must be a string.")
        return cls(
            description=description,
            has_description="description" in data,
            columns=_parse_schema(data.get("schema"), data.get("partition_columns")),
            properties=_parse_properties(data.get("properties")),
        )


def _parse_schema(schema, partition_columns) -> list[dict] | None:
    """`schema` arrives as an array of columns (seed 000) or as {columns: [...]} (the SDK); a
    column is a ColumnInfo (`type_name`/`type_text`) or a Delta field (`type`)."""
    if schema is None:
        return None
    if isinstance(schema, dict):
        schema = schema.get("columns")
    if not isinstance(schema, list):
        raise InvalidParameter("metadata.schema must be an array of columns or {columns: [...]}.")
    if partition_columns is not None and (
        not isinstance(partition_columns, list) or not all(isinstance(c, str) for c in partition_columns)
    ):
        raise InvalidParameter("metadata.partition_columns must be an array of column names.")
    columns = []
    for position, column in enumerate(schema):
        if isinstance(column, dict) and "type" in column and "type_name" not in column:
            try:
                columns.append(delta_types.field_to_column(column, position, partition_columns or []))
            except delta_log.DeltaLogError as exc:
                raise InvalidParameter(f"metadata.schema: {exc}.") from None
        else:
            columns.append(column)
    return validate_columns(columns)


def _parse_properties(properties) -> dict | None:
    if properties is None:
        return None
    if isinstance(properties, dict) and set(properties) == {"properties"} and isinstance(properties["properties"], dict):
        properties = properties["properties"]
    return validate_properties(properties, field="metadata.properties")


def parse_uniform(uniform) -> dict | None:
    if uniform is None:
        return None
    iceberg = uniform.get("iceberg") if isinstance(uniform, dict) else None
    if not isinstance(iceberg, dict):
        raise InvalidParameter("uniform must be {iceberg: {...}}.")
    location = iceberg.get("metadata_location")
    if not isinstance(location, str) or not location:
        raise InvalidParameter("uniform.iceberg.metadata_location is required.")
    converted_at = iceberg.get("converted_delta_timestamp")
    if not isinstance(converted_at, str) or not converted_at:
        raise InvalidParameter("uniform.iceberg.converted_delta_timestamp is required.")
    clean = {
        "metadata_location": location,
        "converted_delta_version": integer(
            iceberg.get("converted_delta_version"), "uniform.iceberg.converted_delta_version", minimum=0
        ),
        "converted_delta_timestamp": converted_at,
    }
    base = integer(iceberg.get("base_converted_delta_version"), "uniform.iceberg.base_converted_delta_version",
                minimum=0, required=False)
    if base is not None:
        clean["base_converted_delta_version"] = base
    return clean


def table_id(value) -> str:
    return str(parse_uuid(value, field="table_id"))


REPORT_COUNTERS = (
    "num_files_added",
    "num_bytes_added",
    "num_clustered_bytes_added",
    "num_files_removed",
    "num_bytes_removed",
    "num_clustered_bytes_removed",
    "num_rows_inserted",
    "num_rows_removed",
    "num_rows_updated",
)


def histogram(data) -> dict | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InvalidParameter("file_size_histogram must be an object.")
    arrays = {}
    for key in ("sorted_bin_boundaries", "file_counts", "total_bytes"):
        value = data.get(key)
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InvalidParameter(f"file_size_histogram.{key} must be an array of integers.")
        if any(v < 0 for v in value):
            raise InvalidParameter(f"file_size_histogram.{key} must not hold negative numbers.")
        arrays[key] = value
    boundaries = arrays["sorted_bin_boundaries"]
    if not boundaries or boundaries[0] != 0:
        raise InvalidParameter("file_size_histogram.sorted_bin_boundaries must start at 0.")
    if any(later <= earlier for earlier, later in zip(boundaries, boundaries[1:])):
        raise InvalidParameter("file_size_histogram.sorted_bin_boundaries must be strictly increasing.")
    if not len(boundaries) == len(arrays["file_counts"]) == len(arrays["total_bytes"]):
        raise InvalidParameter("file_size_histogram arrays must have the same length.")
    return arrays


def commit_report(body: dict) -> dict | None:
    """The `report.commit_report` of a metrics request as CommitReport fields (None: no report)."""
    report = body.get("report")
    if report is not None and not isinstance(report, dict):
        raise InvalidParameter("report must be an object.")
    data = (report or {}).get("commit_report")
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InvalidParameter("report.commit_report must be an object.")
    values = {"commit_version": integer(data.get("commit_version"), "commit_report.commit_version", minimum=0)}
    for key in REPORT_COUNTERS:
        values[key] = integer(data.get(key), f"commit_report.{key}", minimum=0, required=False)
    values["file_size_histogram"] = histogram(data.get("file_size_histogram"))
    return values
