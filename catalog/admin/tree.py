"""The console's tree (catalog → schema → tables, views, volumes, functions and models) and its
search, both showing only what the console user's principal may see (catalog.services.browse).

The tree is plain HTML: which nodes are open and which page of each list is shown travel in the
address (`open=<id>` for an open catalog or schema, `at=<id>:<kind>:<offset>` for a list's page), so
a page reads only the lists it shows, 50 rows at a time, whatever the size of the catalog.
Catalogs, schemas and volumes are created from it through the services the API calls, with their
checks and audit (a refusal shows the service's message and changes nothing)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django import forms
from django.http import HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse

from catalog import authz
from catalog.admin import console
from catalog.authz import Action
from catalog.choices import Privilege, TableType, VolumeType
from catalog.services import browse, catalogs, schemas, volumes
from ucweb.errors import InvalidParameter

MAX_OPEN = 40
KIND_TITLES = {"catalog": "Catalogs", "schema": "Schemas", "table": "Tables and views", "volume": "Volumes",
               "function": "Functions", "registered_model": "Registered models"}


def _uuid(text: str) -> str | None:
    try:
        return str(uuid.UUID(text))
    except (ValueError, AttributeError, TypeError):
        return None


class TreeState:
    """Which nodes are open and where each list starts, read from and written to the address."""

    def __init__(self, opened=(), offsets=None):
        self.opened = list(dict.fromkeys(opened))[:MAX_OPEN]
        self.offsets = dict(offsets or {})

    @classmethod
    def parse(cls, query) -> TreeState:
        opened = [node for node in map(_uuid, query.getlist("open")) if node]
        offsets = {}
        for value in query.getlist("at"):
            node, _, rest = value.partition(":")
            kind, _, offset = rest.partition(":")
            node = "root" if node == "root" else _uuid(node)
            if node and kind in KIND_TITLES and offset.isdigit():
                offsets[(node, kind)] = int(offset)
        return cls(opened, offsets)

    def keep_only(self, nodes: set) -> None:
        """Forgets the open nodes and offsets of every node but `nodes`."""
        self.opened = [node for node in self.opened if node in nodes]
        self.offsets = {key: offset for key, offset in self.offsets.items() if key[0] in nodes}

    def offset(self, node: str, kind: str) -> int:
        return self.offsets.get((node, kind), 0)

    def is_open(self, node) -> bool:
        return str(node) in self.opened

    def query(self, *, opened=None, offsets=None) -> str:
        opened = self.opened if opened is None else opened
        offsets = self.offsets if offsets is None else offsets
        pairs = [("open", node) for node in opened]
        pairs += [("at", f"{node}:{kind}:{offset}") for (node, kind), offset in offsets.items() if offset]
        return urlencode(pairs)

    def toggled(self, node) -> str:
        node = str(node)
        if node in self.opened:
            return self.query(opened=[n for n in self.opened if n != node])
        return self.query(opened=[*self.opened, node])

    def opening(self, node) -> str:
        return self.query(opened=[*self.opened, str(node)])

    def paged(self, node, kind: str, offset: int) -> str:
        return self.query(offsets={**self.offsets, (str(node), kind): offset})


@dataclass
class Group:
    """A list under a node (`node_id`): its kind, the page shown, its rows as nodes, and links to its
    other pages."""

    kind: str
    page: browse.Page
    state: TreeState
    node_id: str
    nodes: list = field(default_factory=list)

    @property
    def title(self) -> str:
        return KIND_TITLES[self.kind]

    @property
    def previous(self) -> str | None:
        offset = self.page.previous_offset
        return None if offset is None else self.state.paged(self.node_id, self.kind, offset)

    @property
    def next(self) -> str | None:
        offset = self.page.next_offset
        return None if offset is None else self.state.paged(self.node_id, self.kind, offset)


@dataclass
class Node:
    kind: str
    row: object
    url: str
    state: TreeState | None = None
    open: bool = False
    groups: list[Group] = field(default_factory=list)
    create: forms.Form | None = None

    @property
    def toggle(self) -> str:
        return self.state.toggled(self.row.pk)

    @property
    def name(self) -> str:
        return self.row.path if self.kind == "schema" else self.row.name

    @property
    def detail(self) -> str:
        row = self.row
        if self.kind in ("table", "view"):
            if row.table_type == TableType.VIEW:
                return ""  # its kind says it
            return " ".join(part for part in (row.table_type, row.data_source_format) if part).lower()
        if self.kind == "volume":
            return f"{row.volume_type.lower()} volume"
        if self.kind == "function":
            return f"returns {row.data_type}"
        return ""


def change_url(row) -> str:
    return reverse(f"admin:{row._meta.app_label}_{row._meta.model_name}_change", args=[row.pk])


# -- creation forms -------------------------------------------------------------------------------
class CreateForm(forms.Form):
    """A catalog, a schema (in `catalog_name`) or a volume (in `catalog_name`.`schema_name`): the
    names the API takes, checked by the service as the API's request would be."""

    kind = forms.ChoiceField(choices=[("catalog", "catalog"), ("schema", "schema"), ("volume", "volume")],
                             widget=forms.HiddenInput)
    catalog_name = forms.CharField(required=False, widget=forms.HiddenInput)
    schema_name = forms.CharField(required=False, widget=forms.HiddenInput)
    state = forms.CharField(required=False, widget=forms.HiddenInput)
    name = forms.CharField(max_length=255, label="Name")
    comment = forms.CharField(required=False, max_length=10000, label="Comment")
    volume_type = forms.ChoiceField(choices=[(t, t.lower()) for t in VolumeType.values], required=False,
                                    initial=VolumeType.MANAGED, label="Type")
    storage_location = forms.CharField(required=False, max_length=4000, label="Storage location (external)")

    def __init__(self, *args, kind: str | None = None, within=None, **kwargs):
        # Each open node has its own form: its fields' ids name the node.
        kwargs.setdefault("auto_id", f"id_{kind}_{getattr(within, 'pk', 'new')}_%s")
        super().__init__(*args, **kwargs)
        if kind is not None and kind != "volume":
            del self.fields["volume_type"], self.fields["storage_location"]


def create_form(kind: str, state: TreeState, *, catalog=None, schema=None) -> CreateForm:
    return CreateForm(kind=kind, within=schema or catalog, initial={
        "kind": kind, "catalog_name": getattr(catalog, "name", ""), "schema_name": getattr(schema, "uc_name", ""),
        "state": state.query()})


def creation(data: dict):
    """(the service call, the securable type, the full name) of what the form asks to create."""
    name, comment = data["name"], data.get("comment") or None
    catalog_name, schema_name = data.get("catalog_name") or "", data.get("schema_name") or ""
    if data["kind"] == "catalog":
        return (lambda caller: catalogs.create_catalog(caller=caller, name=name, comment=comment)), "catalog", name
    if data["kind"] == "schema":
        return (lambda caller: schemas.create_schema(caller=caller, name=name, catalog_name=catalog_name,
                                                     comment=comment)), "schema", f"{catalog_name}.{name}"
    return (lambda caller: volumes.create_volume(
        caller=caller, name=name, catalog_name=catalog_name, schema_name=schema_name,
        volume_type=data.get("volume_type") or VolumeType.MANAGED, comment=comment,
        storage_location=data.get("storage_location") or None,
    )), "volume", f"{catalog_name}.{schema_name}.{name}"


# -- the tree ------------------------------------------------------------------------------------------
# The links of a page are written once the tree is built, from the nodes it showed: an id the
# address names that is no node shown (hidden, missing, forged) is no longer carried along.
def _schema_node(caller, schema, state: TreeState, shown: set) -> Node:
    node = Node(kind="schema", row=schema, url=change_url(schema), state=state, open=state.is_open(schema.id))
    if not node.open:
        return node
    shown.add(str(schema.id))
    for kind in browse.IN_SCHEMA:
        page = browse.in_schema(caller, schema, kind, offset=state.offset(str(schema.id), kind))
        leaves = [Node(kind="view" if kind == "table" and row.table_type == TableType.VIEW else kind, row=row,
                       url=change_url(row)) for row in page.rows]
        node.groups.append(Group(kind=kind, page=page, state=state, node_id=str(schema.id), nodes=leaves))
    if authz.allows(caller, schema, Action.CREATE_VOLUME):
        node.create = create_form("volume", state, catalog=schema.catalog, schema=schema)
    return node


def _catalog_node(caller, catalog, state: TreeState, shown: set) -> Node:
    node = Node(kind="catalog", row=catalog, url=change_url(catalog), state=state, open=state.is_open(catalog.id))
    if not node.open:
        return node
    shown.add(str(catalog.id))
    page = browse.schemas(caller, catalog, offset=state.offset(str(catalog.id), "schema"))
    for schema in page.rows:
        schema.catalog = catalog  # what its full name and its chain of access need
    node.groups.append(Group(kind="schema", page=page, state=state, node_id=str(catalog.id),
                             nodes=[_schema_node(caller, schema, state, shown) for schema in page.rows]))
    if authz.allows(caller, catalog, Action.CREATE_SCHEMA):
        node.create = create_form("schema", state, catalog=catalog)
    return node


def tree(caller, state: TreeState) -> Group:
    shown = {"root"}
    page = browse.catalogs(caller, offset=state.offset("root", "catalog"))
    root = Group(kind="catalog", page=page, state=state, node_id="root",
                 nodes=[_catalog_node(caller, catalog, state, shown) for catalog in page.rows])
    state.keep_only(shown)
    for catalog in root.nodes:
        for node in [catalog, *(schema for group in catalog.groups for schema in group.nodes)]:
            if node.create is not None:
                node.create.initial["state"] = state.query()
    return root


class TreePages:
    """Adds `tree/`, `tree/create/` and `search/` to a console admin's pages (the catalog admin's)."""

    @property
    def console_pages(self):
        return (("tree/", "tree"), ("tree/create/", "tree_create"), ("search/", "search"), *super().console_pages)

    def _tree_url(self, query: str = "") -> str:
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_tree")
        return f"{url}?{query}" if query else url

    def tree_view(self, request):
        caller = console.console_principal(request)
        state = TreeState.parse(request.GET)
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "title": "Browse the catalog",
            "tree": tree(caller, state), "tree_url": self._tree_url(),
            "create_catalog": create_form("catalog", state)
            if authz.has_metastore_privilege(caller, Privilege.CREATE_CATALOG) else None,
            "search_url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_search"),
        }
        return TemplateResponse(request, "admin/catalog/tree.html", context)

    def tree_create_view(self, request):
        if request.method != "POST":
            return HttpResponseRedirect(self._tree_url())
        form = CreateForm(request.POST)
        state = TreeState.parse(QueryDict(request.POST.get("state", "")))
        if not form.is_valid():
            problems = [f"{form.fields[name].label if name in form.fields else name}: {' '.join(errors)}"
                        for name, errors in form.errors.items()]
            self.message_user(request, "Nothing was created. " + " ".join(problems), level="error")
            return HttpResponseRedirect(self._tree_url(state.query()))
        call, securable_type, full_name = creation(form.cleaned_data)
        created = []
        console.run(request, lambda caller: created.append(call(caller)),
                    success=f"Created {securable_type} {full_name}.",
                    action=f"create{securable_type.title()}", securable_type=securable_type,
                    securable_name=full_name)
        if created and securable_type in ("catalog", "schema"):
            state = TreeState(state.opened, state.offsets)
            return HttpResponseRedirect(self._tree_url(state.opening(created[0].id)))
        return HttpResponseRedirect(self._tree_url(state.query()))

    def search_view(self, request):
        caller = console.console_principal(request)
        text = request.GET.get("q", "")
        try:
            found = browse.search(caller, text)
        except InvalidParameter as exc:
            self.message_user(request, exc.message, level="error")
            found = browse.Found(text="")
        hits = [{"kind": hit.kind, "name": authz.describe(hit.row), "url": change_url(hit.row),
                 "matched": hit.matched, "comment": hit.row.comment or "", "owner": hit.row.owner}
                for hit in found.hits]
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "title": "Search the catalog",
            "text": found.text, "hits": hits, "truncated": [KIND_TITLES.get(k, "Columns") for k in found.truncated],
            "limit": browse.SEARCH_LIMIT, "tree_url": self._tree_url(), "searched": bool(found.text),
            "search_url": reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_search"),
        }
        return TemplateResponse(request, "admin/catalog/search.html", context)
