"""Volumes, functions, registered models, credentials and external locations."""

from django.contrib import admin

from catalog.admin.securables import SecurableAdmin
from catalog.choices import SecurableType
from catalog.models import Credential, ExternalLocation, Function, ModelVersion, RegisteredModel, Volume
from catalog.services import credentials, external_locations, functions, registered_models, volumes


@admin.register(Volume)
class VolumeAdmin(SecurableAdmin):
    securable_type = SecurableType.VOLUME
    list_display = ("name", "schema", "volume_type", "storage_location", "owner", "created_at")
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner", "storage_location")
    list_filter = ("volume_type", "schema__catalog", "owner")
    list_select_related = ("schema__catalog",)

    def rename(self, caller, obj, new_name):
        volumes.update_volume(caller=caller, full_name=obj.full_name, fields={"new_name": new_name})

    def transfer(self, caller, obj, owner):
        volumes.update_volume(caller=caller, full_name=obj.full_name, fields={"owner": owner})

    def drop(self, caller, obj, force):
        volumes.delete_volume(caller=caller, full_name=obj.full_name)


@admin.register(Function)
class FunctionAdmin(SecurableAdmin):
    securable_type = SecurableType.FUNCTION
    list_display = ("name", "schema", "routine_body", "external_language", "data_type", "owner", "created_at")
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner", "routine_definition")
    list_filter = ("routine_body", "external_language", "sql_data_access", "schema__catalog")
    list_select_related = ("schema__catalog",)

    def drop(self, caller, obj, force):
        functions.delete_function(caller=caller, full_name=obj.full_name)


class ModelVersionInline(admin.TabularInline):
    model = ModelVersion
    fields = ("version", "status", "source", "run_id", "storage_location", "created_by", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-version",)

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(RegisteredModel)
class RegisteredModelAdmin(SecurableAdmin):
    securable_type = SecurableType.REGISTERED_MODEL
    droppable_with_contents = True
    list_display = ("name", "schema", "owner", "storage_location", "created_at")
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner")
    list_filter = ("schema__catalog", "owner")
    list_select_related = ("schema__catalog",)
    inlines = [ModelVersionInline]

    def rename(self, caller, obj, new_name):
        registered_models.update_model(caller=caller, full_name=obj.full_name, fields={"new_name": new_name})

    def transfer(self, caller, obj, owner):
        registered_models.update_model(caller=caller, full_name=obj.full_name, fields={"owner": owner})

    def drop(self, caller, obj, force):
        registered_models.delete_model(caller=caller, full_name=obj.full_name, force=force)


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    """Read-only: versions move through their states with the API (finalize, update, delete)."""

    list_display = ("model", "version", "status", "run_id", "created_by", "created_at")
    search_fields = ("model__name", "model__schema__name", "run_id", "source")
    list_filter = ("status",)
    list_select_related = ("model__schema__catalog",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Credential)
class CredentialAdmin(SecurableAdmin):
    """Secrets are never shown: the encrypted secret key is not a field of this page, and keys are
    changed through the API (PATCH /credentials/{name}), which encrypts them."""

    securable_type = SecurableType.CREDENTIAL
    droppable_with_contents = True
    list_display = ("name", "purpose", "aws_role_arn", "aws_access_key_id", "endpoint_url", "owner", "created_at")
    search_fields = ("name", "owner", "aws_role_arn", "aws_access_key_id", "endpoint_url")
    list_filter = ("purpose", "owner")
    exclude = ("aws_secret_access_key_encrypted",)

    def rename(self, caller, obj, new_name):
        credentials.update_credential(caller=caller, name=obj.name, fields={"new_name": new_name})

    def transfer(self, caller, obj, owner):
        credentials.update_credential(caller=caller, name=obj.name, fields={"owner": owner})

    def drop(self, caller, obj, force):
        credentials.delete_credential(caller=caller, name=obj.name, force=force)


@admin.register(ExternalLocation)
class ExternalLocationAdmin(SecurableAdmin):
    securable_type = SecurableType.EXTERNAL_LOCATION
    droppable_with_contents = True
    list_display = ("name", "url", "credential", "owner", "created_at")
    search_fields = ("name", "url", "owner", "credential__name")
    list_filter = ("credential", "owner")
    list_select_related = ("credential",)

    def rename(self, caller, obj, new_name):
        external_locations.update_external_location(caller=caller, name=obj.name, fields={"new_name": new_name})

    def transfer(self, caller, obj, owner):
        external_locations.update_external_location(caller=caller, name=obj.name, fields={"owner": owner})

    def drop(self, caller, obj, force):
        external_locations.delete_external_location(caller=caller, name=obj.name, force=force)
