"""Apache Polaris generic tables: tables of a format other than Iceberg (Delta, CSV, Lance...), as
rows of the one Table model. `format` is kept as the client gave it (`generic_format`), and
`data_source_format` is the Unity Catalog value of that format when it has one (`delta` → DELTA,
`csv` → CSV; `lance` has none: null). `base-location` is the storage location, `doc` the comment.
Every table of the namespace that is neither Iceberg nor a view is a generic table, whichever API
created it: a Delta table created through the Unity Catalog API is a generic table of format
`delta`, and a generic table is a Unity Catalog table. Names are shared with Iceberg tables and
views (one name, one table)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from catalog import authz, resolve, schema_contract
from catalog.authz import Action
from catalog.choices import DataSourceFormat, Privilege, TableType
from catalog.models import Principal, Table
from catalog.services import audit
from catalog.services.common import validate_properties, validate_storage_url
from catalog.services.iceberg import warehouse
from catalog.names import validate_name
from catalog.services.policies import dotted
from catalog.services import dropped
from ucweb.errors import InvalidParameter, TableAlreadyExists, TableDoesNotExist

VIEW_TYPES = (TableType.VIEW, TableType.MATERIALIZED_VIEW, TableType.METRIC_VIEW)
# The formats a Unity Catalog client can read back (its DataSourceFormat enum); Iceberg tables
# belong to the Iceberg REST API.
FORMATS = {value.lower(): value for value in DataSourceFormat.values if value != DataSourceFormat.ICEBERG}
# Django reads the negation as "not ICEBERG or null": a format without a UC value is generic too.
GENERIC = ~Q(data_source_format=DataSourceFormat.ICEBERG) & ~Q(table_type__in=VIEW_TYPES)
MAX_FORMAT_LENGTH = 255


def _format(value) -> tuple[str, str | None]:
    """The format as given (any name, as Polaris accepts) and its Unity Catalog value or None."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameter("format is required.")
    if len(value) > MAX_FORMAT_LENGTH or any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise InvalidParameter(f"format must be at most {MAX_FORMAT_LENGTH} characters, without control characters.")
    if value.lower() == "iceberg":
        raise InvalidParameter("Iceberg tables are created through the Iceberg REST API, not as generic tables.")
    return value, FORMATS.get(value.lower())


def _find(caller: Principal, prefix: str, namespace, name: str, *, for_update: bool = False) -> Table:
    schema, _ = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    table = resolve.lockable(Table.objects.all(), for_update).filter(GENERIC, schema=schema, name=name).first()
    missing = TableDoesNotExist(f"Generic table {dotted(schema, name)} does not exist.")
    if table is None:
        raise missing
    table.schema = schema
    authz.require(caller, table, Action.SEE, missing=missing)  # hidden answers as missing
    return table


def create_generic_table(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Table:
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    name = validate_name(body.get("name"))
    given_format, data_format = _format(body.get("format"))
    doc = body.get("doc")
    if doc is not None and not isinstance(doc, str):
        raise InvalidParameter("doc must be a string.")
    properties = validate_properties(body.get("properties"))
    schema_contract.require_settable(properties, applies=False, what=f"generic table {name}")
    location = validate_storage_url(body.get("base-location"), field="base-location")
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    if location is not None:
        # The one location rule of EXTERNAL tables: inside an external location the caller holds
        # CREATE EXTERNAL TABLE on (admins may name any other URL), never in managed storage, and
        # overlapping no other securable, whether the caller can see it or not.
        from catalog.locations import RECORDED_SCHEMES, place_securable

        location = place_securable(caller=caller, schema=schema, value=location, privilege=Privilege.CREATE_EXTERNAL_TABLE,
                                   field="base-location", schemes=RECORDED_SCHEMES).url
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.")
    try:
        with transaction.atomic():
            table = Table.objects.create(
                schema=schema, name=name, table_type=TableType.EXTERNAL, data_source_format=data_format,
                generic_format=given_format,
                storage_location=location, comment=doc, properties=properties, owner=caller.name,
                created_by=caller.name, updated_at=timezone.now(), updated_by=caller.name,
            )
            audit.record(principal=caller.name, action="createGenericTable", securable_type="table",
                         securable_name=table.full_name, securable_id=table.id,
                         details={"format": given_format, "base_location": location})
    except IntegrityError:
        raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.") from None
    return table


def load_generic_table(*, caller: Principal, prefix: str, namespace: str, name: str,
                       delegation: str | None = None) -> tuple[Table, list[dict] | None]:
    """The table, and the storage access configs the delegation header asks for (or None)."""
    table = _find(caller, prefix, namespace, name)
    authz.require(caller, table, Action.SEE, missing=None, refused=f"Missing SELECT on table {table.full_name}.")
    return table, storage_access_configs(caller=caller, table=table, delegation=delegation)


DELEGATION_MODES = {"vended-credentials"}


def storage_access_configs(*, caller: Principal, table: Table, delegation: str | None) -> list[dict] | None:
    """What the header Polaris-Generic-Table-Access-Delegation asks for: None without the header;
    with `vended-credentials`, short-lived credentials for the table's location (read-only without
    MODIFY), vended and audited as the Unity Catalog temporary table credentials are. A request
    that cannot be served fails, as the spec says, instead of answering without credentials."""
    if delegation in (None, ""):
        return None
    if delegation not in DELEGATION_MODES:
        raise InvalidParameter(f"Unsupported access delegation {delegation!r}; supported: vended-credentials.")
    if not table.storage_location:
        raise InvalidParameter(f"Table {table.full_name} has no base location to vend credentials for.")
    from catalog.choices import TableOperation
    from catalog.services import temporary_credentials
    from catalog.services.iceberg import storage_config

    vended = temporary_credentials.for_table(caller=caller, table_id=str(table.id),
                                             operation=TableOperation.READ_WRITE)
    config = dict(storage_config(vended["url"]))
    keys = vended.get("aws_temp_credentials")
    if keys:
        config.update({"s3.access-key-id": keys["access_key_id"], "s3.secret-access-key": keys["secret_access_key"],
                       "s3.session-token": keys["session_token"]})
        config["s3.session-token-expires-at-ms"] = str(vended["expiration_time"])
    return [{"prefix": vended["url"], "config": config}]


def list_generic_tables(*, caller: Principal, prefix: str, namespace: str):
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    return authz.visible(Table.objects.filter(GENERIC, schema=schema), caller, access=access)


def drop_generic_table(*, caller: Principal, prefix: str, namespace: str, name: str) -> None:
    """Drops the row; the files of a managed table are purged, an external table's are left."""
    with transaction.atomic():
        table = _find(caller, prefix, namespace, name, for_update=True)
        authz.require(caller, table, Action.DROP, missing=None,
                      refused=f"Only the owner of {table.full_name} or a metastore admin may drop it.")
        full_name, table_id = table.full_name, table.id
        dropped.drop_table(table, dropped_by=caller.name)
        audit.record(principal=caller.name, action="dropGenericTable", securable_type="table",
                     securable_name=full_name, securable_id=table_id)
