"""Console forms. Principals and securables are picked from lists built from the database: the
name a grant records is always the chosen row's own, never text a browser sent."""

from __future__ import annotations

from django import forms

from catalog.choices import PRIVILEGES_BY_SECURABLE, SecurableType
from catalog.models import Group, Principal
from catalog.services.effective_access import SECURABLE_MODELS, RELATED_FIELDS, sorted_privileges
from catalog import authz
from catalog.authz import describe

PICKER_LIMIT = 5000

SECURABLE_TYPE_CHOICES = [(t.value, SECURABLE_MODELS[t.value]._meta.verbose_name) for t in SecurableType]


def securable_choices(securable_type: str, caller: Principal) -> list[tuple[str, str]]:
    """The securables of the type that `caller` may see (a picker lists nothing else)."""
    model = SECURABLE_MODELS.get(securable_type)
    if model is None:
        return []
    rows = model.objects.select_related(*RELATED_FIELDS.get(model, ()))
    if securable_type != SecurableType.METASTORE:
        rows = authz.visible(rows, caller)
    rows = rows[:PICKER_LIMIT]
    return sorted(((str(row.id), describe(row)) for row in rows), key=lambda choice: choice[1])


def principal_choices(*, with_groups: bool = False) -> list[tuple[str, str]]:
    """Principals, then (`with_groups`: a grant names either) groups."""
    principals = [(name, f"{name} ({'metastore admin, ' if admin else ''}{kind.lower().replace('_', ' ')})")
                  for name, admin, kind in Principal.objects.order_by("name").values_list(
                      "name", "is_metastore_admin", "kind")]
    if not with_groups:
        return principals
    return principals + [(name, f"{name} ({kind.lower().replace('_', ' ')})")
                         for name, kind in Group.objects.order_by("name").values_list("name", "kind")]


def privilege_choices(securable_type: str) -> list[tuple[str, str]]:
    return [(p, p) for p in sorted_privileges(PRIVILEGES_BY_SECURABLE.get(securable_type, ()))]


class SecurablePickerForm(forms.Form):
    """A securable type, then a securable of that type. The type comes first (the page reloads with
    the securables of the chosen type)."""

    securable_type = forms.ChoiceField(choices=SECURABLE_TYPE_CHOICES, label="Securable type")
    securable = forms.ChoiceField(choices=(), label="Securable")

    def __init__(self, *args, securable_type: str, caller: Principal, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["securable_type"].initial = securable_type
        self.fields["securable"].choices = securable_choices(securable_type, caller)
        self.securable_type = securable_type

    def clean_securable_type(self):
        value = self.cleaned_data["securable_type"]
        if value != self.securable_type:
            raise forms.ValidationError("The securable type changed while the form was open; choose again.")
        return value


class GrantForm(SecurablePickerForm):
    principal = forms.ChoiceField(choices=(), label="Principal or group")
    privileges = forms.MultipleChoiceField(choices=(), widget=forms.CheckboxSelectMultiple, label="Privileges")

    def __init__(self, *args, securable_type: str, caller: Principal, **kwargs):
        super().__init__(*args, securable_type=securable_type, caller=caller, **kwargs)
        self.fields["principal"].choices = principal_choices(with_groups=True)
        self.fields["privileges"].choices = privilege_choices(securable_type)


class CheckForm(SecurablePickerForm):
    principal = forms.ChoiceField(choices=(), label="Can principal")
    privilege = forms.ChoiceField(choices=(), label="hold privilege")

    def __init__(self, *args, securable_type: str, caller: Principal, **kwargs):
        super().__init__(*args, securable_type=securable_type, caller=caller, **kwargs)
        self.fields["principal"].choices = principal_choices()
        self.fields["privilege"].choices = privilege_choices(securable_type)
        self.order_fields(["principal", "privilege", "securable_type", "securable"])


class ConfirmedByName(forms.Form):
    """A change that cannot be undone, or that raises someone's privileges, is confirmed by typing
    the name of what it changes (`name`): a click alone, or a page framed by another site, is not
    enough."""

    confirm = forms.CharField(max_length=1024, required=False, label="Type its name to confirm")

    def __init__(self, *args, name: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.name = name
        self.fields["confirm"].widget.attrs["placeholder"] = name

    def needs_confirmation(self, data) -> bool:
        return True

    def clean(self):
        data = super().clean()
        if self.needs_confirmation(data) and (data.get("confirm") or "").strip() != self.name:
            raise forms.ValidationError(f"Type {self.name} to confirm.")
        return data


class OwnerForm(ConfirmedByName):
    owner = forms.ChoiceField(choices=(), label="New owner")
    field_order = ["owner", "confirm"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["owner"].choices = principal_choices()


class RenameForm(forms.Form):
    new_name = forms.CharField(max_length=255, label="New name")


class DropForm(ConfirmedByName):
    force = forms.BooleanField(required=False, label="Also drop what it contains")


class AdminFlagForm(ConfirmedByName):
    """Making a principal a metastore admin is confirmed by its name; taking the role away is not."""

    admin = forms.TypedChoiceField(choices=(("true", "metastore admin"), ("false", "not a metastore admin")),
                                   coerce=lambda value: value == "true", label="Make this principal")
    field_order = ["admin", "confirm"]

    def needs_confirmation(self, data) -> bool:
        return bool(data.get("admin"))


class RevokeForm(ConfirmedByName):
    """Revoking is confirmed by the securable's name when the grant gives control (MANAGE) or is
    held by the securable's own owner (see GrantAdmin.revoke_needs_name); other grants are
    revoked with a click."""

    def __init__(self, *args, required: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.required = required

    def needs_confirmation(self, data) -> bool:
        return self.required


class MemberForm(forms.Form):
    """A member to add to a group: a principal or another group, picked from the lists."""

    member = forms.ChoiceField(choices=(), label="Add member")

    def __init__(self, *args, group_name: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["member"].choices = [
            (f"principal:{name}", label) for name, label in principal_choices()] + [
            (f"group:{name}", f"{name} (group)")
            for name in Group.objects.exclude(name=group_name).order_by("name").values_list("name", flat=True)]
