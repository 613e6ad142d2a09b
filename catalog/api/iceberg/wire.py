"""Wire types of the Iceberg REST catalog for the OpenAPI document: the Apache Iceberg REST spec's
names with an `Iceberg` prefix (the UC API has components of the same names); request components
get their `Request` suffix from COMPONENT_SPLIT_REQUEST. Requests are parsed and checked by the
services, which give the clearer errors (requirements and updates by pyiceberg's own models, in
commits.formats.iceberg)."""

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers


def _strings(required: bool = True):
    return serializers.ListField(child=serializers.CharField(), required=required)


def _string_map(required: bool = False):
    return serializers.DictField(child=serializers.CharField(), required=required)


def _object(required: bool = True):
    """A JSON object whose shape the Iceberg spec gives (schemas, specs, metadata, reports)."""
    return serializers.DictField(required=required)


def _objects(required: bool = True):
    return serializers.ListField(child=serializers.DictField(), required=required)


ErrorModel = inline_serializer("IcebergErrorModel", {
    "message": serializers.CharField(), "type": serializers.CharField(), "code": serializers.IntegerField(),
    "stack": _strings(required=False)})
IcebergErrorResponse = inline_serializer("IcebergErrorResponse", {"error": ErrorModel})

CatalogConfig = inline_serializer("IcebergCatalogConfig", {
    "defaults": _string_map(required=True), "overrides": _string_map(required=True),
    "endpoints": _strings(required=False), "idempotency-key-lifetime": serializers.CharField(required=False)})
OAuthTokenResponse = inline_serializer("IcebergOAuthTokenResponse", {
    "access_token": serializers.CharField(), "token_type": serializers.CharField(),
    "expires_in": serializers.IntegerField(required=False), "issued_token_type": serializers.CharField(required=False)})

class IcebergTableIdentifier(serializers.Serializer):
    namespace = _strings()
    name = serializers.CharField()


def _identifier(required: bool = True):
    return IcebergTableIdentifier(required=required)


CreateNamespaceRequest = inline_serializer("IcebergCreateNamespace", {
    "namespace": _strings(), "properties": _string_map()})
CreateNamespaceResponse = inline_serializer("IcebergCreateNamespaceResponse", {
    "namespace": _strings(), "properties": _string_map()})
GetNamespaceResponse = inline_serializer("IcebergGetNamespaceResponse", {
    "namespace": _strings(), "properties": _string_map()})
ListNamespacesResponse = inline_serializer("IcebergListNamespacesResponse", {
    "next-page-token": serializers.CharField(required=False),
    "namespaces": serializers.ListField(child=_strings())})
UpdateNamespacePropertiesRequest = inline_serializer("IcebergUpdateNamespaceProperties", {
    "removals": _strings(required=False), "updates": _string_map()})
UpdateNamespacePropertiesResponse = inline_serializer("IcebergUpdateNamespacePropertiesResponse", {
    "updated": _strings(), "removed": _strings(), "missing": _strings(required=False)})
ListTablesResponse = inline_serializer("IcebergListTablesResponse", {
    "next-page-token": serializers.CharField(required=False),
    "identifiers": serializers.ListField(child=_identifier())})

CreateTableRequest = inline_serializer("IcebergCreateTable", {
    "name": serializers.CharField(), "location": serializers.CharField(required=False), "schema": _object(),
    "partition-spec": _object(required=False), "write-order": _object(required=False),
    "stage-create": serializers.BooleanField(required=False), "properties": _string_map()})
class IcebergStorageCredential(serializers.Serializer):
    prefix = serializers.CharField()
    config = _string_map(required=True)


def _storage_credentials(required: bool = True):
    return serializers.ListField(required=required, child=IcebergStorageCredential())


LoadTableResult = inline_serializer("IcebergLoadTableResult", {
    "metadata-location": serializers.CharField(required=False), "metadata": _object(),
    "config": _string_map(), "storage-credentials": _storage_credentials(required=False)})
LoadCredentialsResponse = inline_serializer("IcebergLoadCredentialsResponse", {
    "storage-credentials": _storage_credentials()})
CommitTableRequest = inline_serializer("IcebergCommitTable", {
    "identifier": _identifier(required=False),
    "requirements": _objects(), "updates": _objects()})
CommitTableResponse = inline_serializer("IcebergCommitTableResponse", {
    "metadata-location": serializers.CharField(), "metadata": _object()})
CommitTransactionRequest = inline_serializer("IcebergCommitTransaction", {
    "table-changes": serializers.ListField(child=inline_serializer("IcebergTableChange", {
        "identifier": _identifier(), "requirements": _objects(), "updates": _objects()}))})
RenameTableRequest = inline_serializer("IcebergRenameTable", {
    "source": _identifier(), "destination": _identifier()})
RegisterTableRequest = inline_serializer("IcebergRegisterTable", {
    "name": serializers.CharField(), "metadata-location": serializers.CharField(),
    "overwrite": serializers.BooleanField(required=False)})
ReportMetricsRequest = inline_serializer("IcebergReportMetrics", {
    "report-type": serializers.ChoiceField(choices=["scan-report", "commit-report"]),
    "table-name": serializers.CharField(), "snapshot-id": serializers.IntegerField()})
CreateViewRequest = inline_serializer("IcebergCreateView", {
    "name": serializers.CharField(), "location": serializers.CharField(required=False), "schema": _object(),
    "view-version": _object(), "properties": _string_map(required=True)})
LoadViewResult = inline_serializer("IcebergLoadViewResult", {
    "metadata-location": serializers.CharField(), "metadata": _object(), "config": _string_map()})
CommitViewRequest = inline_serializer("IcebergCommitView", {
    "identifier": _identifier(required=False),
    "requirements": _objects(required=False), "updates": _objects()})
