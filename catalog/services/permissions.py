from catalog.choices import SecurableType
from catalog.models import Principal
from catalog.services import grants, securables


def _resolve_with_access(securable_type: str, full_name: str, caller: Principal):
    """The securable, and the caller's access to it. Reading or changing the privileges on a
    securable needs the USE privileges on the containers above it, as any other request does:
    USE CATALOG for a schema; USE CATALOG and USE SCHEMA for what lies in a schema (a table, a
    volume, a function, a registered model)."""
    securable = securables.resolve(securable_type, full_name)
    if securable_type == SecurableType.METASTORE:
        return securable, None
    access = grants.Access.load(caller, securable)
    if securable_type == SecurableType.SCHEMA:
        grants.require_catalog_use(access)
    elif getattr(securable, "schema", None) is not None:
        grants.require_schema_use(access)
    return securable, access


def get_permissions(*, caller: Principal, securable_type: str, full_name: str, principal: str | None):
    securable, access = _resolve_with_access(securable_type, full_name, caller)
    return grants.list_assignments(securable=securable, principal_filter=principal, caller=caller, access=access)


def update_permissions(*, caller: Principal, securable_type: str, full_name: str, changes):
    securable, access = _resolve_with_access(securable_type, full_name, caller)
    return grants.update_assignments(
        securable_type=securable_type, securable=securable, changes=changes, caller=caller, access=access
    )
