"""Before the catalog deletes files under a table's location, that location must be the table's
own: a table whose location equals, contains or lies inside another securable's storage (or
contains a managed storage root) would make orphan removal delete another securable's files,
since they are unreferenced by this table's metadata. Such a run is SKIPPED with the reason."""

from __future__ import annotations

from django.conf import settings

from catalog.models import Catalog, RegisteredModel, Schema, Table, Volume
from catalog.storage import InvalidStorageUrl, normalize
from maintenance.errors import Skip


def _norm(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return normalize(url).rstrip("/")
    except InvalidStorageUrl:
        return None


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent + "/")


def own_location(table: Table, location: str | None = None) -> str:
    mine = _norm(location or table.storage_location)
    if mine is None:
        raise Skip("the table has no usable storage location")
    for model, label in ((Table, "table"), (Volume, "volume"), (RegisteredModel, "registered model")):
        # Dropped rows too: a table or volume kept for the retention may be restored with its files
        rows = model._base_manager.exclude(storage_location=None).exclude(storage_location="")
        if model is Table:
            rows = rows.exclude(id=table.id)
        for other_id, other in rows.values_list("id", "storage_location").iterator():
            theirs = _norm(other)
            if theirs and (_inside(mine, theirs) or _inside(theirs, mine)):
                raise Skip(f"the location {mine} overlaps the storage of {label} {other_id}; the catalog deletes "
                           f"no files there")
    roots = [settings.UCWEB_STORAGE_ROOT, *Catalog.objects.values_list("storage_location", flat=True),
             *Schema.objects.values_list("storage_location", flat=True)]
    for root in filter(None, map(_norm, roots)):
        if _inside(root, mine):
            raise Skip(f"the location {mine} contains the managed storage root {root}; the catalog deletes no "
                       f"files there")
    return mine
