"""The console's list columns and record fields written for people, one way on every page: a
moment as the `moment` filter writes it (UTC to the second, with how long ago), bytes in binary
units, counts with thousands separators. A model admin that mixes in `HumanColumns` gets its
date-time columns, and the date-time fields of its record pages, written so without naming them;
byte and count columns are named in `size_fields` and `count_fields`."""

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

    # -- a record's page: its date-time fields shown read-only through `when` --------------------
    def _moments(self) -> dict:
        """name -> the read-only field that writes it, one object per field for the page's life
        (Django tells a read-only field from a form field by identity)."""
        moments = self.__dict__.get("_moment_fields")
        if moments is None:
            excluded = set(self.exclude or ())
            moments = {
                field.name: when(field.name, str(field.verbose_name)) for field in self.model._meta.concrete_fields
                if isinstance(field, models.DateTimeField) and field.name not in excluded}
            self.__dict__["_moment_fields"] = moments
        return moments

    def _written(self, names):
        moments, written = self._moments(), []
        for name in names:
            if isinstance(name, list | tuple):  # fields shown on one line
                written.append(tuple(self._written(name)))
            else:
                written.append(moments.get(name, name) if isinstance(name, str) else name)
        return list(dict.fromkeys(written))

    def get_readonly_fields(self, request, obj=None):
        """Each date-time field as its `when`, where it stood; every other date-time field's `when`
        after them, and their names too (so that no form field of the page is made of them)."""
        written = self._written(super().get_readonly_fields(request, obj))
        moments = self._moments()
        return tuple(written + [m for m in moments.values() if m not in written] + list(moments))

    def get_fields(self, request, obj=None):
        return self._written(super().get_fields(request, obj))

    def get_fieldsets(self, request, obj=None):
        return [(title, {**options, "fields": self._written(options["fields"])})
                for title, options in super().get_fieldsets(request, obj)]
