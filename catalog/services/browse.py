"""What a principal may browse and find: the catalogs, schemas and what lies in a schema, a page at
a time, and a search by name, comment and column name. Every list is filtered by the one
visibility rule the APIs' listings apply (`catalog.authz.visible`), so neither the tree nor the
search ever shows a name its viewer could not list through the API.

A page costs two queries (its rows and their count) whatever the size of the catalog: a schema
of 10,000 tables is browsed 50 rows at a time."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from catalog import authz
from catalog.choices import TableType
from catalog.models import Catalog, Column, Function, Principal, RegisteredModel, Schema, Table, Volume
from ucweb.errors import InvalidParameter

PAGE = 50
SEARCH_LIMIT = 25
SEARCH_MAX_LENGTH = 255

# What lies in a schema, in the order the tree shows it: (kind, model, what is read of a row).
IN_SCHEMA = {
    "table": (Table, ("id", "name", "comment", "table_type", "data_source_format", "schema_id")),
    "volume": (Volume, ("id", "name", "comment", "volume_type", "schema_id")),
    "function": (Function, ("id", "name", "comment", "data_type", "schema_id")),
    "registered_model": (RegisteredModel, ("id", "name", "comment", "schema_id")),
}


@dataclass
class Page:
    """`rows` from `offset` of the `total` rows there are."""

    rows: list
    total: int
    offset: int = 0
    limit: int = PAGE

    @property
    def previous_offset(self) -> int | None:
        return max(self.offset - self.limit, 0) if self.offset else None

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.rows)
        return end if end < self.total else None

    @property
    def first(self) -> int:
        return self.offset + 1 if self.rows else 0

    @property
    def last(self) -> int:
        return self.offset + len(self.rows)


def _page(queryset, offset: int, limit: int) -> Page:
    offset = max(int(offset or 0), 0)
    total = queryset.count()
    if offset >= total:
        offset = max(total - 1, 0) // limit * limit
    return Page(rows=list(queryset[offset:offset + limit]), total=total, offset=offset, limit=limit)


def catalogs(caller: Principal, *, offset: int = 0, limit: int = PAGE) -> Page:
    return _page(authz.visible(Catalog.objects.order_by("name").only("id", "name", "comment", "owner"), caller),
                 offset, limit)


def schemas(caller: Principal, catalog: Catalog, *, offset: int = 0, limit: int = PAGE) -> Page:
    """The schemas of `catalog` the caller sees, nested ones too (by their path: `a.b`)."""
    rows = Schema.objects.filter(catalog=catalog).order_by("path").only(
        "id", "name", "path", "parent_id", "comment", "owner", "catalog_id")
    return _page(authz.visible(rows, caller), offset, limit)


def in_schema(caller: Principal, schema: Schema, kind: str, *, offset: int = 0, limit: int = PAGE) -> Page:
    model, fields = IN_SCHEMA[kind]
    return _page(authz.visible(model.objects.filter(schema=schema).order_by("name").only(*fields), caller),
                 offset, limit)


# -- search -----------------------------------------------------------------------------------------
@dataclass
class Hit:
    """One securable found: its kind (`view` for a table that is a view), its row and why it was
    found (`name`, `comment`, or `column <name>`)."""

    kind: str
    row: object
    matched: str


@dataclass
class Found:
    text: str
    hits: list[Hit] = field(default_factory=list)
    # The kinds with more hits than shown, so the page can say so.
    truncated: list[str] = field(default_factory=list)


def _matched(row, text: str) -> str:
    return "name" if text.lower() in (row.name or "").lower() else "comment"


def _named(queryset, text: str):
    return queryset.filter(Q(name__icontains=text) | Q(comment__icontains=text))


SEARCHED = (
    ("catalog", lambda: Catalog.objects.order_by("name")),
    ("schema", lambda: Schema.objects.select_related("catalog").order_by("catalog__name", "path")),
    ("table", lambda: Table.objects.select_related("schema__catalog").order_by(
        "schema__catalog__name", "schema__path", "name")),
    ("volume", lambda: Volume.objects.select_related("schema__catalog").order_by(
        "schema__catalog__name", "schema__path", "name")),
    ("function", lambda: Function.objects.select_related("schema__catalog").order_by(
        "schema__catalog__name", "schema__path", "name")),
    ("registered_model", lambda: RegisteredModel.objects.select_related("schema__catalog").order_by(
        "schema__catalog__name", "schema__path", "name")),
)


def clean_search_text(text) -> str:
    text = (text or "").strip() if isinstance(text, str) else ""
    if len(text) > SEARCH_MAX_LENGTH:
        raise InvalidParameter(f"Search for at most {SEARCH_MAX_LENGTH} characters.")
    if "\x00" in text:
        raise InvalidParameter("The search text may not contain NUL characters.")
    return text


def search(caller: Principal, text, *, limit: int = SEARCH_LIMIT) -> Found:
    """Everything the caller may see whose name or comment contains `text` (any case): catalogs,
    schemas, tables and views, volumes, functions and registered models, and the tables the
    caller may see that have a column of that name. At most `limit` of each kind."""
    text = clean_search_text(text)
    found = Found(text=text)
    if not text:
        return found
    for kind, rows in SEARCHED:
        matches = list(authz.visible(_named(rows(), text), caller)[:limit + 1])
        if len(matches) > limit:
            found.truncated.append(kind)
        for row in matches[:limit]:
            shown = "view" if kind == "table" and row.table_type == TableType.VIEW else kind
            found.hits.append(Hit(kind=shown, row=row, matched=_matched(row, text)))
    columns = list(Column.objects.filter(
        name__icontains=text, table_id__in=authz.visible(Table.objects.all(), caller).values("id"),
    ).select_related("table__schema__catalog").order_by(
        "table__schema__catalog__name", "table__schema__path", "table__name", "position")[:limit + 1])
    if len(columns) > limit:
        found.truncated.append("column")
    for column in columns[:limit]:
        table = column.table
        found.hits.append(Hit(kind="view" if table.table_type == TableType.VIEW else "table", row=table,
                              matched=f"column {column.name}"))
    return found
