"""The securables beside tables: volumes, functions, registered models and their versions, and the
storage governance (credentials and the external locations they unlock)."""

import uuid

from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver

from catalog.choices import (
    CredentialPurpose,
    ModelVersionStatus,
    ParameterStyle,
    RoutineBody,
    SqlDataAccess,
    VolumeType,
)

from .base import Droppable, MetastoreSecurable, SchemaSecurable, live_name_constraint
from .namespace import Schema


class Volume(SchemaSecurable, Droppable):
    """A folder of files governed like a table. MANAGED volumes live in managed storage and their
    files are purged when the volume is dropped; EXTERNAL volumes point into an external location."""

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="volumes")
    name = models.CharField(max_length=255)
    volume_type = models.CharField(max_length=16, choices=VolumeType.choices)
    storage_location = models.TextField()

    class Meta(SchemaSecurable.Meta):
        constraints = [live_name_constraint()]


class Function(SchemaSecurable):
    """A SQL or external (for example Python) routine. Parameters are kept as the validated
    FunctionParameterInfo objects of the request; functions are immutable once created."""

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="functions")
    name = models.CharField(max_length=255)
    input_params = models.JSONField(default=list, blank=True)
    return_params = models.JSONField(null=True, blank=True)
    data_type = models.CharField(max_length=32)
    full_data_type = models.TextField()
    routine_body = models.CharField(max_length=16, choices=RoutineBody.choices)
    routine_definition = models.TextField()
    routine_dependencies = models.JSONField(null=True, blank=True)
    parameter_style = models.CharField(max_length=8, choices=ParameterStyle.choices)
    is_deterministic = models.BooleanField()
    sql_data_access = models.CharField(max_length=32, choices=SqlDataAccess.choices)
    is_null_call = models.BooleanField()
    security_type = models.CharField(max_length=16)
    specific_name = models.TextField()
    external_language = models.CharField(max_length=255, null=True, blank=True)
    # FunctionInfo.properties is a JSON-encoded string, unlike the map of the other securables.
    properties_text = models.TextField(null=True, blank=True)


class RegisteredModel(SchemaSecurable):
    """An MLflow registered model. Its files (every version's artifacts) live under
    `storage_location`, in managed storage."""

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="registered_models")
    name = models.CharField(max_length=255)
    storage_location = models.TextField()
    # The highest version number ever given. Numbers are not reused after a deletion: the purge of
    # a deleted version's files must never meet the files of a new version at the same path.
    last_version = models.BigIntegerField(default=0)

    class Meta(SchemaSecurable.Meta):
        # The constraint's name predates the base: its generic `uniq_%(class)s_name` would read
        # uniq_registeredmodel_name here, a rename that would need a migration.
        constraints = [models.UniqueConstraint(fields=["schema", "name"], name="uniq_registered_model_name")]


class ModelVersion(models.Model):
    """Version n of a registered model, stored at `<model location>/versions/<n>`. A version is
    PENDING_REGISTRATION while its client uploads the artifacts and READY once finalized."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="versions")
    version = models.BigIntegerField()
    source = models.TextField()
    run_id = models.CharField(max_length=255, null=True, blank=True)
    status = models.CharField(
        max_length=32, choices=ModelVersionStatus.choices, default=ModelVersionStatus.PENDING_REGISTRATION
    )
    storage_location = models.TextField()
    comment = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=255, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    updated_by = models.CharField(max_length=255, null=True, blank=True)

    class Meta:
        ordering = ["model", "version"]
        constraints = [models.UniqueConstraint(fields=["model", "version"], name="uniq_model_version")]

    def __str__(self):
        return f"{self.model.full_name} v{self.version}"


class Credential(MetastoreSecurable):
    """How ucweb reaches an object store on someone's behalf: an IAM role to assume, static keys
    (for S3-compatible servers), or both (the keys then call STS to assume the role). The secret
    key is stored encrypted (see catalog.services.secrets) and never shown."""

    purpose = models.CharField(max_length=16, choices=CredentialPurpose.choices, default=CredentialPurpose.STORAGE)
    aws_role_arn = models.CharField(max_length=2048, null=True, blank=True)
    aws_external_id = models.CharField(max_length=255, null=True, blank=True)
    aws_access_key_id = models.CharField(max_length=128, null=True, blank=True)
    aws_secret_access_key_encrypted = models.TextField(null=True, blank=True)
    endpoint_url = models.CharField(max_length=2048, null=True, blank=True)
    region = models.CharField(max_length=64, null=True, blank=True)


class ExternalLocation(MetastoreSecurable):
    """A storage prefix that a credential unlocks. No two external locations overlap, and none
    overlaps managed storage, so a URL belongs to at most one of them."""

    url = models.TextField(unique=True)
    credential = models.ForeignKey(Credential, on_delete=models.PROTECT, related_name="external_locations")


# -- what goes with a row, however it goes -------------------------------------------------------
# A volume, function or model is deleted by its own endpoint or by the cascade of a dropped schema
# or catalog. Either way its grants go, and its managed files are released (catalog.signals): the
# maintenance app purges them once the transaction commits.
def _forget_grants(instance) -> None:
    from catalog.models.governance import Grant

    Grant.objects.filter(securable_id=instance.id).delete()


def _purge(sender, url: str, reason: str) -> None:
    from catalog.signals import securable_dropped

    securable_dropped.send(sender=sender, location=url, reason=reason, requested_by="")


@receiver(post_delete, sender=Volume)
def _volume_deleted(sender, instance, **kwargs):
    _forget_grants(instance)
    if instance.volume_type == VolumeType.MANAGED and instance.storage_location:
        _purge(sender, instance.storage_location, f"dropped volume {instance.id}")


@receiver(post_delete, sender=Function)
def _function_deleted(sender, instance, **kwargs):
    _forget_grants(instance)


@receiver(post_delete, sender=RegisteredModel)
def _model_deleted(sender, instance, **kwargs):
    _forget_grants(instance)
    _purge(sender, instance.storage_location, f"dropped registered model {instance.id}")


@receiver(post_delete, sender=ModelVersion)
def _model_version_deleted(sender, instance, **kwargs):
    _purge(sender, instance.storage_location, f"dropped model version {instance.model_id} v{instance.version}")


@receiver(post_delete, sender=Credential)
@receiver(post_delete, sender=ExternalLocation)
def _storage_securable_deleted(sender, instance, **kwargs):
    _forget_grants(instance)
