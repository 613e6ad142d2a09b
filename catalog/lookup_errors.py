"""The "not found" errors of lookups, worded as Unity Catalog words them (clients match on
`Catalog not found: <name>`). A missing securable and one the caller may not see answer with the
same error (catalog.authz.not_found picks the one for a hidden row). Schemas are named by their
path (`a.b`, `` `new.db` ``), so that nested and dotted names read back alike."""

from __future__ import annotations

from catalog.names import quote_part
from ucweb.errors import (
    CatalogDoesNotExist,
    CredentialDoesNotExist,
    ExternalLocationDoesNotExist,
    FunctionDoesNotExist,
    PolicyDoesNotExist,
    RegisteredModelDoesNotExist,
    SchemaDoesNotExist,
    TableDoesNotExist,
    VolumeDoesNotExist,
)


def catalog_not_found(name: str) -> CatalogDoesNotExist:
    return CatalogDoesNotExist(f"Catalog not found: {name}")


def warehouse_not_found(prefix: str) -> CatalogDoesNotExist:
    """A catalog named as an Iceberg REST warehouse (the path's prefix)."""
    return CatalogDoesNotExist(f"Warehouse (catalog) '{prefix}' does not exist.")


def schema_not_found(catalog_name: str, path: str) -> SchemaDoesNotExist:
    return SchemaDoesNotExist(f"Schema not found: {quote_part(catalog_name)}.{path}")


def _in_schema_not_found(error, what: str):
    def make(catalog_name: str, path: str, name: str):
        return error(f"{what} not found: {quote_part(catalog_name)}.{path}.{quote_part(name)}")
    return make


table_not_found = _in_schema_not_found(TableDoesNotExist, "Table")
volume_not_found = _in_schema_not_found(VolumeDoesNotExist, "Volume")
function_not_found = _in_schema_not_found(FunctionDoesNotExist, "Function")
registered_model_not_found = _in_schema_not_found(RegisteredModelDoesNotExist, "Registered model")


def policy_not_found(catalog_name: str, path: str, name: str) -> PolicyDoesNotExist:
    return PolicyDoesNotExist(f"Policy {quote_part(catalog_name)}.{path}.{quote_part(name)} does not exist.")


def table_id_not_found(table_id) -> TableDoesNotExist:
    return TableDoesNotExist(f"Table not found: {table_id}")


def volume_id_not_found(volume_id) -> VolumeDoesNotExist:
    return VolumeDoesNotExist(f"Volume not found: {volume_id}")


def credential_not_found(name) -> CredentialDoesNotExist:
    return CredentialDoesNotExist(f"Credential not found: {name}")


def external_location_not_found(name) -> ExternalLocationDoesNotExist:
    return ExternalLocationDoesNotExist(f"External location not found: {name}")
