from .assets import Credential, ExternalLocation, Function, ModelVersion, RegisteredModel, Volume
from .events import ChangeEvent
from .governance import AuditEvent, Grant, Group, GroupClosure, GroupMember, Principal, Token
from .namespace import Catalog, Column, Metastore, Schema, StagingTable, Table
from .policies import Policy, PolicyAttachment
from .scans import ScanPlan, ScanPlanPage

__all__ = [
    "AuditEvent",
    "Catalog",
    "ChangeEvent",
    "Column",
    "Credential",
    "ExternalLocation",
    "Function",
    "Grant",
    "Group",
    "GroupClosure",
    "GroupMember",
    "Metastore",
    "Policy",
    "PolicyAttachment",
    "ModelVersion",
    "Principal",
    "RegisteredModel",
    "ScanPlan",
    "ScanPlanPage",
    "Schema",
    "StagingTable",
    "Table",
    "Token",
    "Volume",
]
