"""Polaris policies in the governance view: each policy with its content and what it applies to
(the targets it is attached to, and the tables where it is the effective policy of its type).
Read-only: policies change through the API, whose services check grants and write the audit."""

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from catalog.admin.securables import ReadOnlyAdmin, ReadOnlyInline
from catalog.models import Policy, PolicyAttachment, Table
from catalog.services.policies import attachments_of, effective_policies

EFFECTIVE_LIMIT = 200


class AttachmentInline(ReadOnlyInline):
    model = PolicyAttachment
    fields = ("target_type", "target_name", "parameters", "created_by", "created_at")

    @admin.display(description="target")
    def target_name(self, obj):
        return obj.target_name


@admin.register(Policy)
class PolicyAdmin(ReadOnlyAdmin):
    list_display = ("name", "schema", "policy_type", "version", "owner", "applies_to")
    list_filter = ("policy_type",)
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner")
    list_select_related = ("schema__catalog",)
    fields = ("id", "schema", "name", "policy_type", "comment", "content", "version", "owner", "created_at",
              "created_by", "updated_at", "updated_by", "effective_on")
    readonly_fields = fields
    inlines = [AttachmentInline]

    @admin.display(description="attached to")
    def applies_to(self, obj):
        return ", ".join(f"{a.target_type} {a.target_name}" for a in attachments_of(obj)) or "—"

    @admin.display(description="effective on tables")
    def effective_on(self, obj):
        """The tables under the policy's targets where it wins for its type."""
        tables = []
        for attachment in attachments_of(obj):
            if attachment.table_id:
                candidates = [attachment.table]
            elif attachment.schema_id:
                candidates = Table.objects.filter(schema=attachment.schema).select_related("schema__catalog")
            else:
                candidates = Table.objects.filter(schema__catalog=attachment.catalog).select_related("schema__catalog")
            for table in candidates[:EFFECTIVE_LIMIT]:
                chosen = effective_policies(table, policy_type=obj.policy_type).get(obj.policy_type)
                if chosen is not None and chosen.policy.id == obj.id:
                    tables.append(table.full_name)
        if not tables:
            return "—"
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{}</li>", ((name,) for name in sorted(set(tables)))))
