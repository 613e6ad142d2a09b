"""The governance console: the Django admin, customised. Every change goes through the services
the APIs use (their validation, authorization and audit event); the pages show who may access
what and why, each table's history in its own format, and the audit trail."""

from catalog.admin import assets, audit, governance, namespace  # noqa: F401 - registers the pages

from django.contrib import admin as _admin  # noqa: E402

# The model list is one click away on the home page; without the sidebar the console's wide
# tables (audit trail, effective access, commit history) fit a 1440 px screen.
_admin.site.enable_nav_sidebar = False
_admin.site.site_header = "ucweb governance console"
_admin.site.site_title = "ucweb governance console"
_admin.site.index_title = "Governance"
