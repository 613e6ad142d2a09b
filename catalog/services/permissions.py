from catalog.choices import SecurableType
from catalog.models import Principal
from catalog.services import grants, securables


def _resolve_with_access(securable_type: str, full_name: str, caller: Principal):
    securable = securables.resolve(securable_type, full_name)
    if securable_type == SecurableType.METASTORE:
        return securable, None
    access = grants.Access.load(caller, securable)
    if securable_type in (SecurableType.SCHEMA, SecurableType.TABLE):
        grants.require_catalog_use(access)
    return securable, access


def get_permissions(*, caller: Principal, securable_type: str, full_name: str, principal: str | None):
    securable, access = _resolve_with_access(securable_type, full_name, caller)
    return grants.list_assignments(securable=securable, principal_filter=principal, caller=caller, access=access)


def update_permissions(*, caller: Principal, securable_type: str, full_name: str, changes):
    securable, access = _resolve_with_access(securable_type, full_name, caller)
    return grants.update_assignments(
        securable_type=securable_type, securable=securable, changes=changes, caller=caller, access=access
    )
