"""Volumes, functions, registered models, credentials and external locations."""

from django.contrib import admin

from catalog.admin.securables import InSchemaAdmin, OfVisible, ReadOnlyAdmin, ReadOnlyInline, SecurableAdmin
from catalog.models import Credential, ExternalLocation, Function, ModelVersion, RegisteredModel, Volume
from catalog.services import credentials, external_locations, functions, registered_models, volumes


@admin.register(Volume)
class VolumeAdmin(InSchemaAdmin):
    list_display = ("name", "schema", "volume_type", "storage_location", "owner", "created_at")
    search_fields = (*InSchemaAdmin.search_fields, "storage_location")
    list_filter = ("volume_type", "schema__catalog", "owner")
    update_service = staticmethod(volumes.update_volume)
    delete_service = staticmethod(volumes.delete_volume)


@admin.register(Function)
class FunctionAdmin(InSchemaAdmin):
    list_display = ("name", "schema", "routine_body", "external_language", "data_type", "owner", "created_at")
    search_fields = (*InSchemaAdmin.search_fields, "routine_definition")
    list_filter = ("routine_body", "external_language", "sql_data_access", "schema__catalog")
    delete_service = staticmethod(functions.delete_function)


class ModelVersionInline(ReadOnlyInline):
    model = ModelVersion
    fields = ("version", "status", "source", "run_id", "storage_location", "created_by", "created_at")
    ordering = ("-version",)


@admin.register(RegisteredModel)
class RegisteredModelAdmin(InSchemaAdmin):
    list_display = ("name", "schema", "owner", "storage_location", "created_at")
    list_filter = ("schema__catalog", "owner")
    inlines = [ModelVersionInline]
    update_service = staticmethod(registered_models.update_model)
    delete_service = staticmethod(registered_models.delete_model)


@admin.register(ModelVersion)
class ModelVersionAdmin(OfVisible, ReadOnlyAdmin):
    """Read-only: versions move through their states with the API (finalize, update, delete)."""

    visible_through = ("model", RegisteredModel)

    list_display = ("model", "version", "status", "run_id", "created_by", "created_at")
    search_fields = ("model__name", "model__schema__name", "run_id", "source")
    list_filter = ("status",)
    list_select_related = ("model__schema__catalog",)


@admin.register(Credential)
class CredentialAdmin(SecurableAdmin):
    """Secrets are never shown: the encrypted secret key is not a field of this page, and keys are
    changed through the API (PATCH /credentials/{name}), which encrypts them."""

    list_display = ("name", "purpose", "aws_role_arn", "aws_access_key_id", "endpoint_url", "owner", "created_at")
    search_fields = ("name", "owner", "aws_role_arn", "aws_access_key_id", "endpoint_url")
    list_filter = ("purpose", "owner")
    exclude = ("aws_secret_access_key_encrypted",)
    update_service = staticmethod(credentials.update_credential)
    delete_service = staticmethod(credentials.delete_credential)


@admin.register(ExternalLocation)
class ExternalLocationAdmin(SecurableAdmin):
    list_display = ("name", "url", "credential", "owner", "created_at")
    search_fields = ("name", "url", "owner", "credential__name")
    list_filter = ("credential", "owner")
    update_service = staticmethod(external_locations.update_external_location)
    delete_service = staticmethod(external_locations.delete_external_location)