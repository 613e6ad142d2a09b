"""Bodies of the Polaris-native API, as in the Polaris catalog spec, for the OpenAPI document
(requests are parsed and checked by the services, which give the clearer errors), and the
rendering of its answers. The components the Polaris spec takes from the Iceberg REST spec (the
error envelope, a table's identifier) are the Iceberg catalog's own."""

from __future__ import annotations

from typing import Literal

from catalog.api.iceberg.wire import IcebergListTablesResponse, IcebergStorageCredential, IcebergTableIdentifier
from ucweb.bodies import Body, Hyphenated


class GenericTable(Hyphenated):
    name: str
    format: str
    base_location: str = None
    doc: str = None
    properties: dict[str, str] = None


class CreateGenericTableRequest(GenericTable):
    pass


class StorageAccessConfig(IcebergStorageCredential):
    """The Polaris spec's name for what the Iceberg spec calls a storage credential."""


class LoadGenericTableResponse(Hyphenated):
    table: GenericTable
    storage_access_configs: list[StorageAccessConfig] = None


class ListGenericTablesResponse(IcebergListTablesResponse):
    """A page of generic tables, as the Iceberg catalog lists its tables."""


class Policy(Hyphenated):
    policy_type: str
    inheritable: bool
    name: str
    description: str = None
    content: str = None
    version: int


class CreatePolicyRequest(Body):
    name: str
    type: str
    description: str = None
    content: str = None


class UpdatePolicyRequest(Hyphenated):
    description: str = None
    content: str = None
    current_policy_version: int


class LoadPolicyResponse(Body):
    policy: Policy


class PolicyIdentifier(IcebergTableIdentifier):
    pass


class ListPoliciesResponse(Hyphenated):
    next_page_token: str = None
    identifiers: list[PolicyIdentifier]


class PolicyAttachmentTarget(Body):
    type: Literal["catalog", "namespace", "table-like"]
    path: list[str] = None


class AttachPolicyRequest(Body):
    target: PolicyAttachmentTarget
    parameters: dict[str, str] = None


class DetachPolicyRequest(Body):
    target: PolicyAttachmentTarget


class ApplicablePolicy(Policy):
    inherited: bool
    namespace: list[str]


class GetApplicablePoliciesResponse(Hyphenated):
    next_page_token: str = None
    applicable_policies: list[ApplicablePolicy]


def generic_table(table) -> dict:
    data_format = table.generic_format or (table.data_source_format or "").lower()
    body = {"name": table.name, "format": data_format, "properties": table.properties}
    if table.storage_location:
        body["base-location"] = table.storage_location
    if table.comment is not None:
        body["doc"] = table.comment
    return body


def loaded_generic_table(table, storage_access_configs: list | None = None) -> dict:
    """A LoadGenericTableResponse: the table, and the credentials for its location when they were vended."""
    body = {"table": generic_table(table)}
    if storage_access_configs is not None:
        body["storage-access-configs"] = storage_access_configs
    return body


def policy(item) -> dict:
    body = {"policy-type": item.policy_type, "inheritable": item.inheritable, "name": item.name,
            "content": item.content, "version": item.version}
    if item.comment is not None:
        body["description"] = item.comment
    return body


def loaded_policy(item) -> dict:
    """A LoadPolicyResponse."""
    return {"policy": policy(item)}


def applicable(item) -> dict:
    return {**policy(item.policy), "inherited": item.inherited, "namespace": item.policy.schema.levels}
