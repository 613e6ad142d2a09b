"""The governance console: the Django admin, customised. Every change goes through the services
the APIs use (their validation, authorization and audit event); the pages show who may access
what and why, each table's history in its own format, and the audit trail."""

from catalog.admin import assets, governance, namespace  # noqa: F401 - registers the pages
