"""The UC Delta REST API (managed tables spec 1.0, `/delta/v1`) over the one table model and the
one ratification (commits.ratification). The views call this facade:

- wire: the errors of this API and the parsing/rendering of its bodies (an add-commit's commit is
  the legacy commit API's, hyphenated: commits.delta_wire.DeltaCommit);
- tables: configuration, loadTable, listing, creation, rename, drop, metrics;
- credentials: storage credentials for tables, staging tables and paths;
- update: updateTable (requirements, metadata actions, backfill and add-commit).

The etag is a digest of what the catalog knows of the table's metadata (columns, partitioning,
properties with the protocol and domain-metadata projections, comment): it changes exactly when
one of them changes, through either API.
"""

from commits.delta_v1.credentials import path_credentials, staging_table_credentials, table_credentials
from commits.delta_v1.tables import (
    catalog_properties, create_staging_table, create_table, delete_table, get_config, list_tables, load_table,
    rename_table, report_metrics, table_exists,
)
from commits.delta_v1.update import update_table
from commits.delta_v1.wire import (
    BadRequest, CommitVersionConflict, RequirementFailed, UnsupportedTableFormat,
)

__all__ = [
    "BadRequest", "CommitVersionConflict", "RequirementFailed", "UnsupportedTableFormat", "catalog_properties",
    "create_staging_table", "create_table", "delete_table", "get_config", "list_tables", "load_table",
    "path_credentials", "rename_table", "report_metrics", "staging_table_credentials", "table_credentials",
    "table_exists", "update_table",
]
