"""Storage credentials of the Delta REST API: for a table, a staging table and a path, in the
spec's `storage-credentials` shape, from the one credential vendor (catalog.services.vendor)."""

from __future__ import annotations

from catalog.choices import PathOperation, Privilege, TableOperation
from catalog.models import Principal, StagingTable
from catalog.services import audit, temporary_credentials
from catalog.services.vendor import vend
from commits.delta_v1.tables import UnsupportedTableFormat, require, table_for
from commits.delta_v1.wire import BadRequest, storage_credentials
from ucweb.errors import PermissionDenied, TableDoesNotExist
from ucweb.ids import parse_uuid

def _operation(value) -> str:
    if value not in (TableOperation.READ, TableOperation.READ_WRITE):
        raise BadRequest("operation must be READ or READ_WRITE.")
    return value


def table_credentials(*, caller: Principal, catalog: str, schema: str, name: str, operation) -> dict:
    """READ needs SELECT; READ_WRITE needs SELECT and MODIFY (403 otherwise: no silent downgrade)."""
    operation = _operation(operation)
    table = table_for(caller, catalog, schema, name)
    privileges = [Privilege.SELECT] + ([Privilege.MODIFY] if operation == TableOperation.READ_WRITE else [])
    require(caller, table, *privileges)
    if not table.storage_location:
        raise UnsupportedTableFormat(f"Table {table.full_name} has no storage location.")
    answer = vend(table.storage_location, write=operation == TableOperation.READ_WRITE, caller=caller,
                  securable=table)
    audit.record(principal=caller.name, action="generateTemporaryTableCredentials", securable_type="table",
                 securable_name=table.full_name, securable_id=table.id,
                 details={"operation": operation, "url": answer["url"], "api": "delta/v1"})
    return storage_credentials(answer, operation)


def staging_table_credentials(*, caller: Principal, table_id) -> dict:
    staging = StagingTable.objects.filter(id=parse_uuid(table_id, field="table_id")).first()
    if staging is None or staging.finalized_at is not None:
        raise TableDoesNotExist(f"No staging table with id {table_id}.")
    if staging.created_by != caller.name:
        raise PermissionDenied("Only the principal that created the staging table may get its credentials.")
    answer = temporary_credentials.for_staging_table(caller=caller, staging=staging)
    return storage_credentials(answer, TableOperation.READ_WRITE)


def path_credentials(*, caller: Principal, location, operation) -> dict:
    """The same checks as the UC API's temporary-path-credentials (external locations only)."""
    operation = _operation(operation)
    answer = temporary_credentials.for_path(
        caller=caller, url=location,
        operation=PathOperation.PATH_READ if operation == TableOperation.READ else PathOperation.PATH_READ_WRITE,
    )
    return storage_credentials(answer, operation)


