"""Dropped tables and volumes, kept for UCWEB_DROP_RETENTION_SECONDS before they go for good.

Dropping a table (by any protocol) or a volume, when a retention is set, marks its row dropped
(`dropped_at`, catalog.models.base.Droppable) instead of deleting it: its id, columns, commits,
Iceberg metadata, grants and policy attachments stay, its files stay where they are, and it is
missing for every request but the ones here. Its name is free at once.

- Restore (undrop): its owner, an owner above it or a metastore admin; the name it had must be
  free in its schema, and no live securable may hold its location meanwhile (else 409 and nothing
  changes). Anyone else gets the answer of a missing id.
- Purge now: the same people; the row goes and a managed securable's files are purged, as a drop
  without retention does.
- Expiry: the worker (maintenance.expire_dropped) deletes the rows dropped longer ago than the
  retention, purging managed files. An external table's or volume's files are never the
  catalog's to delete: only its row goes.

A retention of 0 (the default) keeps nothing: a drop deletes at once, as before. An Iceberg drop
with `purgeRequested=true` (and the table purge of every protocol that asks one) goes at once too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog import authz, locations, lookup_errors, resolve
from catalog.choices import AuditAction, SecurableType, TableType
from catalog.models import Principal, Table, Volume
from catalog.services import audit, grants
from ucweb.errors import AlreadyExists
from ucweb.ids import parse_uuid


def retention() -> timedelta:
    return timedelta(seconds=settings.UCWEB_DROP_RETENTION_SECONDS)


def drop_table_row(table: Table, *, dropped_by: str = "", purge: bool | None = None) -> None:
    """Removes a table, its columns, commits and grants. Files are purged once the transaction
    commits (see `catalog.signals`): those of a managed table always, others when asked."""
    from catalog.signals import securable_dropped

    if purge is None:
        purge = table.table_type == TableType.MANAGED
    if purge and table.storage_location:
        securable_dropped.send(sender=Table, location=table.storage_location,
                               reason=f"dropped table {table.full_name}", requested_by=dropped_by)
    grants.forget_securables([table.id])
    table.delete()


def drop_table(table: Table, *, dropped_by: str, purge: bool | None = None) -> None:
    """A table dropped through an API: kept for the retention unless a purge is asked for
    (`purge=True`) or there is no retention (then as `drop_table_row`)."""
    if purge or not settings.UCWEB_DROP_RETENTION_SECONDS:
        drop_table_row(table, dropped_by=dropped_by, purge=purge)
    else:
        _keep(table, dropped_by)


def drop_volume(volume: Volume, *, dropped_by: str) -> None:
    """A volume dropped through an API: kept for the retention; without one, the row goes and its
    post_delete handler purges a managed volume's files (catalog.models.assets)."""
    if settings.UCWEB_DROP_RETENTION_SECONDS:
        _keep(volume, dropped_by)
    else:
        volume.delete()


def _keep(row, dropped_by: str) -> None:
    row.dropped_at, row.dropped_by = timezone.now(), dropped_by
    row.save(update_fields=["dropped_at", "dropped_by"])


@dataclass(frozen=True)
class Kind:
    model: type
    securable_type: str
    noun: str
    id_field: str
    missing: Callable[[object], Exception]
    restore_action: str
    purge_action: str
    erase: Callable[[object], None]  # deletes a kept row for good, purging what is the catalog's
    listed_with: tuple[str, ...] = ()  # what its listing shows beside the row


KINDS = {
    SecurableType.TABLE: Kind(
        Table, SecurableType.TABLE, "Table", "table_id", lookup_errors.table_id_not_found,
        AuditAction.UNDROP_TABLE, AuditAction.PURGE_DROPPED_TABLE,
        lambda row: drop_table_row(row, dropped_by=row.dropped_by), listed_with=("columns",)),
    SecurableType.VOLUME: Kind(
        Volume, SecurableType.VOLUME, "Volume", "volume_id", lookup_errors.volume_id_not_found,
        AuditAction.UNDROP_VOLUME, AuditAction.PURGE_DROPPED_VOLUME, lambda row: row.delete()),
}


def dropped_in_schema(*, caller: Principal, securable_type: str, catalog_name, schema_name):
    """The dropped tables or volumes of a schema that the caller may restore, last dropped first."""
    kind = KINDS[securable_type]
    schema, access = resolve.schema(caller, catalog_name, schema_name)
    rows = (kind.model.with_dropped.filter(schema=schema, dropped_at__isnull=False).select_related("schema__catalog")
            .prefetch_related(*kind.listed_with))
    if not access.owns():
        rows = rows.filter(owner=caller.name)
    return rows.order_by("-dropped_at", "id")


def restorable(caller: Principal) -> list:
    """Every dropped table and volume the caller may restore or purge, last dropped first: the
    console's list, over the whole metastore."""
    found = []
    for kind in KINDS.values():
        rows = kind.model.with_dropped.filter(dropped_at__isnull=False).select_related("schema__catalog")
        found += [row for row in rows if caller.is_metastore_admin or authz.Access.load(caller, row).owns()]
    return sorted(found, key=lambda row: row.dropped_at, reverse=True)


def _kept(caller: Principal, kind: Kind, securable_id):
    """The dropped row, locked, once the caller may restore or purge it; else the answer of a
    missing id, whether it was never there, is live or is someone else's."""
    missing = kind.missing(securable_id)
    row = (kind.model.with_dropped.select_for_update(of=("self",)).select_related("schema__catalog")
           .filter(id=parse_uuid(securable_id, field=kind.id_field), dropped_at__isnull=False).first())
    if row is None:
        raise missing
    if not authz.Access.load(caller, row).owns():
        raise authz.hidden(missing).about(row)
    return row


@transaction.atomic
def restore(*, caller: Principal, securable_type: str, securable_id):
    kind = KINDS[securable_type]
    return restore_row(caller, securable_type, _kept(caller, kind, securable_id))


def restore_row(caller: Principal, securable_type: str, row):
    """Restores `row`, a dropped row the caller may restore (locked, in the caller's transaction)."""
    kind = KINDS[securable_type]
    if kind.model.objects.filter(schema=row.schema, name=row.name).exists():
        raise AlreadyExists(f"{kind.noun} '{row.full_name}' already exists: rename or drop it to restore "
                            f"{row.id}.").about(row)
    if row.storage_location and any(not holder.is_container for holder in
                                    locations.holders(row.storage_location, exclude_ids=[row.id])):
        raise AlreadyExists(f"The location of {kind.noun.lower()} {row.id} is held by another securable now.").about(row)
    dropped_at, dropped_by = row.dropped_at, row.dropped_by
    row.dropped_at, row.dropped_by = None, ""
    row.save(update_fields=["dropped_at", "dropped_by"])
    audit.record(principal=caller.name, action=kind.restore_action, securable_type=kind.securable_type,
                 securable_name=row.full_name, securable_id=row.id,
                 details={"dropped_at": dropped_at.isoformat(), "dropped_by": dropped_by})
    return row


@transaction.atomic
def purge(*, caller: Principal, securable_type: str, securable_id) -> None:
    kind = KINDS[securable_type]
    row = _kept(caller, kind, securable_id)
    row_id, name = row.id, row.full_name
    kind.erase(row)
    audit.record(principal=caller.name, action=kind.purge_action, securable_type=kind.securable_type,
                 securable_name=name, securable_id=row_id)


def purge_expired(now=None) -> int:
    """Deletes the tables and volumes dropped longer ago than the retention (the worker's sweep);
    rows another sweep holds are left to it. The number deleted."""
    cutoff = (now or timezone.now()) - retention()
    erased = 0
    with transaction.atomic():
        for kind in KINDS.values():
            rows = (kind.model.with_dropped.select_for_update(of=("self",), skip_locked=True)
                    .select_related("schema__catalog").filter(dropped_at__lte=cutoff))
            for row in rows:
                row_id, name = row.id, row.full_name
                kind.erase(row)
                audit.record(principal=settings.UCWEB_MAINTENANCE_PRINCIPAL, action=kind.purge_action,
                             securable_type=kind.securable_type, securable_name=name, securable_id=row_id,
                             details={"expired": True})
                erased += 1
    return erased
