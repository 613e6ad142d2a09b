import uuid

from django.db import models
from django.utils import timezone


class Securable(models.Model):
    """Fields every named, owned securable of the namespace shares."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    comment = models.TextField(blank=True, null=True)
    properties = models.JSONField(default=dict, blank=True)
    owner = models.CharField(max_length=255, db_index=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.CharField(max_length=255, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    updated_by = models.CharField(max_length=255, blank=True, null=True)

    class Meta:
        abstract = True

    def __str__(self):
        return self.full_name

    def save(self, *args, **kwargs):
        # A new securable was last modified when it was created: updated_at is never earlier.
        if self._state.adding:
            self.updated_at = self.created_at
            self.updated_by = self.updated_by or self.created_by
        super().save(*args, **kwargs)


class MetastoreSecurable(Securable):
    """A securable named in the metastore itself (a catalog, a credential, an external location):
    its name is its full name."""

    name = models.CharField(max_length=255, unique=True)

    class Meta(Securable.Meta):
        abstract = True
        ordering = ["name"]

    @property
    def full_name(self) -> str:
        return self.name


class SchemaSecurable(Securable):
    """A securable that lives in a schema (a table, volume, function, registered model or policy):
    each declares its `schema` and `name`, unique together; its full name is catalog.schema.name."""

    # `schema` is not declared here: each model names its reverse relation on the schema
    # (schema.tables, schema.registered_models, schema.policies), which no `%(class)s` pattern
    # spells. `name` stays beside it, first in each model as in its migrations: the pair the
    # constraint makes unique reads as one.

    class Meta(Securable.Meta):
        abstract = True
        ordering = ["schema__catalog__name", "schema__path", "name"]
        constraints = [models.UniqueConstraint(fields=["schema", "name"], name="uniq_%(class)s_name")]

    @property
    def full_name(self) -> str:
        return self.schema.child_full_name(self.name)


class LiveManager(models.Manager):
    """The rows that were not dropped: what every lookup, list, location check and relation sees."""

    def get_queryset(self):
        return super().get_queryset().filter(dropped_at__isnull=True)


class Droppable(models.Model):
    """A securable kept for UCWEB_DROP_RETENTION_SECONDS once dropped (catalog.services.dropped):
    its row, id, grants and history stay, hidden from everything but the dropped lists, restore
    and purge, and its name is free for a new securable (the name constraint covers live rows
    only). `objects` sees live rows, `with_dropped` every row."""

    dropped_at = models.DateTimeField(null=True, blank=True, db_index=True)
    dropped_by = models.CharField(max_length=255, blank=True, default="")

    objects = LiveManager()
    with_dropped = models.Manager()

    class Meta:
        abstract = True


def live_name_constraint() -> models.UniqueConstraint:
    """A droppable securable's name is unique among the live rows of its schema."""
    return models.UniqueConstraint(fields=["schema", "name"], condition=models.Q(dropped_at__isnull=True),
                                   name="uniq_%(class)s_name")
