"""The console's list columns written for people, one way on every list: a moment as the
`moment` filter writes it (UTC to the second, with how long ago), bytes in binary units, counts
with thousands separators. A model admin that mixes in `HumanColumns` gets its date-time columns
written so without naming them; byte and count columns are named in `size_fields` and
`count_fields`."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from catalog.templatetags.console_format import count, moment, size


def _column(field: str, description: str, write):
    @admin.display(description=description, ordering=field)
    def column(obj):
        return write(getattr(obj, field))

    column.__name__ = field  # the changelist's CSS class (`field-<name>`) stays the field's
    return column


def when(field: str, description: str | None = None):
    return _column(field, description or field.replace("_", " "), moment)


def size_of(field: str, description: str | None = None):
    return _column(field, description or field.replace("_", " "), size)


def count_of(field: str, description: str | None = None):
    return _column(field, description or field.replace("_", " "), count)


class HumanColumns:
    """Rewrites `list_display`: date-time fields through `when`, `size_fields` through `size_of`,
    `count_fields` through `count_of`. The columns keep their titles and still sort."""

    size_fields: tuple[str, ...] = ()
    count_fields: tuple[str, ...] = ()

    def get_list_display(self, request):
        return tuple(self._human(name) for name in super().get_list_display(request))

    def _human(self, name):
        if not isinstance(name, str):
            return name
        try:
            field = self.model._meta.get_field(name)
        except FieldDoesNotExist:
            return name
        title = str(field.verbose_name)
        if name in self.size_fields:
            return size_of(name, title)
        if name in self.count_fields:
            return count_of(name, title)
        if isinstance(field, models.DateTimeField):
            return when(name, title)
        return name
