"""The console's "Dropped" page: the tables and volumes kept for UCWEB_DROP_RETENTION_SECONDS that
the console user's principal may restore or purge, each restored or purged through the services
the Unity Catalog API calls (catalog.services.dropped), with their checks and audit."""

from __future__ import annotations

from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from catalog.admin import console
from catalog.admin.forms import ConfirmedByName
from catalog.authz import describe
from catalog.services import dropped
from catalog.services.dropped import KINDS


class DroppedPage:
    """Adds `dropped/` to a console admin's pages (the table admin's)."""

    @property
    def console_pages(self):
        return (("dropped/", "dropped"),
                ("dropped/<str:securable_type>/<str:securable_id>/<str:change>/", "dropped_change"),
                *super().console_pages)

    def _dropped_url(self) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_dropped")

    def dropped_view(self, request):
        rows = dropped.restorable(console.console_principal(request))
        entries = [{"row": row, "kind": row._meta.verbose_name, "name": describe(row), "type": type_,
                    "form": ConfirmedByName(name=describe(row))}
                   for row in rows for type_, kind in KINDS.items() if isinstance(row, kind.model)]
        context = {**self.admin_site.each_context(request), "opts": self.opts, "entries": entries,
                   "title": "Dropped tables and volumes"}
        return TemplateResponse(request, "admin/catalog/dropped.html", context)

    def dropped_change_view(self, request, securable_type, securable_id, change):
        kind = KINDS.get(securable_type)
        caller = console.console_principal(request)
        # One the user may not restore answers as a missing one, as the API does
        row = next((row for row in dropped.restorable(caller) if kind is not None and isinstance(row, kind.model)
                    and str(row.pk) == securable_id), None)
        if row is None or change not in ("restore", "purge"):
            raise Http404
        if request.method != "POST":
            return HttpResponseRedirect(self._dropped_url())
        name = describe(row)
        if change == "restore":
            console.run(request, lambda caller: dropped.restore(
                caller=caller, securable_type=securable_type, securable_id=securable_id),
                success=f"{name} was restored.", action=kind.restore_action,
                securable_type=securable_type, securable_name=name, securable_id=row.pk)
            return HttpResponseRedirect(self._dropped_url())
        form = ConfirmedByName(request.POST, name=name)
        if form.is_valid():
            console.run(request, lambda caller: dropped.purge(
                caller=caller, securable_type=securable_type, securable_id=securable_id),
                success=f"{name} was purged.", action=kind.purge_action,
                securable_type=securable_type, securable_name=name, securable_id=row.pk)
        else:
            self.message_user(request, " ".join(form.non_field_errors()), level="error")
        return HttpResponseRedirect(self._dropped_url())
