"""Managed Delta tables: storage is allocated by a staging table (catalog.services.managed_tables),
and the table exists once a client has written version 0 there and the catalog has checked it
(seed 000).

Two orders of creation are accepted:

- the spec's: the client writes `_delta_log/00000000000000000000.json`, then POST /tables; the
  file is checked before the table exists, and the table starts with version 0 published
  (latest_version = latest_published_version = 0);
- version 0 written right after POST /tables (what Sail does): the request must then declare the
  columns, the table starts with latest_version = 0 and latest_published_version = None ("version
  0 not seen yet"), and the ratification (commits.ratification) checks the file the first time a
  client reports it published or builds version 1 on it. Until then no commit is ratified.
"""

from django.db import transaction
from django.utils import timezone

from catalog import schema_contract
from catalog.choices import DataSourceFormat, TableType
from catalog.models import Principal, StagingTable, Table
from catalog.services import audit
from catalog.services.common import validate_comment, validate_properties
from catalog.names import validate_name
from catalog.services.tables import replace_columns, require_create_table, validate_columns
from catalog.storage import StorageError, StorageObjectNotFound, join, normalize, storage_within
from commits.formats import delta_log, delta_types
from ucweb.errors import InvalidParameter, PermissionDenied, TableAlreadyExists, TableDoesNotExist

FIRST_COMMIT = delta_log.FIRST_COMMIT


def _read_first_commit(location: str, *, missing_ok: bool = False) -> list[dict] | None:
    """The actions of version 0; None when the file does not exist and `missing_ok`."""
    url = join(location, FIRST_COMMIT)
    try:
        data = storage_within(location).read(url)  # a log replaced by a link is not read through
    except StorageError as exc:
        if missing_ok and isinstance(exc, StorageObjectNotFound):
            return None
        raise InvalidParameter(f"Not a Delta table: cannot read {FIRST_COMMIT} at {location} ({exc}).") from None
    try:
        return delta_log.parse_actions(data)
    except delta_log.DeltaLogError as exc:
        raise InvalidParameter(f"Not a Delta table: {exc}.") from None


def _check_first_commit(actions: list[dict], table_id) -> dict:
    try:
        _, metadata = delta_log.validate_catalog_managed(actions, table_id=str(table_id))
    except delta_log.DeltaLogError as exc:
        raise InvalidParameter(f"Not a catalog-managed Delta table: {exc}.") from None
    return metadata


def check_version_zero(location: str, table_id) -> dict:
    """Reads and checks version 0 of a managed table; returns its metaData action. Raises
    InvalidParameter when the file is missing or does not describe a catalog-managed table with
    this id."""
    return _check_first_commit(_read_first_commit(location), table_id)


@transaction.atomic
def create_managed_delta_table(
    *, caller: Principal, name, catalog_name, schema_name, data_source_format, storage_location,
    columns=None, comment=None, properties=None,
) -> Table:
    validate_name(name)
    if data_source_format != DataSourceFormat.DELTA:
        raise InvalidParameter("A MANAGED table must have data_source_format DELTA.")
    if not isinstance(storage_location, str) or not storage_location:
        raise InvalidParameter("storage_location must be the staging_location of a staging table.")
    columns = validate_columns(columns)
    comment = validate_comment(comment)
    properties = validate_properties(properties)
    schema_contract.require_settable(properties, applies=True, what=f"table {catalog_name}.{schema_name}.{name}")
    schema = require_create_table(caller, catalog_name, schema_name)
    try:
        requested = normalize(storage_location)
    except StorageError:
        raise InvalidParameter(f"storage_location {storage_location!r} is not a storage URL or an absolute path.") from None
    staging = StagingTable.objects.select_for_update().filter(staging_location=requested).first()
    if staging is None:
        raise TableDoesNotExist(f"No staging table has the location {storage_location}.")
    if staging.created_by != caller.name and not caller.is_metastore_admin:
        raise PermissionDenied("Only the principal that created the staging table may finalize it.")
    if staging.finalized_at is not None:
        raise InvalidParameter(f"Staging table {staging.id} has been finalized already.")
    if staging.schema_id != schema.id or staging.name != name:
        raise InvalidParameter(
            f"The staging table at {storage_location} was created for "
            f"{staging.schema.full_name}.{staging.name}, not {catalog_name}.{schema_name}.{name}."
        )
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table '{catalog_name}.{schema_name}.{name}' already exists.")

    # Without columns the catalog could not describe the table, so version 0 must exist already.
    actions = _read_first_commit(staging.staging_location, missing_ok=bool(columns))
    if actions is None:
        metadata, published = {}, None  # version 0 comes next; commits.ratification checks it
    else:
        metadata, published = _check_first_commit(actions, staging.id), 0
        if not columns:
            try:
                columns = delta_types.columns_from_schema_string(
                    metadata.get("schemaString"), metadata.get("partitionColumns") or []
                )
            except delta_log.DeltaLogError as exc:
                raise InvalidParameter(f"Not a catalog-managed Delta table: {exc}.") from None

    table = Table.objects.create(
        id=staging.id,
        schema=schema,
        name=name,
        table_type=TableType.MANAGED,
        data_source_format=DataSourceFormat.DELTA,
        storage_location=staging.staging_location,
        comment=comment if comment is not None else metadata.get("description"),
        properties=properties,
        owner=caller.name,
        created_by=caller.name,
        updated_at=timezone.now(),
        updated_by=caller.name,
        latest_version=0,
        latest_published_version=published,
    )
    replace_columns(table, columns)
    staging.finalized_at = timezone.now()
    staging.save(update_fields=["finalized_at"])
    audit.record(
        principal=caller.name, action="createTable", securable_type="table",
        securable_name=table.full_name, securable_id=table.id,
        details={
            "table_type": TableType.MANAGED, "data_source_format": DataSourceFormat.DELTA,
            "version_zero": "checked" if published == 0 else "pending",
        },
    )
    return table
