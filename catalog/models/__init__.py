from .governance import AuditEvent, Grant, Principal, Token
from .namespace import Catalog, Column, Metastore, Schema, StagingTable, Table

__all__ = [
    "AuditEvent",
    "Catalog",
    "Column",
    "Grant",
    "Metastore",
    "Principal",
    "Schema",
    "StagingTable",
    "Table",
    "Token",
]
