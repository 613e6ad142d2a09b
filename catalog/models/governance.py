import uuid

from django.db import models

from catalog.choices import AuditOutcome, GroupKind, Privilege, PrincipalKind, SecurableType


class Principal(models.Model):
    """Someone who calls the API: a user, or a service principal that authenticates with a client
    id and secret. `is_metastore_admin` may do everything."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255, unique=True)
    kind = models.CharField(max_length=32, choices=PrincipalKind.choices, default=PrincipalKind.USER)
    is_metastore_admin = models.BooleanField(default=False)
    client_id = models.CharField(max_length=64, unique=True, null=True, blank=True)
    client_secret_hash = models.CharField(max_length=128, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    # Kept in step with a directory (SCIM): an inactive principal's tokens and secret stop working.
    active = models.BooleanField(default=True)
    display_name = models.CharField(max_length=255, blank=True, default="")
    external_id = models.CharField(max_length=255, unique=True, null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Token(models.Model):
    """A bearer token. Only its SHA-256 is stored; the token itself is shown once."""

    key_hash = models.CharField(max_length=64, unique=True)
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="tokens")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    description = models.CharField(max_length=255, blank=True, default="")

    def __str__(self):
        return f"token of {self.principal.name} ({self.key_hash[:8]}…)"


class Grant(models.Model):
    """One privilege of one principal on one securable."""

    securable_type = models.CharField(max_length=32, choices=SecurableType.choices)
    securable_id = models.UUIDField(db_index=True)
    securable_name = models.CharField(max_length=800, help_text="Full name when granted; for display.")
    principal = models.CharField(max_length=255, db_index=True)
    privilege = models.CharField(max_length=64, choices=Privilege.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    granted_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["securable_type", "securable_name", "principal", "privilege"]
        constraints = [
            models.UniqueConstraint(
                fields=["securable_id", "principal", "privilege"], name="uniq_grant"
            )
        ]
        indexes = [models.Index(fields=["principal", "securable_id"])]

    def __str__(self):
        return f"{self.privilege} on {self.securable_type} {self.securable_name} to {self.principal}"


class AuditEvent(models.Model):
    """Who did what to which securable, and how it ended. Written in the mutation's transaction."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    principal = models.CharField(max_length=255, db_index=True)
    action = models.CharField(max_length=64, db_index=True)  # an AuditAction (catalog.services.audit)
    securable_type = models.CharField(max_length=32, blank=True, default="")
    securable_name = models.CharField(max_length=800, blank=True, default="")
    securable_id = models.UUIDField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=AuditOutcome.choices, default=AuditOutcome.SUCCESS)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.principal} {self.action} {self.securable_name} {self.outcome}"


class Group(models.Model):
    """A named set of principals and other groups (nested, never in a cycle). A privilege granted to
    a group (Grant.principal is its name) is held by every principal inside it, however deep. Group
    and principal names share one namespace: a grant names exactly one of them."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255, unique=True)
    kind = models.CharField(max_length=32, choices=GroupKind.choices, default=GroupKind.GROUP)
    # A catalog role's catalog: its grants are on securables of that catalog only.
    catalog = models.ForeignKey("catalog.Catalog", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="roles")
    owner = models.CharField(max_length=255, db_index=True)
    comment = models.TextField(blank=True, default="")
    properties = models.JSONField(default=dict, blank=True)
    external_id = models.CharField(max_length=255, unique=True, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=255, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class GroupMember(models.Model):
    """One direct member of a group: a principal or another group."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="members")
    principal = models.ForeignKey(Principal, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="memberships")
    member_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.CASCADE,
                                     related_name="memberships")
    added_at = models.DateTimeField(auto_now_add=True)
    added_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(principal__isnull=False, member_group__isnull=True)
                | models.Q(principal__isnull=True, member_group__isnull=False),
                name="group_member_is_one_thing"),
            models.UniqueConstraint(fields=["group", "principal"], name="uniq_group_principal"),
            models.UniqueConstraint(fields=["group", "member_group"], name="uniq_group_group"),
        ]

    def __str__(self):
        return f"{self.principal or self.member_group} in {self.group}"


class GroupClosure(models.Model):
    """Principal `principal` is in group `group_name`, directly or through nested groups: what every
    authorization decision reads (one subquery), rewritten by catalog.services.groups in the
    transaction of each membership change."""

    principal = models.CharField(max_length=255)
    group_name = models.CharField(max_length=255, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["principal", "group_name"], name="uniq_group_closure")]

    def __str__(self):
        return f"{self.principal} in {self.group_name}"
