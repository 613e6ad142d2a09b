"""A table's maintenance policy changed from the console: its `ucweb.maintenance.*` properties,
set or removed by the commit path a client's change of them takes, with that path's checks (the
owner's or a metastore admin's alone, `catalog.policy_properties`) and audit event.

- Iceberg: `commits.engine.commit_table` with `set-properties` / `remove-properties`, as the
  Iceberg REST API's updateTable (audited as commitIcebergTable).
- managed Delta: a commit of the table's current metaData with the new configuration, staged in
  `_delta_log/_staged_commits/` and ratified by `commits.delta.write_commit` with the properties
  as its metadata, as `POST /delta/commit` (audited as commitDelta). A refused commit's staged
  file is deleted: a refusal leaves storage as it was."""

from __future__ import annotations

import json
import uuid

from catalog.choices import DataSourceFormat, TableType
from catalog.models import Principal, Table
from catalog.policy_properties import POLICY_PROPERTY_PREFIX
from catalog.storage import storage_within
from commits import delta as delta_commits
from commits import engine
from commits.formats import delta_log
from commits.publication import staged_file
from maintenance import publish
from commits.delta_state import commit_timestamp, now_ms, read_state
from ucweb.errors import InvalidParameter

# The keys the console offers (maintenance/policy.py and commits/staged.py read them).
KEYS = {
    "enabled": "false turns the catalog's own runs off for the table",
    "target-file-size-bytes": "target file size of OPTIMIZE, in bytes",
    "min-input-files": "fewest small files OPTIMIZE compacts together",
    "orphan-retention-hours": "hours an unreferenced file is kept before REMOVE_ORPHANS deletes it",
    "client-operations": "operations clients may run themselves (OPTIMIZE, VACUUM, REORG)",
}
MAX_VALUE_LENGTH = 1000


def audit_action(table: Table) -> str:
    """What the change is audited as: the commit of the table's protocol."""
    return "commitIcebergTable" if table.data_source_format == DataSourceFormat.ICEBERG else "commitDelta"


def editable(table: Table) -> bool:
    return table.data_source_format == DataSourceFormat.ICEBERG or (
        table.data_source_format == DataSourceFormat.DELTA and table.table_type == TableType.MANAGED
        and table.latest_version is not None)


def validate(key, value) -> tuple[str, str | None]:
    """(`ucweb.maintenance.<key>`, the value, None to remove it)."""
    if key not in KEYS:
        raise InvalidParameter(f"Choose one of {', '.join(POLICY_PROPERTY_PREFIX + k for k in KEYS)}.")
    if not isinstance(value, str) or len(value) > MAX_VALUE_LENGTH or "\x00" in value:
        raise InvalidParameter(f"The value must be text of at most {MAX_VALUE_LENGTH} characters.")
    value = value.strip()
    return POLICY_PROPERTY_PREFIX + key, value or None


def change_policy(*, caller: Principal, table: Table, key: str, value: str) -> None:
    """Sets `ucweb.maintenance.<key>` to `value` on `table` (an empty value removes it)."""
    name, value = validate(key, value)
    if not editable(table):
        raise InvalidParameter(f"{table.full_name} is neither an Iceberg table nor a catalog-managed Delta table: "
                               "its properties change only through the engine that created it.")
    if table.data_source_format == DataSourceFormat.ICEBERG:
        update = ({"action": "set-properties", "updates": {name: value}} if value is not None
                  else {"action": "remove-properties", "removals": [name]})
        engine.commit_table(caller=caller, prefix=table.schema.catalog.name, namespace=table.schema.levels,
                            name=table.name, body={"updates": [update]})
        return
    _delta_commit(caller, table, name, value)


def _delta_commit(caller: Principal, table: Table, name: str, value: str | None) -> None:
    table.refresh_from_db(fields=["latest_version", "latest_published_version", "properties"])
    latest = table.latest_version
    metadata = dict(read_state(table).metadata)
    configuration = dict(metadata.get("configuration") or {})
    properties = dict(table.properties or {})
    for changed in (configuration, properties):
        if value is None:
            changed.pop(name, None)
        else:
            changed[name] = value
    metadata["configuration"] = configuration
    timestamp = max(now_ms(), commit_timestamp(table, latest) + 1)
    info = {"inCommitTimestamp": timestamp, "timestamp": timestamp, "operation": "SET TBLPROPERTIES",
            "operationParameters": {"properties": json.dumps({name: value})}, "readVersion": latest,
            "isBlindAppend": True, "engineInfo": "ucweb-console"}
    payload = delta_log.encode_actions([{"commitInfo": info}, {"metaData": metadata}])
    location = table.storage_location
    file_name = delta_log.staged_file_name(latest + 1, str(uuid.uuid4()))
    storage = storage_within(location)
    storage.put(staged_file(location, file_name), payload)
    try:
        delta_commits.write_commit(caller=caller, body={
            "table_id": str(table.id), "table_uri": location, "metadata": {"properties": properties},
            "commit_info": {"version": latest + 1, "timestamp": timestamp, "file_name": file_name,
                            "file_size": len(payload), "file_modification_timestamp": timestamp},
        })
    except Exception:
        storage.delete(staged_file(location, file_name))
        raise
    publish.verify_table(table.id)
