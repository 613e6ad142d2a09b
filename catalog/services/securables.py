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


def _policy(full_name: str):
    from catalog.models import Policy
    from catalog.services.names import split_full_name
    from ucweb.errors import PolicyDoesNotExist

    catalog_name, schema_name, name = split_full_name(full_name, 3, what="policy")
    policy = Policy.objects.select_related("schema__catalog").filter(
        schema__catalog__name=catalog_name, schema__name=schema_name, name=name).first()
    if policy is None:
        raise PolicyDoesNotExist(f"Policy {full_name} does not exist.")
    return policy


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
    SecurableType.POLICY: _policy,
}


def resolve(securable_type: str, full_name: str):
    resolver = RESOLVERS.get(securable_type)
    if resolver is None:
        known = ", ".join(sorted(RESOLVERS))
        raise InvalidParameter(f"Unknown or unsupported securable type {securable_type!r}; expected one of {known}.")
    return resolver(full_name)
