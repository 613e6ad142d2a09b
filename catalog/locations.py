"""The one location rule: every storage location that enters the catalog, through any protocol,
passes here.

1. **Normalise.** `canonical(value)` parses a URL or a bare absolute path (`/data/t` means
   `file:///data/t`; a relative path is refused), lower-cases the scheme, drops `localhost`,
   decodes percent-encoding (so `%2e%2e` and `%2F` are what they spell), resolves `.`, `..` and
   duplicate or trailing slashes, and on `file://` follows symbolic links to the real path. An
   object-store key may not hold `.` or `..` segments at all. Every check compares canonical
   forms; what a table's location is answered as keeps the trailing slash of a directory
   (`as_registered`), which is no part of any comparison.
2. **Belong.** A table, view or volume location is either the managed location the catalog
   assigned to that securable (`<managed root>/tables/<id>`), or lies in an external location on
   which the caller holds CREATE EXTERNAL TABLE (or CREATE EXTERNAL VOLUME). A catalog or schema
   storage root lies in an external location on which the caller holds CREATE MANAGED STORAGE.
   A metastore admin may name a location outside every external location.
3. **Never overlap.** No location equals, contains or lies in another securable's location:
   tables, views, volumes, registered models, unfinished staging tables, the managed areas of
   catalogs and schemas, and the server root's managed areas (`tables/`, `volumes/`, `models/`).
   Children of a schema or catalog lie in its managed area legitimately when they are managed by
   it; a location inside an external location is what the external location is for.

Purge and credential vending act only on a securable's own location: `foreign_holder(url)` names
a live securable that a location would reach into (or that contains it, other than the
containers that legitimately do), and both refuse when there is one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.db.models import Q

from catalog import authz
from catalog.authz import Action
from catalog.choices import Privilege
from catalog.models import Catalog, ExternalLocation, Principal, RegisteredModel, Schema, StagingTable, Table, Volume
from catalog.storage import StorageError, join, normalize, parse
from catalog.storage.urls import Location
from ucweb.errors import InvalidParameter, PermissionDenied

# Schemes ucweb's storage and credential vending serve (where the server itself writes files).
LOCATION_SCHEMES = frozenset({"file", "s3"})
# Schemes a catalog may record for storage it never touches itself (EXTERNAL tables, roots).
RECORDED_SCHEMES = frozenset({"file", "s3", "gs", "abfs", "abfss"})
# The folders of a managed root that hold the managed securables of that root.
MANAGED_AREAS = ("tables", "volumes", "models")


# -- 1. normalise -------------------------------------------------------------------------------
def _lexical(value, *, field: str, schemes) -> Location:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter(
            f"{field} must be a storage URL such as s3://bucket/prefix or file:///path, or an absolute path."
        )
    try:
        urlsplit(value.strip())  # refuses what no URL parser reads alike, e.g. "s3://[bucket"
        location = parse(value)
    except ValueError:
        raise InvalidParameter(f"{field} {value!r} is not a valid storage URL.") from None
    except StorageError as exc:
        raise InvalidParameter(f"{field} {value!r} is not an absolute storage URL or path: {exc}") from None
    if schemes is not None and location.scheme not in schemes:
        raise InvalidParameter(
            f"{field} {value!r} must be an absolute path or a URL with one of the schemes "
            f"{', '.join(sorted(schemes))}."
        )
    segments = [segment for segment in location.path.split("/") if segment]
    # No further decoding may reveal a '.' or '..' either: some clients decode URLs again.
    if any(_decoded_fully(segment) in (".", "..") for segment in segments):
        raise InvalidParameter(f"{field} {value!r} may not contain '.' or '..' segments.")
    if location.scheme != "file":
        location = Location(location.scheme, location.authority, "/" + "/".join(segments))
    return location


def _decoded_fully(segment: str) -> str:
    """`segment` percent-decoded until decoding changes nothing (each round shortens it)."""
    while (decoded := unquote(segment)) != segment:
        segment = decoded
    return segment


def _real(location: Location) -> Location:
    if location.scheme != "file":
        return location
    try:
        path = os.path.realpath(location.path)
    except (OSError, ValueError):
        raise InvalidParameter(f"Location {location.url} cannot be resolved on this file system.") from None
    return Location("file", "", path)


def canonical(value, *, field: str = "storage_location", schemes=LOCATION_SCHEMES) -> str:
    """The canonical form of a storage location, or InvalidParameter (400). `schemes=None`
    accepts any scheme; RECORDED_SCHEMES is what UC tables and roots may name."""
    return _real(_lexical(value, field=field, schemes=schemes)).url


def as_registered(value: str, url: str) -> str:
    """Canonical `url` in the form `value` was registered in, as far as the two may differ: a
    directory given with a trailing slash keeps it (readers such as Polars read a location
    without one as a single file). Only for answering: checks compare canonical forms."""
    return url + "/" if value.strip().endswith("/") and not url.endswith("/") else url


def _forms(value: str) -> list[str]:
    """A canonical location as stored and as written before symbolic links were followed."""
    forms = [value]
    try:
        lexical = normalize(value)
    except StorageError:
        return forms
    if lexical not in forms:
        forms.append(lexical)
    return forms


def ancestors(url: str) -> list[str]:
    """`s3://b/x/y` → [`s3://b`, `s3://b/x`, `s3://b/x/y`]: every prefix that contains the URL
    (the URL included), in canonical form."""
    location = parse(url)
    current = parse("file:///" if location.scheme == "file" else f"{location.scheme}://{location.authority}")
    found = [current.url]
    for segment in (s for s in location.path.split("/") if s):
        current = current.child(segment)
        found.append(current.url)
    return found


def is_within(url: str, prefix: str) -> bool:
    """Whether canonical `url` equals canonical `prefix` or lies under it."""
    if url == prefix:
        return True
    base = prefix if prefix.endswith("/") else prefix + "/"
    return url.startswith(base)


def overlaps(a: str, b: str) -> bool:
    return is_within(a, b) or is_within(b, a)


def _safe_normalize(url) -> str | None:
    try:
        return normalize(url)
    except (StorageError, TypeError):
        return None


# -- who holds what -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Holder:
    """A securable that holds a storage location."""

    kind: str  # table, volume, registered model, staging table, catalog, schema, external location
    name: str
    url: str
    id: object

    @property
    def is_container(self) -> bool:
        """Managed areas and external locations hold other securables legitimately."""
        return self.kind in ("catalog", "schema", "external location", "managed storage")

    def __str__(self) -> str:
        return f"{self.kind} {self.name} ({self.url})"


def _overlap_query(field: str, urls: list[str]) -> Q:
    query = Q(pk__in=[])
    for url in urls:
        query |= Q(**{f"{field}__in": ancestors(url)})
        query |= Q(**{f"{field}__startswith": url.rstrip("/") + "/"})
    return query


def server_areas() -> list[Holder]:
    """The managed areas of the server's storage root."""
    root = _safe_normalize(settings.UCWEB_STORAGE_ROOT)
    if root is None:
        return []
    forms = _forms(root)
    if parse(root).scheme == "file" and _real(parse(root)).url not in forms:
        forms.append(_real(parse(root)).url)
    return [Holder("managed storage", f"{area}/ of the storage root", join(form, area), None)
            for form in forms for area in MANAGED_AREAS]


def holders(url: str, *, exclude_ids=()) -> list[Holder]:
    """Every securable whose location equals, contains or lies in canonical `url`."""
    urls = _forms(url)
    exclude = [value for value in exclude_ids if value is not None]
    found: list[Holder] = []

    def rows(model, field, *values, **filters):
        return model.objects.filter(_overlap_query(field, urls), **filters).exclude(id__in=exclude).values_list(
            "id", field, *values)

    for row_id, location, name, schema, catalog in rows(Table, "storage_location", "name", "schema__path",
                                                        "schema__catalog__name"):
        found.append(Holder("table", f"{catalog}.{schema}.{name}", location, row_id))
    for row_id, location, name, schema, catalog in rows(Volume, "storage_location", "name", "schema__path",
                                                        "schema__catalog__name"):
        found.append(Holder("volume", f"{catalog}.{schema}.{name}", location, row_id))
    for row_id, location, name, schema, catalog in rows(RegisteredModel, "storage_location", "name",
                                                        "schema__path", "schema__catalog__name"):
        found.append(Holder("registered model", f"{catalog}.{schema}.{name}", location, row_id))
    for row_id, location in rows(StagingTable, "staging_location", finalized_at__isnull=True):
        found.append(Holder("staging table", str(row_id), location, row_id))
    for row_id, location, name in rows(Catalog, "storage_location", "name"):
        found.append(Holder("catalog", name, location, row_id))
    for row_id, location, name, catalog in rows(Schema, "storage_location", "path", "catalog__name"):
        found.append(Holder("schema", f"{catalog}.{name}", location, row_id))
    for row_id, location, name in rows(ExternalLocation, "url", "name"):
        found.append(Holder("external location", name, location, row_id))
    found += [area for area in server_areas() if any(overlaps(form, area.url) for form in urls)]
    return found


def _as_seen_by(caller: Principal, holder: Holder) -> str:
    """How a refusal names the securable a location collides with: by name for a metastore admin,
    who sees everything; for anyone else without its name, kind or id, which the location rule must
    not reveal (the collision itself cannot be hidden: the location is refused either way)."""
    return str(holder) if caller.is_metastore_admin else "the location of another securable"


def _inside(url: str, holder: Holder) -> bool:
    return any(is_within(form, holder.url) for form in _forms(url))


def containing_location(url: str) -> ExternalLocation | None:
    """The external location that contains canonical `url`, if any (at most one can)."""
    candidates = [a for form in _forms(url) for a in ancestors(form)]
    return ExternalLocation.objects.select_related("credential").filter(url__in=candidates).order_by("-url").first()


def managed_roots() -> list[str]:
    """The server's managed storage root and the managed area of every catalog and schema with a
    storage root of its own."""
    roots = [settings.UCWEB_STORAGE_ROOT]
    for model in (Catalog, Schema):
        roots += list(model.objects.exclude(storage_location__isnull=True).exclude(storage_location="")
                      .values_list("storage_location", flat=True))
    return [root for root in map(_safe_normalize, roots) if root is not None]


def overlapping_managed_root(url: str) -> str | None:
    return next((root for root in managed_roots() for form in _forms(url) if overlaps(form, root)), None)


def require_outside_managed_storage(url: str, *, field: str = "storage_location") -> None:
    root = overlapping_managed_root(url)
    if root is not None:
        raise InvalidParameter(f"{field} {url} overlaps managed storage ({root}).")


# -- 2. belong ---------------------------------------------------------------------------------------
def _require_privilege(caller: Principal, url: str, privilege: str) -> ExternalLocation | None:
    location = containing_location(url)
    if location is None:
        if caller.is_metastore_admin:
            return None
        raise PermissionDenied(f"No external location contains {url}; ask a metastore admin to create one.")
    # The caller named a path, not the location: a refusal names what is missing (a 403).
    authz.require(caller, location, Action(privilege), missing=None)
    return location


def require_external_location(caller: Principal, url, privilege: str) -> ExternalLocation | None:
    """The external location governing `url`, after checking that the caller holds `privilege`
    on it. 400 for text that is not a storage location or one that overlaps managed storage; 403
    when no external location contains it (admins excepted: None is then returned) or the
    privilege is missing."""
    location = canonical(url, field="storage_location", schemes=None)
    require_outside_managed_storage(location)
    return _require_privilege(caller, location, privilege)


def managed_location(schema, kind: str, securable_id) -> str:
    """`<root>/<kind>/<id>` under the schema's managed area, else that of the nearest schema it
    lies in (namespaces nest), else the catalog's, else the server's storage root."""
    roots = [schema.storage_location, *(parent.storage_location for parent in schema.ancestors())]
    root = next(filter(None, roots), None) or schema.catalog.storage_location or settings.UCWEB_STORAGE_ROOT
    return normalize(join(root, kind, str(securable_id)))


@dataclass(frozen=True)
class Placed:
    url: str
    managed: bool  # True: the managed location the catalog assigned to this securable


def place_securable(
    *, caller: Principal, schema, value, securable_id=None, kind: str = "tables",
    privilege: str = Privilege.CREATE_EXTERNAL_TABLE, field: str = "location", schemes=LOCATION_SCHEMES,
    exclude_ids=(),
) -> Placed:
    """Checks the location of a table, view or volume (`kind` names its managed area) and returns
    its canonical form. `securable_id` is the id of the securable being placed (its own managed
    location is then allowed); `exclude_ids` are securables the location may overlap (the
    securable itself when it moves)."""
    url = canonical(value, field=field, schemes=schemes)
    managed = False
    if securable_id is not None and schema is not None:
        assigned = managed_location(schema, kind, securable_id)
        managed = url in _forms(canonical(assigned, schemes=None))
    for holder in holders(url, exclude_ids=(securable_id, *exclude_ids)):
        if holder.kind == "external location" and _inside(url, holder):
            continue  # governed by it: the privilege is checked below
        if managed and holder.is_container and _inside(url, holder):
            continue  # the managed area that assigned this location
        raise InvalidParameter(f"{field} {url} overlaps {_as_seen_by(caller, holder)}.")
    if not managed:
        require_outside_managed_storage(url, field=field)
        _require_privilege(caller, url, privilege)
    return Placed(url, managed)


def place_root(*, caller: Principal, value, kind: str, securable_id, field: str = "storage_root") -> tuple[str, str]:
    """Checks the storage root of a new catalog or schema (`kind`) and returns it with the
    managed area the catalog will use under it (`<root>/__unitystorage/<kind>s/<id>`).

    The root may not lie in another securable's location or managed area; it may contain them,
    because the new managed area is a fresh folder of its own. Outside an external location on
    which the caller holds CREATE MANAGED STORAGE, only a metastore admin may name a root."""
    url = canonical(value, field=field, schemes=RECORDED_SCHEMES)
    area = join(url, "__unitystorage", f"{kind}s", str(securable_id))
    for holder in holders(url):
        if holder.kind == "external location" and _inside(url, holder):
            continue
        if _inside(url, holder):
            raise InvalidParameter(f"{field} {url} lies in {holder}.")
    for holder in holders(area):
        if holder.kind != "external location":
            raise InvalidParameter(f"{field} {url} overlaps {holder}.")
    _require_privilege(caller, url, Privilege.CREATE_MANAGED_STORAGE)
    return url, area


def registrable_metadata_file(*, caller: Principal, value, field: str = "metadata-location", own_id=None) -> str:
    """The canonical URL of an Iceberg metadata file that `caller` may have the catalog read in
    order to register a table or view or admit a notification: a `*.metadata.json` file, not
    inside another live table, view, volume or model (than `own_id`, the table a notification
    updates), and in an external location on which the caller holds CREATE EXTERNAL TABLE (a
    metastore admin may name any other place, e.g. the folder of a dropped table)."""
    url = canonical(value, field=field)
    if not url.endswith(".metadata.json"):
        raise InvalidParameter(f"{field} {url} must name an Iceberg metadata file (*.metadata.json).")
    for holder in holders(url, exclude_ids=(own_id,)):
        if not holder.is_container and _inside(url, holder):
            raise InvalidParameter(f"{field} {url} belongs to {_as_seen_by(caller, holder)}.")
    _require_privilege(caller, url, Privilege.CREATE_EXTERNAL_TABLE)
    return url


def file_inside_table(value, table_location: str, *, field: str) -> str:
    """The canonical URL of a file that a table reports as its own (the Iceberg metadata of a
    UniForm Delta table), which is what gets stored and served: it lies inside the table's
    location. Anything else (another table's directory, a path outside every storage root) would
    be served to readers as this table's. On file:// the check follows symbolic links; a client
    with access to the disk could still link the path elsewhere afterwards, which reaches only
    readers that follow it with their own access: the server never reads that file."""
    try:
        url = canonical(value, field=field, schemes=None)
        root = canonical(table_location, schemes=None)
    except InvalidParameter:
        url = root = None
    if url is None or not _strictly_inside(url, root):
        raise InvalidParameter(f"{field} must be inside the table's location {table_location}.")
    return url


def is_file_inside_table(url, table_location: str) -> bool:
    """Whether a stored `url` is what `file_inside_table` answers for a file inside the table,
    judged from the text alone (no file system, no query): rows written before that rule may
    hold anything."""
    try:
        lexical, root = _lexical(url, field="", schemes=None).url, _lexical(table_location, field="", schemes=None).url
    except InvalidParameter:
        return False
    return lexical == url and _strictly_inside(url, root)


def _strictly_inside(url: str, root: str) -> bool:
    return url != root and is_within(url, root)


# -- 3. acting on a securable's own location ------------------------------------------------------------
def foreign_holder(url: str, *, own_id=None) -> Holder | None:
    """A live securable (other than `own_id`) that acting on everything under `url` would reach:
    one whose location equals or lies under `url`, or a table, volume or staging table that
    contains `url`. Managed areas, external locations and registered models contain their
    children legitimately."""
    try:
        location = normalize(url)
    except StorageError:
        return Holder("unparsable location", url, url, None)
    for holder in holders(location, exclude_ids=(own_id,)):
        if holder.kind == "registered model" and _inside(location, holder):
            continue  # a model version lies in its model's folder
        if holder.is_container and _inside(location, holder) and holder.url not in _forms(location):
            continue
        return holder
    return None


def require_own_location(url: str, *, own_id, what: str) -> None:
    """Refuses to act (vend, purge) on `url` when another live securable holds part of it."""
    holder = foreign_holder(url, own_id=own_id)
    if holder is not None:
        raise PermissionDenied(f"The location of {what} overlaps {holder}; nothing is done there.")


__all__ = [
    "LOCATION_SCHEMES", "RECORDED_SCHEMES", "Holder", "Placed", "ancestors", "as_registered", "canonical",
    "containing_location",
    "file_inside_table", "foreign_holder", "holders", "is_file_inside_table", "is_within", "managed_location", "managed_roots",
    "overlapping_managed_root", "overlaps", "place_root", "place_securable", "registrable_metadata_file",
    "require_external_location",
    "require_outside_managed_storage", "require_own_location",
]
