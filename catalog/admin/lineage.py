"""Lineage on a table's page: what a view reads, which views read the table, and which principals
wrote it recently, drawn as a small SVG graph. Only what the viewer may see is drawn or named: a
view or table hidden from the viewer's principal is left out, as if it did not exist.

What a view reads comes from its Unity Catalog `view_dependencies` and from the table names its
SQL names after FROM or JOIN (an Iceberg view's SQL, or a UC view's definition). The SQL is not
parsed as SQL: a small scanner reads qualified names (`catalog.schema.table`, with backquoted or
double-quoted parts) after those keywords, skipping comments and string literals; a one- or
two-part name is completed with the view's own catalog and schema (an Iceberg view's default
namespace). A name inside a subquery's alias or a CTE's name is looked up like any other and
shown only if such a table exists."""

from __future__ import annotations

import json
import re
from html import escape

from catalog import authz
from catalog.choices import TableType
from catalog.models import Table

_TOKENS = re.compile(r"""
    (?P<comment>--[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^']|'')*')
  | (?P<name>(?:`(?:[^`]|``)+`|"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)
             (?:\s*\.\s*(?:`(?:[^`]|``)+`|"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*))*)
  | (?P<other>\S)
""", re.VERBOSE | re.DOTALL)
_KEYWORDS = {"from", "join"}


def _parts(name: str) -> list[str]:
    parts = re.findall(r'`((?:[^`]|``)+)`|"((?:[^"]|"")+)"|([A-Za-z_][A-Za-z0-9_$]*)', name)
    return [(a.replace("``", "`") or b.replace('""', '"') or c) for a, b, c in parts]


def referenced_names(sql: str, catalog: str, schema: str) -> list[str]:
    """Full names (`catalog.schema.table`, lower case) that `sql` names after FROM or JOIN."""
    names, after_keyword = [], False
    for match in _TOKENS.finditer(sql or ""):
        kind, text = match.lastgroup, match.group()
        if kind in ("comment", "string"):
            continue
        if kind == "name":
            if after_keyword:
                parts = _parts(text)
                if len(parts) <= 3:
                    full = [catalog, schema][:3 - len(parts)] + parts
                    names.append(".".join(full).lower())
            after_keyword = text.lower() in _KEYWORDS
        else:
            after_keyword = False
    return list(dict.fromkeys(names))


def _view_sql(view) -> tuple[str, str, str]:
    """A view's SQL, and the catalog and schema its unqualified names mean."""
    catalog, schema = view.schema.catalog.name, view.schema.name
    stored = getattr(view, "iceberg", None)
    if stored is not None:
        try:
            metadata = json.loads(stored.metadata_json)
            current = next((v for v in metadata.get("versions") or []
                            if v.get("version-id") == metadata.get("current-version-id")), {})
            namespace = current.get("default-namespace") or [schema]
            sql = next((r.get("sql") for r in current.get("representations") or [] if r.get("type") == "sql"), "")
            return str(sql or ""), str(current.get("default-catalog") or catalog), ".".join(map(str, namespace))
        except (ValueError, AttributeError, TypeError):
            return "", catalog, schema
    return view.view_definition or "", catalog, schema


def reads_of(view) -> list[str]:
    """The full names a view reads: its declared dependencies, then what its SQL names."""
    dependencies = view.view_dependencies.get("dependencies") if isinstance(view.view_dependencies, dict) else None
    declared = [(d.get("table") or {}).get("table_full_name") for d in dependencies or []
                if isinstance(d, dict) and isinstance(d.get("table"), dict)]
    return list(dict.fromkeys([n.lower() for n in declared if isinstance(n, str)] + referenced_names(*_view_sql(view))))


def _full(table) -> str:
    return f"{table.schema.catalog.name}.{table.schema.name}.{table.name}".lower()


def lineage_section(caller, table, writers: list[str]) -> dict:
    """Upstream (what this view reads), downstream (the views that read it) and recent writers,
    among what `caller` may see; three queries however large the catalog."""
    tables = Table.objects.select_related("schema__catalog")
    views = authz.visible(tables.filter(table_type=TableType.VIEW).select_related("iceberg"), caller)
    me = _full(table)
    downstream = [v for v in views if v.id != table.id and me in reads_of(v)]
    upstream = []
    if table.table_type == TableType.VIEW:
        names = [n for n in reads_of(table) if n != me]
        wanted = {tuple(n.split(".")) for n in names if n.count(".") == 2}
        candidates = tables.filter(name__in=[w[2] for w in wanted]) if wanted else tables.none()
        upstream = sorted((t for t in authz.visible(candidates, caller) if tuple(_full(t).split(".")) in wanted),
                          key=_full)
    graph = draw(table, upstream, downstream, writers)
    return {"upstream": upstream, "downstream": downstream, "writers": writers, "graph": graph}


# -- the graph ------------------------------------------------------------------------------------
BOX_W, BOX_H, GAP = 230, 30, 12


def _box(x: int, y: int, label: str, href: str | None, kind: str) -> str:
    fill = {"table": "#417690", "view": "#f5f5f5", "principal": "#fff8e1"}[kind]
    color = "#fff" if kind == "table" else "#333"
    shown = label if len(label) <= 32 else label[:31] + "…"
    box = (f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="4" fill="{fill}" stroke="#888"/>'
           f'<text x="{x + BOX_W / 2}" y="{y + 19}" text-anchor="middle" font-size="12" fill="{color}">'
           f'{escape(shown)}<title>{escape(label)}</title></text>')
    return f'<a href="{escape(href)}">{box}</a>' if href else box


def _edge(x1: float, y1: float, x2: float, y2: float, dashed: bool = False) -> str:
    dash = ' stroke-dasharray="4 3"' if dashed else ""
    return (f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#666"{dash} marker-end="url(#uc-arrow)"/>')


def draw(table, upstream, downstream, writers: list[str]) -> str:
    """Left: what the table reads and who wrote it; middle: the table; right: the views reading
    it. Edges point the way data flows."""
    left = [(_full(t), f"../../{t.id}/change/", "view" if t.table_type == TableType.VIEW else "table", False)
            for t in upstream] + [(f"{w} (wrote)", None, "principal", True) for w in writers]
    right = [(_full(v), f"../../{v.id}/change/", "view", False) for v in downstream]
    rows = max(len(left), len(right), 1)
    height = rows * (BOX_H + GAP) + GAP + 24
    width = 3 * BOX_W + 2 * 120 + 20
    middle_y = (height - 24 - BOX_H) // 2 + 24
    parts = ['<defs><marker id="uc-arrow" markerWidth="8" markerHeight="8" refX="7" refY="3" orient="auto">'
             '<path d="M0,0 L7,3 L0,6 z" fill="#666"/></marker></defs>',
             '<text x="10" y="14" font-size="11" fill="#666">reads from, written by</text>',
             f'<text x="{10 + 2 * (BOX_W + 120)}" y="14" font-size="11" fill="#666">read by</text>',
             _box(10 + BOX_W + 120, middle_y, _full(table), None, "table")]
    for index, (label, href, kind, dashed) in enumerate(left):
        y = 24 + GAP + index * (BOX_H + GAP)
        parts.append(_box(10, y, label, href, kind))
        parts.append(_edge(10 + BOX_W, y + BOX_H / 2, 10 + BOX_W + 118, middle_y + BOX_H / 2, dashed))
    for index, (label, href, kind, dashed) in enumerate(right):
        y = 24 + GAP + index * (BOX_H + GAP)
        parts.append(_box(10 + 2 * (BOX_W + 120), y, label, href, kind))
        parts.append(_edge(10 + 2 * BOX_W + 120, middle_y + BOX_H / 2, 8 + 2 * (BOX_W + 120), y + BOX_H / 2, dashed))
    title = f"Lineage of {_full(table)}"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{escape(title)}" class="uc-lineage"><title>{escape(title)}</title>{"".join(parts)}</svg>')
