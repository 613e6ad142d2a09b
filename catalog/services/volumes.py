"""Volumes: governed folders of files.

- MANAGED: stored at `<schema or catalog managed location, else UCWEB_STORAGE_ROOT>/volumes/<id>`;
  dropping the volume purges the folder (see catalog.models.assets).
- EXTERNAL: `storage_location` must lie in an external location on which the caller holds
  CREATE EXTERNAL VOLUME, and may not overlap managed storage, a table or another volume.

Creating needs CREATE VOLUME on the schema, reading READ VOLUME (owners hold every privilege),
renaming, changing the comment or owner, and deleting need ownership.
"""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from catalog import authz, locations, resolve
from catalog.authz import Action
from catalog.choices import Privilege, SecurableType, VolumeType
from catalog.models import Principal, Volume
from catalog.services import dropped, recipes
from catalog.names import validate_name
from catalog.services.schema_assets import managed_location, schema_access, validate_long_comment, visible_in_schema
from ucweb.errors import AlreadyExists, InvalidParameter


def visible_volumes(*, caller: Principal, catalog_name, schema_name):
    return visible_in_schema(Volume.objects.all(), caller=caller, catalog_name=catalog_name, schema_name=schema_name)


def get_volume(*, caller: Principal, full_name: str) -> Volume:
    return recipes.readable(resolve.volume, caller=caller, full_name=full_name)


@transaction.atomic
def create_volume(
    *, caller: Principal, name, catalog_name, schema_name, volume_type, comment=None, storage_location=None,
) -> Volume:
    validate_name(name)
    if volume_type not in VolumeType.values:
        raise InvalidParameter(f"volume_type must be one of {', '.join(VolumeType.values)}.")
    comment = validate_long_comment(comment)
    if volume_type == VolumeType.MANAGED and storage_location is not None:
        raise InvalidParameter("A MANAGED volume gets its storage from the catalog; omit storage_location.")
    if volume_type == VolumeType.EXTERNAL:
        if storage_location is None:
            raise InvalidParameter("storage_location is required for an EXTERNAL volume.")
        storage_location = locations.canonical(storage_location, field="storage_location")
    schema, access = schema_access(caller, catalog_name, schema_name)
    authz.require(caller, schema, Action.CREATE_VOLUME, access=access)
    if volume_type == VolumeType.EXTERNAL:
        storage_location = locations.place_securable(
            caller=caller, schema=schema, value=storage_location, kind="volumes",
            privilege=Privilege.CREATE_EXTERNAL_VOLUME, field="storage_location",
        ).url
    if Volume.objects.filter(schema=schema, name=name).exists():
        raise AlreadyExists(f"Volume '{schema.full_name}.{name}' already exists.")
    volume_id = uuid.uuid4()
    if volume_type == VolumeType.MANAGED:
        storage_location = managed_location(schema, "volumes", volume_id)
    now = timezone.now()
    volume = Volume.objects.create(
        id=volume_id, schema=schema, name=name, volume_type=volume_type, storage_location=storage_location,
        comment=comment, owner=caller.name, created_by=caller.name, updated_at=now, updated_by=caller.name,
    )
    return recipes.audited(volume, caller=caller, action="createVolume", securable_type=SecurableType.VOLUME,
                           details={"volume_type": volume_type, "storage_location": storage_location})


UPDATABLE = recipes.Updatable.in_a_schema(SecurableType.VOLUME, comment=validate_long_comment)


@transaction.atomic
def update_volume(*, caller: Principal, full_name: str, fields: dict) -> Volume:
    volume, access = resolve.volume(caller, full_name, for_update=True)
    return recipes.update(volume, fields, UPDATABLE, caller=caller, access=access)


@transaction.atomic
def delete_volume(*, caller: Principal, full_name: str) -> None:
    """Kept for the retention (catalog.services.dropped); else the row goes, and a managed
    volume's files are purged after commit and grants go with it (the post_delete handlers of
    catalog.models.assets, which also run when a schema is dropped)."""
    volume, access = resolve.volume(caller, full_name, for_update=True)
    with recipes.dropping(volume, caller=caller, access=access, securable_type=SecurableType.VOLUME):
        dropped.drop_volume(volume, dropped_by=caller.name)


def writable_by(access: authz.Access) -> bool:
    """Writing a volume's files: there is no WRITE VOLUME privilege in the API, so its owner (or an
    owner above it, or a metastore admin)."""
    return authz.allows(access.principal, access.chain[0], Action.WRITE, access=access)
