from catalog import resolve
from catalog.models import Principal
from catalog.services import grants


def _resolve_with_access(securable_type: str, full_name: str, caller: Principal):
    """The securable, and the caller's access to it. A securable the caller may not see (see
    catalog.resolve) answers as one that does not exist, for reading and for changing its
    privileges alike; the metastore is seen by everyone."""
    return resolve.securable(caller, securable_type, full_name)


def get_permissions(*, caller: Principal, securable_type: str, full_name: str, principal: str | None):
    securable, access = _resolve_with_access(securable_type, full_name, caller)
    return grants.list_assignments(securable=securable, principal_filter=principal, caller=caller, access=access)


def update_permissions(*, caller: Principal, securable_type: str, full_name: str, changes):
    securable, access = _resolve_with_access(securable_type, full_name, caller)
    return grants.update_assignments(
        securable_type=securable_type, securable=securable, changes=changes, caller=caller, access=access
    )
