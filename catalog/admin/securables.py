"""The page of every securable: its fields read-only, who may access it and why, its grants, and
the changes a governance team makes (grant, ownership transfer, rename, drop), each through the
service the API uses."""

from __future__ import annotations

import inspect
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from catalog import authz
from catalog.admin import console
from catalog.admin.columns import HumanColumns
from catalog.admin.forms import DropForm, OwnerForm, RenameForm
from catalog.choices import SecurableType
from catalog.models import Grant
from catalog.services import audit, effective_access, grants
from catalog.authz import describe


def _takes(service, argument: str) -> bool:
    return service is not None and argument in inspect.signature(service).parameters


class ReadOnlyAdmin(HumanColumns, admin.ModelAdmin):
    """Django's own add, change and delete are off (its "delete selected" with them): every change
    goes through a service. Lists and record pages write times, sizes and counts for people
    (catalog.admin.columns). Django's object history lists only what its own forms changed, which
    is nothing here: a page's History leads to `history_url` (the audit trail of the record), and
    a page without one has no History."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _object(self, request, object_id):
        obj = self.get_object(request, unquote(object_id)) if self.has_view_permission(request) else None
        if obj is None:  # unknown, malformed or not visible: the same answer
            raise Http404
        return obj

    # The console's pages beside Django's, as (route, name): `name` names both the view method
    # (`<name>_view`) and the URL (`<app>_<model>_<name>`).
    console_pages: tuple[tuple[str, str], ...] = ()

    def get_urls(self):
        wrap = self.admin_site.admin_view
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path(route, wrap(getattr(self, f"{name}_view")), name=f"{prefix}_{name}")
            for route, name in self.console_pages
        ] + super().get_urls()

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, object_id)
        extra = {**(extra_context or {}), "console_page": True}
        if obj is not None:
            extra.update(self.console_context(request, obj), console_history_url=self.history_url(obj))
        return super().change_view(request, object_id, form_url, extra_context=extra)

    def history_url(self, obj) -> str:
        """Where the History of `obj` is told truly; empty: nowhere (the page has no History)."""
        return ""

    @staticmethod
    def audit_trail_of(obj) -> str:
        """The audit trail filtered to the events about `obj`, by its id (names change)."""
        return reverse("admin:catalog_auditevent_changelist") + "?" + urlencode({"securable_id": str(obj.pk)})

    def history_view(self, request, object_id, extra_context=None):
        obj = self._object(request, object_id)
        url = self.history_url(obj)
        if not url:
            raise Http404
        return HttpResponseRedirect(url)

    def console_context(self, request, obj) -> dict:
        """What the change page of `obj` shows beside its fields."""
        return {}


class OfVisible:
    """A page of rows that belong to a securable (`visible_through`: the field naming it, and its
    model): only the rows of securables the console user's principal may see."""

    visible_through: tuple[str, type] = ("table", None)

    def get_queryset(self, request):
        field, model = self.visible_through
        visible = authz.visible(model.objects.all(), console.console_principal(request)).values("id")
        return super().get_queryset(request).filter(**{f"{field}_id__in": visible})


class ReadOnlyInline(admin.TabularInline):
    """Rows shown on their parent's page, never edited there."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields

    def has_add_permission(self, request, obj=None):
        return False


class SecurableAdmin(ReadOnlyAdmin):
    """A securable's page. Changes go through `rename`, `transfer` and `drop`, which call the
    securable's services, declared once per securable:

        update_service  update_<x>(caller=, <name>=, fields=): rename and transfer
        delete_service  delete_<x>(caller=, <name>=[, force=]): drop

    What the services take says the rest: the securable's name as `name` (catalogs, credentials,
    external locations) or `full_name`, and whether the drop form offers "force" (what is dropped
    with its contents)."""

    change_form_template = "admin/catalog/securable_change_form.html"
    console_pages = (
        ("<path:object_id>/owner/", "owner"),
        ("<path:object_id>/rename/", "rename"),
        ("<path:object_id>/drop/", "drop"),
    )
    update_service = None
    delete_service = None

    @property
    def securable_type(self) -> str:
        return next(kind for kind, model in effective_access.SECURABLE_MODELS.items() if model is self.model)

    @property
    def droppable_with_contents(self) -> bool:
        return _takes(self.delete_service, "force")

    @property
    def name_argument(self) -> str:
        return "name" if _takes(self.delete_service or self.update_service, "name") else "full_name"

    def get_queryset(self, request):
        """Only what the console user's principal may see, as the APIs' listings show it: a page
        of anything else answers as a missing one."""
        queryset = super().get_queryset(request)
        if self.securable_type == SecurableType.METASTORE:
            return queryset
        return authz.visible(queryset, console.console_principal(request))

    def _named(self, obj) -> dict:
        return {self.name_argument: obj.full_name}

    def rename(self, caller, obj, new_name):
        self.update_service(caller=caller, **self._named(obj), fields={"new_name": new_name})

    def transfer(self, caller, obj, owner):
        self.update_service(caller=caller, **self._named(obj), fields={"owner": owner})

    def drop(self, caller, obj, force):
        extra = {"force": force} if self.droppable_with_contents else {}
        self.delete_service(caller=caller, **self._named(obj), **extra)

    def can(self, what: str) -> bool:
        """Whether the page has a service for `what` (transfer, rename, drop) at all."""
        service = self.delete_service if what == "drop" else self.update_service
        return service is not None

    @staticmethod
    def action_of(what: str) -> authz.Action:
        """The action the service requires of its caller for `what` (catalog.services.recipes)."""
        return authz.Action.DELETE if what == "drop" else authz.Action.UPDATE

    def may(self, caller, obj, what: str, access: authz.Access | None = None) -> bool:
        """Whether `caller` could make the change `what`: the page's service exists and the
        authorization it applies allows it. Only the controls of such changes are shown; a POST is
        still the service's to refuse (and audit)."""
        return self.can(what) and authz.allows(caller, obj, self.action_of(what), access=access)

    def history_url(self, obj) -> str:
        return self.audit_trail_of(obj)

    # -- pages ---------------------------------------------------------------------------------
    def _back(self, obj):
        return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change",
                                            args=[obj.pk]))

    def owner_view(self, request, object_id):
        obj = self._object(request, object_id)
        if request.method != "POST" or not self.can("transfer"):
            return self._back(obj)
        form = OwnerForm(request.POST, name=describe(obj))
        if form.is_valid():
            owner = form.cleaned_data["owner"]
            console.run(request, lambda caller: self.transfer(caller, obj, owner),
                        success=f"{describe(obj)} now belongs to {owner}.", action=audit.change_of(self.securable_type, "update"),
                        securable_type=self.securable_type, securable_name=describe(obj), securable_id=obj.pk)
        else:
            self.message_user(request, " ".join(form.non_field_errors()) or "Choose a principal from the list.",
                              level="error")
        return self._back(obj)

    def rename_view(self, request, object_id):
        obj = self._object(request, object_id)
        if request.method != "POST" or not self.can("rename"):
            return self._back(obj)
        form = RenameForm(request.POST)
        old = describe(obj)
        if form.is_valid():
            new_name = form.cleaned_data["new_name"]
            if console.run(request, lambda caller: self.rename(caller, obj, new_name),
                           success=f"{old} is now named {new_name}.", action=audit.change_of(self.securable_type, "update"),
                           securable_type=self.securable_type, securable_name=old, securable_id=obj.pk):
                obj.refresh_from_db()
        else:
            self.message_user(request, "A new name is required.", level="error")
        return self._back(obj)

    def drop_view(self, request, object_id):
        obj = self._object(request, object_id)
        if not self.can("drop") or (request.method != "POST"
                                    and not self.may(console.console_principal(request), obj, "drop")):
            return self._back(obj)  # a POST is the service's to refuse, and audit
        name = describe(obj)
        form = DropForm(request.POST or None, name=name)
        if request.method == "POST" and form.is_valid():
            force = form.cleaned_data["force"] and self.droppable_with_contents
            if console.run(request, lambda caller: self.drop(caller, obj, force), success=f"{name} was dropped.",
                           action=audit.change_of(self.securable_type, "delete"), securable_type=self.securable_type, securable_name=name,
                           securable_id=obj.pk):
                return HttpResponseRedirect(
                    reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist"))
            return self._back(obj)
        if not self.droppable_with_contents:
            del form.fields["force"]
        context = {
            **self.admin_site.each_context(request), "opts": self.opts, "object": obj, "name": name,
            "form": form, "title": f"Drop {obj._meta.verbose_name} {name}",
        }
        return TemplateResponse(request, "admin/catalog/drop.html", context)

    def absent_changes(self, caller, obj, offered: dict) -> str:
        """Why the changes this page has services for are not offered to `caller`, in the words
        of the services' refusal; empty when nothing is withheld."""
        withheld = [what for what in ("transfer", "rename", "drop") if self.can(what) and not offered[what]]
        if not withheld:
            return ""
        action = self.action_of(withheld[0])
        refusal = authz.refusal(obj, action, authz.rule_for(authz.type_of(obj), action))
        changes = " or ".join([", ".join(withheld[:-1]), withheld[-1]] if len(withheld) > 1 else withheld)
        return (f"You act as principal {caller.name}, who may not {changes} this "
                f"{obj._meta.verbose_name}: {refusal[:1].lower()}{refusal[1:]}")

    def console_context(self, request, obj) -> dict:
        caller = console.console_principal(request)
        access = authz.Access.load(caller, obj)
        offered = {what: self.may(caller, obj, what, access) for what in ("transfer", "rename", "drop")}
        may_grant = grants.may_change(caller, access)
        grant_url = reverse("admin:catalog_grant_add") + "?" + urlencode(
            {"securable_type": self.securable_type, "securable": str(obj.pk)})
        audit_url = self.audit_trail_of(obj)
        check_url = reverse("admin:catalog_principal_check") + "?" + urlencode(
            {"securable_type": self.securable_type, "securable": str(obj.pk)})
        direct_grants = Grant.objects.filter(securable_id=obj.pk).order_by("principal", "privilege")
        prefix = f"admin:{self.opts.app_label}_{self.opts.model_name}"
        return {
            "console_principal": caller,
            "securable_name": describe(obj),
            "securable_kind": obj._meta.verbose_name,
            "effective_access": effective_access.on_securable(obj),
            "direct_grants": direct_grants,
            "grant_url": grant_url if may_grant else None,
            "may_grant": may_grant,
            "audit_url": audit_url,
            "check_url": check_url,
            "owner_form": OwnerForm(initial={"owner": getattr(obj, "owner", "")}, name=describe(obj))
            if offered["transfer"] else None,
            "rename_form": RenameForm(initial={"new_name": getattr(obj, "name", "")}) if offered["rename"] else None,
            "can_drop": offered["drop"],
            "changes_absent": self.absent_changes(caller, obj, offered),
            "owner_url": reverse(f"{prefix}_owner", args=[obj.pk]),
            "rename_url": reverse(f"{prefix}_rename", args=[obj.pk]),
            "drop_url": reverse(f"{prefix}_drop", args=[obj.pk]),
        }


class InSchemaAdmin(SecurableAdmin):
    """A securable inside a schema (table, volume, function, registered model): found by its own
    name, its schema's, its catalog's or its owner's, and listed with its schema and catalog."""

    search_fields = ("name", "schema__name", "schema__catalog__name", "owner")
    list_select_related = ("schema__catalog",)
