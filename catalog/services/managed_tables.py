"""Staging tables: the storage of a managed table is allocated before the table exists (seed
000). The table itself is created by commits.managed_tables, once its Delta log can be checked."""

from django.db import transaction

from catalog import locations
from catalog.models import Principal, StagingTable, Table
from catalog.services import audit
from catalog.names import validate_name
from catalog.services.recipes import require_create_table
from ucweb.errors import TableAlreadyExists


def managed_location(schema, table_id) -> str:
    """`<root>/tables/<id>` under the schema's managed location, else the catalog's, else the
    server's storage root."""
    return locations.managed_location(schema, "tables", table_id)


@transaction.atomic
def create_staging_table(*, caller: Principal, name, catalog_name, schema_name) -> StagingTable:
    validate_name(name)
    validate_name(catalog_name, field="catalog_name")
    validate_name(schema_name, field="schema_name")
    schema = require_create_table(caller, catalog_name, schema_name)
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table '{catalog_name}.{schema_name}.{name}' already exists.")
    staging = StagingTable(schema=schema, name=name, created_by=caller.name)
    staging.staging_location = managed_location(schema, staging.id)
    staging.save()
    audit.record(
        principal=caller.name, action="createStagingTable", securable_type="table",
        securable_name=f"{catalog_name}.{schema_name}.{name}", securable_id=staging.id,
    )
    return staging
