from catalog.choices import SecurableType
from catalog import authz, resolve
from catalog.authz import Action
from catalog.models import Principal
from catalog.services import grants


def _access_to(securable_type: str, securable, caller: Principal):
    """The caller's access to a securable. Reading or changing the privileges on a securable
    needs the USE privileges on the containers above it, as any other request does: USE CATALOG
    for a schema; USE CATALOG and USE SCHEMA for what lies in a schema (a table, a volume, a
    function, a registered model)."""
    if securable_type == SecurableType.METASTORE:
        return None
    return authz.require(caller, securable, Action.USE, missing=None)


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


def update_permissions_by_id(*, caller: Principal, securable_type: str, securable_id, changes):
    """The same change, for a securable chosen by its id (the console's pickers): the type and the
    row must agree, and the name the grant records is the row's own."""
    from catalog.services.effective_access import securable_by_id

    securable = securable_by_id(securable_type, securable_id)
    access = _access_to(securable_type, securable, caller)
    return grants.update_assignments(
        securable_type=securable_type, securable=securable, changes=changes, caller=caller, access=access
    )
