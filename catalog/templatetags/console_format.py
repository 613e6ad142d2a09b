"""How the console writes times, sizes and counts for people, one way on every page: a moment in
UTC to the second with how long ago it was, sizes in binary units, counts with thousands
separators, durations in seconds, minutes or hours. Templates load it as
`{% load console_format %}`; Python code calls the functions."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()

_AGO_STEPS = ((60, "s"), (60, "min"), (24, "h"), (None, "d"))


def human_bytes(value: float) -> str:
    """Bytes in B, KiB, MiB, GiB or TiB (also the charts' unit)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" or value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def as_datetime(value) -> datetime | None:
    """A moment from what the catalog stores: an aware or naive datetime, or milliseconds since
    the epoch (Delta commit timestamps, Iceberg snapshot times)."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, UTC)
    return None


def utc_text(value) -> str:
    moment = as_datetime(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "—"


def ago_text(value, now: datetime | None = None) -> str:
    moment = as_datetime(value)
    if moment is None:
        return ""
    seconds = int(((now or timezone.now()) - moment).total_seconds())
    future, amount = seconds < 0, abs(seconds)
    unit = "s"
    for size, name in _AGO_STEPS:
        unit = name
        if size is None or amount < size:
            break
        amount //= size
    return f"in {amount} {unit}" if future else f"{amount} {unit} ago"


@register.filter
def moment(value) -> str:
    """`2026-11-27 12:49:53 UTC · 3 min ago`, the exact time also as the element's title."""
    text = utc_text(value)
    if text == "—":
        return text
    return format_html('<time datetime="{}" title="{}">{} · {}</time>',
                       as_datetime(value).isoformat(), text, text, ago_text(value))


@register.filter
def size(value) -> str:
    """Bytes in B, KiB, MiB, GiB or TiB."""
    if value is None or value == "":
        return "—"
    return human_bytes(float(value))


@register.filter
def count(value) -> str:
    """A whole number with thousands separators: 12,345."""
    if value is None or value == "":
        return "—"
    return f"{int(value):,}"


@register.filter
def duration(seconds) -> str:
    """How long something took: `0.4 s`, `42 s`, `3 min 5 s`, `2 h 10 min`."""
    if seconds is None or seconds == "":
        return "—"
    seconds = float(seconds)
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    whole = int(round(seconds))
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"
