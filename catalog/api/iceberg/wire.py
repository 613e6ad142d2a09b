"""Bodies of the Iceberg REST catalog for the OpenAPI document: the Apache Iceberg REST spec's
names with an `Iceberg` prefix (the UC API has components of the same names); a request body's
component gets its `Request` suffix from COMPONENT_SPLIT_REQUEST. Requests are parsed and checked
by the services, which give the clearer errors (requirements and updates by pyiceberg's own
models, in commits.formats.iceberg)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ucweb.bodies import Body, Hyphenated

JsonObject = dict[str, Any]  # a JSON object whose shape the Iceberg spec gives (schemas, specs, metadata, reports)


class IcebergErrorModel(Body):
    message: str
    type: str
    code: int
    stack: list[str] = None


class IcebergErrorResponse(Body):
    error: IcebergErrorModel


class IcebergCatalogConfig(Hyphenated):
    defaults: dict[str, str]
    overrides: dict[str, str]
    endpoints: list[str] = None
    idempotency_key_lifetime: str = None


class IcebergOAuthTokenResponse(Body):
    access_token: str
    token_type: str
    expires_in: int = None
    issued_token_type: str = None


class IcebergTableIdentifier(Body):
    namespace: list[str]
    name: str


class IcebergCreateNamespace(Body):
    namespace: list[str]
    properties: dict[str, str] = None


class IcebergCreateNamespaceResponse(IcebergCreateNamespace):
    pass


class IcebergGetNamespaceResponse(IcebergCreateNamespace):
    pass


class IcebergListNamespacesResponse(Hyphenated):
    next_page_token: str = None
    namespaces: list[list[str]]


class IcebergUpdateNamespaceProperties(Body):
    removals: list[str] = None
    updates: dict[str, str] = None


class IcebergUpdateNamespacePropertiesResponse(Body):
    updated: list[str]
    removed: list[str]
    missing: list[str] = None


class IcebergListTablesResponse(Hyphenated):
    next_page_token: str = None
    identifiers: list[IcebergTableIdentifier]


class IcebergCreateTable(Hyphenated):
    name: str
    location: str = None
    table_schema: JsonObject = Field(alias="schema")
    partition_spec: JsonObject = None
    write_order: JsonObject = None
    stage_create: bool = None
    properties: dict[str, str] = None


class IcebergStorageCredential(Body):
    prefix: str
    config: dict[str, str]


class IcebergLoadTableResult(Hyphenated):
    metadata_location: str = None
    metadata: JsonObject
    config: dict[str, str] = None
    storage_credentials: list[IcebergStorageCredential] = None


class IcebergLoadCredentialsResponse(Hyphenated):
    storage_credentials: list[IcebergStorageCredential]


class IcebergCommitTable(Body):
    identifier: IcebergTableIdentifier = None
    requirements: list[JsonObject]
    updates: list[JsonObject]


class IcebergCommitTableResponse(Hyphenated):
    metadata_location: str
    metadata: JsonObject


class IcebergTableChange(Body):
    identifier: IcebergTableIdentifier
    requirements: list[JsonObject]
    updates: list[JsonObject]


class IcebergCommitTransaction(Hyphenated):
    table_changes: list[IcebergTableChange]


class IcebergRenameTable(Body):
    source: IcebergTableIdentifier
    destination: IcebergTableIdentifier


class IcebergRegisterTable(Hyphenated):
    name: str
    metadata_location: str
    overwrite: bool = None


class IcebergReportMetrics(Hyphenated):
    report_type: Literal["scan-report", "commit-report"]
    table_name: str
    snapshot_id: int


class IcebergCreateView(Hyphenated):
    name: str
    location: str = None
    view_schema: JsonObject = Field(alias="schema")
    view_version: JsonObject
    properties: dict[str, str]


class IcebergLoadViewResult(Hyphenated):
    metadata_location: str
    metadata: JsonObject
    config: dict[str, str] = None


class IcebergCommitView(Body):
    identifier: IcebergTableIdentifier = None
    requirements: list[JsonObject] = None
    updates: list[JsonObject]


class OAuthTokenRequest(Body):
    grant_type: str
    client_id: str
    client_secret: str = None
    scope: str = None
    subject_token: str = None
    subject_token_type: str = None


class TableUpdateNotification(Hyphenated):
    table_name: str
    timestamp: int
    table_uuid: str
    metadata_location: str


class NotificationRequest(Hyphenated):
    notification_type: Literal["CREATE", "UPDATE", "DROP", "VALIDATE"]
    payload: TableUpdateNotification


class RemoteSignRequest(Body):
    region: str
    uri: str
    method: Literal["PUT", "GET", "HEAD", "POST", "DELETE", "PATCH", "OPTIONS"]
    headers: dict[str, list[str]]
    body: str = None
    provider: str = None


class RegisterViewRequest(Hyphenated):
    name: str
    metadata_location: str


# -- server-side scan planning (catalog.services.iceberg_scan) -----------------------------------------
class IcebergPlanTableScanRequest(Hyphenated):
    snapshot_id: int = None
    select: list[str] = None
    filter: JsonObject = Field(None, description="An Iceberg expression; every field it names must exist.")
    case_sensitive: bool = None
    use_snapshot_schema: bool = None
    start_snapshot_id: int = Field(None, description="Incremental scans are not planned by the server (501).")
    end_snapshot_id: int = None
    stats_fields: list[str] = None
    min_rows_requested: int = None


class IcebergContentFiles(Hyphenated):
    delete_files: list[JsonObject] = None
    file_scan_tasks: list[JsonObject] = None


class IcebergPlanTableScanResult(IcebergContentFiles):
    status: Literal["completed", "submitted", "cancelled", "failed"]
    plan_id: str = None
    plan_tasks: list[str] = None
    storage_credentials: list[IcebergStorageCredential] = None


class IcebergFetchScanTasksRequest(Hyphenated):
    plan_task: str


class IcebergFetchScanTasksResult(IcebergContentFiles):
    plan_tasks: list[str] = None
