"""Names kept for the modules that still import them from here (catalog/services/
registered_models.py, temporary_credentials.py, effective_access.py, catalog/api/uc/assets.py,
commits/delta.py, commits/delta_v1.py). Lookups live in catalog.resolve, ids in ucweb.ids,
pagination in catalog.selectors."""

from catalog import resolve
from catalog.choices import SecurableType
from catalog.selectors import paginate_versions
from ucweb.ids import parse_uuid

get_model_version = resolve.get_model_version
parse_version = resolve.parse_version


def get_registered_model(full_name: str, *, for_update: bool = False):
    return resolve.securable_row(SecurableType.REGISTERED_MODEL, full_name, for_update=for_update)


__all__ = ["get_model_version", "get_registered_model", "paginate_versions", "parse_uuid", "parse_version"]
