"""Principals, grants and the audit trail: grant and revoke with pickers, the admin flag, what a
principal can reach, and "can X do Y on Z?" with the reason."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from catalog.admin import console
from catalog.admin.forms import AdminFlagForm, CheckForm, GrantForm, MemberForm, RevokeForm
from catalog.admin.securables import ReadOnlyAdmin
from catalog.choices import Privilege, SecurableType
from catalog.models import Grant, Group, Principal, Token
from catalog.services import effective_access, groups, oversight, permissions, principals
from ucweb.errors import CatalogError, PermissionDenied


def _securable_type(request, default: str = SecurableType.TABLE) -> str:
    value = request.POST.get("securable_type") or request.GET.get("securable_type") or default
    return value if value in SecurableType.values else default


def _grants_to(name: str) -> dict:
    """The grants made to a principal or group, and the page that grants it more."""
    return {
        "direct_grants": Grant.objects.filter(principal=name).order_by("securable_type", "securable_name"),
        "grant_url": reverse("admin:catalog_grant_add") + "?" + urlencode({"principal": name}),
    }


@admin.register(Principal)
class PrincipalAdmin(ReadOnlyAdmin):
    """Principals are created by `issue_token` or on first use; the console changes the admin flag
    (through the service) and shows what a principal can reach."""

    change_form_template = "admin/catalog/principal_change_form.html"
    list_display = ("name", "kind", "is_metastore_admin", "client_id", "created_at")
    search_fields = ("name", "client_id")
    list_filter = ("kind", "is_metastore_admin")
    fields = ("name", "kind", "is_metastore_admin", "client_id", "created_at")

    def get_queryset(self, request):
        return oversight.principals_seen_by(console.console_principal(request), super().get_queryset(request))

    console_pages = (("check/", "check"), ("<path:object_id>/admin-flag/", "admin_flag"))

    def history_url(self, obj) -> str:
        return self.audit_trail_of(obj)  # what was done to the principal; its audit_url: what it did

    def console_context(self, request, obj) -> dict:
        caller = console.console_principal(request)
        return {
            **_grants_to(obj.name),
            "reach": effective_access.reach_of(obj),
            "admin_form": AdminFlagForm(initial={"admin": "false" if obj.is_metastore_admin else "true"},
                                        name=obj.name) if principals.may_set_metastore_admin(caller) else None,
            "console_principal": caller,
            "audit_url": reverse("admin:catalog_auditevent_changelist") + "?" + urlencode({"principal": obj.name}),
            "check_url": reverse("admin:catalog_principal_check") + "?" + urlencode({"principal": obj.name}),
        }

    def admin_flag_view(self, request, object_id):
        principal = self._object(request, object_id)
        if request.method == "POST":
            form = AdminFlagForm(request.POST, name=principal.name)
            if not form.is_valid():
                self.message_user(request, " ".join(form.non_field_errors()) or "Choose what to make it.",
                                  level="error")
            else:
                flag = form.cleaned_data["admin"]
                console.run(
                    request,
                    lambda caller: principals.set_metastore_admin(caller=caller, name=principal.name, admin=flag),
                    success=f"{principal.name} is {'now' if flag else 'no longer'} a metastore admin.",
                    action="setMetastoreAdmin", securable_type="principal", securable_name=principal.name,
                    securable_id=principal.pk,
                )
        return HttpResponseRedirect(reverse("admin:catalog_principal_change", args=[principal.pk]))

    def check_view(self, request):
        """Can principal X hold privilege Y on securable Z? The answer, step by step, with why."""
        if not self.has_view_permission(request):
            raise Http404
        securable_type = _securable_type(request)
        data = request.GET if "privilege" in request.GET else None
        form = CheckForm(data, securable_type=securable_type, caller=console.console_principal(request),
                         initial={"principal": request.GET.get("principal"),
                                  "securable": request.GET.get("securable")})
        decision, error, subject = None, "", None
        if data is not None and form.is_valid():
            principal = Principal.objects.filter(name=form.cleaned_data["principal"]).first()
            try:
                securable = effective_access.securable_by_id(securable_type, form.cleaned_data["securable"])
                if not oversight.may_check(console.console_principal(request), principal, securable):
                    raise PermissionDenied("You may check your own access to what you see, and anyone's "
                                           "access to what you own.")
                decision = effective_access.check(principal=principal, securable=securable,
                                                  privilege=form.cleaned_data["privilege"])
                subject = {"principal": principal.name, "privilege": form.cleaned_data["privilege"],
                           "securable": str(securable), "kind": securable._meta.verbose_name}
            except CatalogError as exc:
                error = exc.message
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "form": form, "decision": decision,
            "error": error, "subject": subject, "title": "Can a principal do this?",
            "securable_type": securable_type,
        }
        return TemplateResponse(request, "admin/catalog/check.html", context)


@admin.register(Group)
class GroupAdmin(ReadOnlyAdmin):
    """Groups (and Polaris roles): members, the grants made to the group and what they reach.
    Members are added and removed through the groups service, by the group's owner or an admin."""

    change_form_template = "admin/catalog/group_change_form.html"
    list_display = ("name", "kind", "catalog", "owner", "created_at")
    search_fields = ("name",)
    list_filter = ("kind",)
    fields = ("name", "kind", "catalog", "owner", "comment", "created_at", "created_by")

    def get_queryset(self, request):
        return oversight.groups_seen_by(console.console_principal(request), super().get_queryset(request))

    console_pages = (("<path:object_id>/members/", "members"),)

    def history_url(self, obj) -> str:
        return self.audit_trail_of(obj)

    def console_context(self, request, obj) -> dict:
        caller = console.console_principal(request)
        member_principals, member_groups = groups.member_names(obj)
        return {
            **_grants_to(obj.name),
            "member_principals": member_principals,
            "member_groups": member_groups,
            "member_form": MemberForm(group_name=obj.name) if groups.may_change(caller, obj) else None,
            "console_principal": caller,
            "reach": effective_access.reach_of(Principal(name=obj.name)),
            "audit_url": self.audit_trail_of(obj),
        }

    def members_view(self, request, object_id):
        """POST `member` (principal:NAME or group:NAME) to add it, or `remove` to remove it."""
        group = self._object(request, object_id)
        if request.method == "POST":
            change = {}
            if "remove" in request.POST:
                kind, _, name = request.POST["remove"].partition(":")
                change = {"remove_principals" if kind == "principal" else "remove_groups": [name]}
                done = f"{name} is no longer a member of {group.name}."
            else:
                form = MemberForm(request.POST, group_name=group.name)
                if form.is_valid():
                    kind, _, name = form.cleaned_data["member"].partition(":")
                    change = {"add_principals" if kind == "principal" else "add_groups": [name]}
                    done = f"{name} is now a member of {group.name}."
                else:
                    self.message_user(request, "Choose a member from the list.", level="error")
            if change:
                console.run(request, lambda caller: groups.update_members(caller=caller, name=group.name, **change),
                            success=done, action="updateGroup", securable_type="group",
                            securable_name=group.name, securable_id=group.pk)
        return HttpResponseRedirect(reverse("admin:catalog_group_change", args=[group.pk]))


@admin.register(Token)
class TokenAdmin(ReadOnlyAdmin):
    list_display = ("principal", "description", "created_at", "expires_at")
    search_fields = ("principal__name", "description")
    list_select_related = ("principal",)
    exclude = ("key_hash",)

    def get_queryset(self, request):
        return oversight.tokens_seen_by(console.console_principal(request), super().get_queryset(request))

    actions = ["revoke_selected"]

    @admin.action(description="Revoke the selected tokens", permissions=["view"])
    def revoke_selected(self, request, queryset):
        for token in list(queryset.select_related("principal")):
            console.run(
                request, lambda caller, token=token: principals.revoke_token(caller=caller, token_id=token.pk),
                success=f"Revoked a token of {token.principal.name}.", action="revokeToken",
                securable_type="principal", securable_name=token.principal.name, securable_id=token.principal_id,
            )


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    """Grants are made and revoked only through the permissions service, with the principal and
    the securable picked from lists: the name a grant records is the securable's own."""

    list_display = ("principal", "privilege", "securable_type", "securable_link", "granted_by", "created_at",
                    "revoke_button")
    search_fields = ("principal", "securable_name")
    list_filter = ("securable_type", "privilege")
    actions = ["revoke_selected"]

    def get_queryset(self, request):
        return oversight.grants_seen_by(console.console_principal(request), super().get_queryset(request))

    def has_add_permission(self, request, obj=None):
        return self.has_view_permission(request)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    console_pages = (("<path:object_id>/revoke/", "revoke"),)

    @admin.display(description="securable")
    def securable_link(self, obj):
        from catalog.services.effective_access import SECURABLE_MODELS

        model = SECURABLE_MODELS.get(obj.securable_type)
        if model is None:
            return obj.securable_name
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.securable_id])
        return format_html('<a href="{}">{}</a>', url, obj.securable_name)

    @admin.display(description="")
    def revoke_button(self, obj):
        return format_html('<a class="button" href="{}" data-grant="{}">Revoke…</a>',
                           reverse("admin:catalog_grant_revoke", args=[obj.pk]), obj.pk)

    def _revoke(self, request, grant: Grant) -> bool:
        changes = [{"principal": grant.principal, "remove": [grant.privilege]}]
        return console.run(
            request,
            lambda caller: permissions.update_permissions_by_id(
                caller=caller, securable_type=grant.securable_type, securable_id=str(grant.securable_id),
                changes=changes),
            success=f"Revoked {grant.privilege} on {grant.securable_name} from {grant.principal}.",
            action="updatePermissions", securable_type=grant.securable_type, securable_name=grant.securable_name,
            securable_id=grant.securable_id,
        )

    @staticmethod
    def revoke_needs_name(grant: Grant) -> bool:
        """A revoke is confirmed by typing the securable's name when it takes away control of the
        securable (MANAGE), or a grant its own owner holds (what the owner's access, and anything
        set up on it, may rest on)."""
        if grant.privilege == Privilege.MANAGE:
            return True
        try:
            securable = effective_access.securable_by_id(grant.securable_type, grant.securable_id)
        except CatalogError:
            return False
        return getattr(securable, "owner", None) == grant.principal

    def revoke_view(self, request, object_id):
        grant = self._object(request, object_id)
        required = self.revoke_needs_name(grant)
        form = RevokeForm(request.POST if request.method == "POST" else None, name=grant.securable_name,
                          required=required)
        if request.method == "POST":
            if form.is_valid():
                self._revoke(request, grant)
                return HttpResponseRedirect(reverse("admin:catalog_grant_changelist"))
            self.message_user(request, " ".join(form.non_field_errors()) + " Nothing was revoked.", level="error")
        context = {**self.admin_site.each_context(request), "opts": self.opts, "grant": grant, "form": form,
                   "needs_name": required,
                   "title": f"Revoke {grant.privilege} on {grant.securable_name} from {grant.principal}?"}
        return TemplateResponse(request, "admin/catalog/revoke.html", context)

    @admin.action(description="Revoke the selected grants", permissions=["view"])
    def revoke_selected(self, request, queryset):
        for grant in list(queryset):
            if self.revoke_needs_name(grant):
                self.message_user(request, f"{grant.privilege} on {grant.securable_name} to {grant.principal} was "
                                  "not revoked: revoke it on its own page, where its name is typed to confirm.",
                                  level="warning")
                continue
            self._revoke(request, grant)

    def add_view(self, request, form_url="", extra_context=None):
        """The grant picker: a securable type, a securable of that type, a principal and the
        privileges that type knows. Only ids are posted; names come from the rows."""
        if not self.has_add_permission(request):
            raise Http404
        securable_type = _securable_type(request)
        if request.method == "POST":
            form = GrantForm(request.POST, securable_type=securable_type, caller=console.console_principal(request))
            if form.is_valid():
                data = form.cleaned_data
                label = dict(form.fields["securable"].choices).get(data["securable"], "")
                changes = [{"principal": data["principal"], "add": list(data["privileges"])}]
                done = console.run(
                    request,
                    lambda caller: permissions.update_permissions_by_id(
                        caller=caller, securable_type=securable_type, securable_id=data["securable"],
                        changes=changes),
                    success=f"Granted {', '.join(data['privileges'])} on {label} to {data['principal']}.",
                    action="updatePermissions", securable_type=securable_type, securable_name=label,
                    securable_id=data["securable"],
                )
                if done:
                    return HttpResponseRedirect(reverse("admin:catalog_grant_changelist"))
        else:
            form = GrantForm(securable_type=securable_type, caller=console.console_principal(request), initial={
                "securable": request.GET.get("securable"), "principal": request.GET.get("principal")})
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "form": form,
            "title": "Grant privileges", "securable_type": securable_type,
            "console_principal": console.console_principal(request),
        }
        return TemplateResponse(request, "admin/catalog/grant_form.html", context)
