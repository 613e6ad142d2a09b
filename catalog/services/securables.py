"""Resolving `/permissions/{securable_type}/{full_name}` to a row, for every securable type."""

from catalog import asset_selectors, selectors
from catalog.choices import SecurableType
from catalog.models import Metastore
from ucweb.errors import InvalidParameter, MetastoreDoesNotExist


def _metastore(full_name: str):
    metastore = Metastore.objects.first()
    if metastore is None:
        raise MetastoreDoesNotExist("No metastore has been created; run `manage.py bootstrap`.")
    return metastore


RESOLVERS = {
    SecurableType.METASTORE: _metastore,
    SecurableType.CATALOG: selectors.get_catalog,
    SecurableType.SCHEMA: selectors.get_schema_by_full_name,
    SecurableType.TABLE: selectors.get_table_by_full_name,
    SecurableType.VOLUME: asset_selectors.get_volume,
    SecurableType.FUNCTION: asset_selectors.get_function,
    SecurableType.REGISTERED_MODEL: asset_selectors.get_registered_model,
    SecurableType.EXTERNAL_LOCATION: asset_selectors.get_external_location,
    SecurableType.CREDENTIAL: asset_selectors.get_credential,
}


def resolve(securable_type: str, full_name: str):
    resolver = RESOLVERS.get(securable_type)
    if resolver is None:
        known = ", ".join(sorted(RESOLVERS))
        raise InvalidParameter(f"Unknown or unsupported securable type {securable_type!r}; expected one of {known}.")
    return resolver(full_name)
