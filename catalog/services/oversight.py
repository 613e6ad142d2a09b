"""What of governance itself a principal may look at (the console's principals, tokens, grants and
audit trail), by the rules the APIs keep: a metastore admin sees everything; anyone else sees
their own principal, tokens, grants and actions, and the grants on and the audit trail of the
securables they manage (own, or own a container of), as `GET /permissions` shows an owner every
assignment on their securable and anyone else only their own."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from catalog import authz
from catalog.authz import Action
from catalog.models import GroupClosure, Principal
from catalog.services.effective_access import SECURABLE_MODELS
from catalog.choices import SecurableType


def _groups_of(caller: Principal):
    return GroupClosure.objects.filter(principal=caller.name).values("group_name")


def _managed(caller: Principal) -> Q:
    """The securable ids the caller manages, as a condition on `securable_id`."""
    condition = Q(pk__in=[])
    for securable_type, model in SECURABLE_MODELS.items():
        if securable_type == SecurableType.METASTORE:
            continue
        managed = authz.visible(model.objects.all(), caller, Action.MANAGE_GRANTS).values("id")
        condition |= Q(securable_id__in=managed)
    return condition


def principals_seen_by(caller: Principal, queryset: QuerySet) -> QuerySet:
    return queryset if caller.is_metastore_admin else queryset.filter(pk=caller.pk)


def tokens_seen_by(caller: Principal, queryset: QuerySet) -> QuerySet:
    return queryset if caller.is_metastore_admin else queryset.filter(principal_id=caller.pk)


def groups_seen_by(caller: Principal, queryset: QuerySet) -> QuerySet:
    """Groups the caller owns or is in (an admin: all)."""
    if caller.is_metastore_admin:
        return queryset
    inside = GroupClosure.objects.filter(principal=caller.name).values("group_name")
    return queryset.filter(Q(owner=caller.name) | Q(name__in=inside))


def grants_seen_by(caller: Principal, queryset: QuerySet) -> QuerySet:
    if caller.is_metastore_admin:
        return queryset
    return queryset.filter(Q(principal=caller.name) | Q(principal__in=_groups_of(caller)) | _managed(caller))


def audit_seen_by(caller: Principal, queryset: QuerySet) -> QuerySet:
    """Events the caller caused, and every event on a securable they manage: who changed it, and
    who was refused what on it."""
    if caller.is_metastore_admin:
        return queryset
    return queryset.filter(Q(principal=caller.name) | _managed(caller))


def may_check(caller: Principal, principal: Principal, securable) -> bool:
    """Whether the caller may ask what `principal` may do with `securable`: about themselves, or
    about a securable they manage (whose grants they see anyway)."""
    if caller.is_metastore_admin:
        return True
    rows = type(securable).objects.filter(pk=securable.pk)
    if principal.pk == caller.pk:
        return authz.visible(rows, caller).exists()
    return authz.visible(rows, caller, Action.MANAGE_GRANTS).exists()
