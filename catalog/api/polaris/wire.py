"""Wire types of the Polaris-native API, as in the Polaris catalog spec (named for the OpenAPI
schema; requests are parsed and checked by the services, which give the clearer errors)."""

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

STRING_MAP = serializers.DictField(child=serializers.CharField(), required=False)


def _namespace():
    return serializers.ListField(child=serializers.CharField())


def _identifier(name: str):
    return inline_serializer(name, {"namespace": _namespace(), "name": serializers.CharField()})


ErrorModel = inline_serializer("PolarisErrorModel", {
    "message": serializers.CharField(), "type": serializers.CharField(), "code": serializers.IntegerField()})
IcebergErrorResponse = inline_serializer("PolarisErrorResponse", {"error": ErrorModel})

GenericTable = inline_serializer("GenericTable", {
    "name": serializers.CharField(), "format": serializers.CharField(),
    "base-location": serializers.CharField(required=False), "doc": serializers.CharField(required=False),
    "properties": serializers.DictField(child=serializers.CharField(), required=False)})
CreateGenericTableRequest = inline_serializer("CreateGenericTableRequest", {
    "name": serializers.CharField(), "format": serializers.CharField(),
    "base-location": serializers.CharField(required=False), "doc": serializers.CharField(required=False),
    "properties": serializers.DictField(child=serializers.CharField(), required=False)})
StorageAccessConfig = inline_serializer("StorageAccessConfig", {
    "prefix": serializers.CharField(), "config": serializers.DictField(child=serializers.CharField())})
LoadGenericTableResponse = inline_serializer("LoadGenericTableResponse", {
    "table": GenericTable,
    "storage-access-configs": serializers.ListField(child=StorageAccessConfig, required=False)})
ListGenericTablesResponse = inline_serializer("ListGenericTablesResponse", {
    "next-page-token": serializers.CharField(required=False),
    "identifiers": serializers.ListField(child=_identifier("GenericTableIdentifier"))})

Policy = inline_serializer("Policy", {
    "policy-type": serializers.CharField(), "inheritable": serializers.BooleanField(),
    "name": serializers.CharField(), "description": serializers.CharField(required=False),
    "content": serializers.CharField(required=False), "version": serializers.IntegerField()})
CreatePolicyRequest = inline_serializer("CreatePolicyRequest", {
    "name": serializers.CharField(), "type": serializers.CharField(),
    "description": serializers.CharField(required=False), "content": serializers.CharField(required=False)})
UpdatePolicyRequest = inline_serializer("UpdatePolicyRequest", {
    "description": serializers.CharField(required=False), "content": serializers.CharField(required=False),
    "current-policy-version": serializers.IntegerField()})
LoadPolicyResponse = inline_serializer("LoadPolicyResponse", {"policy": Policy})
ListPoliciesResponse = inline_serializer("ListPoliciesResponse", {
    "next-page-token": serializers.CharField(required=False),
    "identifiers": serializers.ListField(child=_identifier("PolicyIdentifier"))})
PolicyAttachmentTarget = inline_serializer("PolicyAttachmentTarget", {
    "type": serializers.ChoiceField(choices=["catalog", "namespace", "table-like"]),
    "path": serializers.ListField(child=serializers.CharField(), required=False)})
AttachPolicyRequest = inline_serializer("AttachPolicyRequest", {
    "target": PolicyAttachmentTarget, "parameters": serializers.DictField(child=serializers.CharField(), required=False)})
DetachPolicyRequest = inline_serializer("DetachPolicyRequest", {"target": PolicyAttachmentTarget})
ApplicablePolicy = inline_serializer("ApplicablePolicy", {
    "policy-type": serializers.CharField(), "inheritable": serializers.BooleanField(),
    "name": serializers.CharField(), "description": serializers.CharField(required=False),
    "content": serializers.CharField(required=False), "version": serializers.IntegerField(),
    "inherited": serializers.BooleanField(), "namespace": _namespace()})
GetApplicablePoliciesResponse = inline_serializer("GetApplicablePoliciesResponse", {
    "next-page-token": serializers.CharField(required=False),
    "applicable-policies": serializers.ListField(child=ApplicablePolicy)})


def generic_table(table) -> dict:
    data_format = table.generic_format or (table.data_source_format or "").lower()
    body = {"name": table.name, "format": data_format, "properties": table.properties}
    if table.storage_location:
        body["base-location"] = table.storage_location
    if table.comment is not None:
        body["doc"] = table.comment
    return body


def policy(item) -> dict:
    body = {"policy-type": item.policy_type, "inheritable": item.inheritable, "name": item.name,
            "content": item.content, "version": item.version}
    if item.comment is not None:
        body["description"] = item.comment
    return body


def applicable(item) -> dict:
    return {**policy(item.policy), "inherited": item.inherited, "namespace": item.policy.schema.levels}
