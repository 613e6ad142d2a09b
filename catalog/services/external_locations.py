"""External locations: storage prefixes that a storage credential unlocks, and the one place that
decides which external location governs a URL.

Rules:
- URLs are compared in the canonical form of catalog.storage.normalize; only file:// and s3://
  locations exist (the schemes ucweb's storage and credential vending serve).
- No external location overlaps another one (is a prefix of it or lies under it), the managed
  storage root (UCWEB_STORAGE_ROOT), or the managed area of a catalog or schema. So a URL
  belongs to at most one external location.
- Creating one needs CREATE EXTERNAL LOCATION on the metastore and on the credential.

`catalog.locations.require_external_location(caller, url, privilege)` is what EXTERNAL tables and volumes and path
credentials call. The external location containing the URL must exist and the caller must hold
the privilege on it (its owner holds all). A metastore admin may also name a path that no external
location covers (that keeps bootstrapping and migrations possible); credentials are still only
vended for paths in an external location or in managed storage. Nobody may name a path that
overlaps managed storage.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from catalog import authz, locations, resolve
from catalog.authz import Action
from catalog.choices import CredentialPurpose, Privilege, SecurableType
from catalog.locations import ancestors, is_within, require_outside_managed_storage
from catalog.models import ExternalLocation, Principal, Table, Volume
from catalog.services import recipes
from catalog.services.common import validate_comment
from catalog.names import validate_name
from ucweb.errors import AlreadyExists, InvalidParameter, PermissionDenied


def _check_no_overlap(url: str, *, exclude_id=None) -> None:
    others = ExternalLocation.objects.filter(Q(url__in=ancestors(url)) | Q(url__startswith=url.rstrip("/") + "/"))
    if exclude_id is not None:
        others = others.exclude(id=exclude_id)
    other = others.first()
    if other is not None:
        raise InvalidParameter(f"url {url} overlaps external location {other.name} ({other.url}).")
    require_outside_managed_storage(url, field="url")


# -- reading --------------------------------------------------------------------------------------
def visible_external_locations(*, caller: Principal):
    return authz.visible(ExternalLocation.objects.select_related("credential"), caller)


def get_external_location(*, caller: Principal, name: str) -> ExternalLocation:
    # Any privilege on it shows it (authz.METASTORE_LEVEL); READ FILES (recipes.readable) is for
    # the files under it.
    location, _ = resolve.external_location(caller, name)
    return location


# -- changing -------------------------------------------------------------------------------------
def _usable_credential(caller: Principal, credential_name):
    if not isinstance(credential_name, str) or not credential_name:
        raise InvalidParameter("credential_name is required.")
    credential, access = resolve.credential(caller, credential_name)
    if credential.purpose != CredentialPurpose.STORAGE:
        raise InvalidParameter(f"Credential {credential.name} is a {credential.purpose} credential, not a STORAGE one.")
    authz.require(caller, credential, Action.CREATE_EXTERNAL_LOCATION, access=access)
    return credential


@transaction.atomic
def create_external_location(*, caller: Principal, name, url, credential_name, comment=None) -> ExternalLocation:
    validate_name(name)
    comment = validate_comment(comment)
    canonical = locations.canonical(url, field="url")
    if not authz.has_metastore_privilege(caller, Privilege.CREATE_EXTERNAL_LOCATION):
        raise PermissionDenied("Missing CREATE EXTERNAL LOCATION on the metastore.")
    credential = _usable_credential(caller, credential_name)
    if ExternalLocation.objects.filter(name=name).exists():
        raise AlreadyExists(f"External location '{name}' already exists.")
    _check_no_overlap(canonical)
    location = ExternalLocation.objects.create(
        name=name, url=canonical, credential=credential, comment=comment,
        owner=caller.name, created_by=caller.name,
    )
    return recipes.audited(location, caller=caller, action="createExternalLocation",
                           securable_type=SecurableType.EXTERNAL_LOCATION,
                           details={"url": canonical, "credential": credential.name})


def _dependents(url: str) -> list:
    """The tables and volumes stored under `url`."""
    prefix = url.rstrip("/") + "/"
    in_url = Q(storage_location=url) | Q(storage_location__startswith=prefix)
    return [
        *Table.objects.filter(in_url).select_related("schema__catalog"),
        *Volume.objects.filter(in_url).select_related("schema__catalog"),
    ]


def _names(rows) -> str:
    names = [row.full_name for row in rows[:5]]
    return ", ".join(names) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")


UPDATABLE = recipes.Updatable(
    securable_type=SecurableType.EXTERNAL_LOCATION, siblings=recipes.in_the_metastore,
    fields=recipes.COMMENT_AND_OWNER,
)


@transaction.atomic
def update_external_location(*, caller: Principal, name: str, fields: dict) -> ExternalLocation:
    location, access = resolve.external_location(caller, name, for_update=True)

    def apply_url_and_credential():
        if fields.get("url") is not None:
            canonical = locations.canonical(fields["url"], field="url")
            if canonical != location.url:
                _check_no_overlap(canonical, exclude_id=location.id)
                stranded = [row for row in _dependents(location.url)
                            if not is_within(row.storage_location, canonical)]
                if stranded:
                    raise InvalidParameter(
                        f"External location {location.name} holds {_names(stranded)}, which the new url "
                        f"{canonical} would not cover."
                    )
                location.url = canonical
        if fields.get("credential_name") is not None:
            location.credential = _usable_credential(caller, fields["credential_name"])

    return recipes.update(location, fields, UPDATABLE, caller=caller, access=access, apply=apply_url_and_credential)


@transaction.atomic
def delete_external_location(*, caller: Principal, name: str, force: bool) -> None:
    """Without force, an external location that still holds external tables or volumes stays;
    with force it goes and they stay, no longer governed by any external location."""
    location, access = resolve.external_location(caller, name, for_update=True)
    with recipes.dropping(location, caller=caller, access=access,
                          securable_type=SecurableType.EXTERNAL_LOCATION, details={"force": force}):
        dependents = _dependents(location.url)
        if dependents and not force:
            raise InvalidParameter(
                f"External location {name} holds {_names(dependents)}; drop them first or pass force=true."
            )
        location.delete()
