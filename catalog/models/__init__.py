from .assets import Credential, ExternalLocation, Function, ModelVersion, RegisteredModel, Volume
from .governance import AuditEvent, Grant, Principal, Token
from .namespace import Catalog, Column, Metastore, Schema, StagingTable, Table
from .policies import Policy, PolicyAttachment

__all__ = [
    "AuditEvent",
    "Catalog",
    "Column",
    "Credential",
    "ExternalLocation",
    "Function",
    "Grant",
    "Metastore",
    "Policy",
    "PolicyAttachment",
    "ModelVersion",
    "Principal",
    "RegisteredModel",
    "Schema",
    "StagingTable",
    "Table",
    "Token",
    "Volume",
]
