"""SVG bar charts a person can read: a title naming the table, labelled axes with units, a value
on every bar, and x labels under the bars. No JavaScript and no plotting library."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html import escape

from catalog.templatetags.console_format import human_bytes

WIDTH, HEIGHT = 640, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 64


def percent(share: float) -> str:
    return f"{share * 100:.0f} %"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def bar_chart(*, title: str, x_title: str, y_title: str, labels: list[str], values: list[float],
              value_format=_number, empty: str = "no data yet") -> str:
    if not values:
        return f'<figure class="uc-chart"><figcaption>{escape(title)}</figcaption><p>{escape(empty)}</p></figure>'
    top = max(values) or 1
    if all(float(v).is_integer() for v in values) and top % 2:
        top += 1  # whole-number ticks for counts: 0, top/2, top
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / len(values)
    parts = []
    # y axis with three ticks: 0, half, top.
    for fraction in (0, 0.5, 1):
        y = TOP + plot_h * (1 - fraction)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                     f'{escape(value_format(top * fraction))}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#666"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" stroke="#666"/>')
    every = max(1, round(len(values) / 12))  # at most about 12 x labels
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        height = plot_h * value / top
        x = LEFT + index * step
        y = TOP + plot_h - height
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{max(step - 4, 1):.1f}" height="{height:.1f}" '
            f'fill="#417690"><title>{escape(label)}: {escape(value_format(value))}</title></rect>'
        )
        if value and len(values) <= 24:
            parts.append(f'<text x="{x + step / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" font-size="11">'
                         f'{escape(value_format(value))}</text>')
        if (len(values) - 1 - index) % every == 0:  # the newest bar is always labelled
            parts.append(f'<text x="{x + step / 2:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" '
                         f'font-size="11">{escape(label)}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" font-size="12">'
                 f'{escape(x_title)}</text>')
    parts.append(f'<text x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" font-size="12" '
                 f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(y_title)}</text>')
    return (
        f'<figure class="uc-chart"><figcaption>{escape(title)}</figcaption>'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" font-family="sans-serif">{"".join(parts)}</svg></figure>'
    )


def file_size_histogram(table_name: str, histogram: dict | None) -> str:
    """Delta's file-size histogram: bins by their byte ranges, files per bin."""
    title = f"File sizes of {table_name} (live files per size range)"
    if not histogram or not histogram.get("sorted_bin_boundaries"):
        return bar_chart(title=title, x_title="", y_title="", labels=[], values=[],
                         empty="no file-size histogram reported yet (clients report one with their commit metrics)")
    boundaries = list(histogram["sorted_bin_boundaries"])
    counts = list(histogram.get("file_counts") or [])[: len(boundaries)]
    labels = []
    for index, low in enumerate(boundaries[: len(counts)]):
        high = boundaries[index + 1] if index + 1 < len(boundaries) else None
        labels.append(f"≥ {human_bytes(low)}" if high is None else f"{human_bytes(low)}–{human_bytes(high)}")
    # Empty bins at the top end say nothing; keep the ones up to the largest non-empty bin.
    last = max((i for i, count in enumerate(counts) if count), default=-1)
    labels, counts = labels[: last + 2], counts[: last + 2]
    return bar_chart(title=title, x_title="file size", y_title="files", labels=labels, values=counts)


def commit_rate(table_name: str, timestamps_ms: list[int], *, now: datetime | None = None) -> str:
    """Commits per hour over the last 24 hours when the table is young or busy, else commits per
    day over the last 30 days."""
    now = now or datetime.now(UTC)
    times = sorted(datetime.fromtimestamp(ms / 1000, UTC) for ms in timestamps_ms if isinstance(ms, int))
    recent = [t for t in times if now - t <= timedelta(hours=24)]
    if times and (len(recent) >= 2 or times[0] > now - timedelta(hours=48)):
        start = (now - timedelta(hours=23)).replace(minute=0, second=0, microsecond=0)
        buckets = [start + timedelta(hours=i) for i in range(24)]
        counts = [sum(1 for t in recent if b <= t < b + timedelta(hours=1)) for b in buckets]
        return bar_chart(title=f"Commits to {table_name} per hour, last 24 hours (UTC)", x_title="hour (UTC)",
                         y_title="commits", labels=[b.strftime("%H:00") for b in buckets], values=counts)
    start = (now - timedelta(days=29)).replace(hour=0, minute=0, second=0, microsecond=0)
    buckets = [start + timedelta(days=i) for i in range(30)]
    counts = [sum(1 for t in times if b <= t < b + timedelta(days=1)) for b in buckets]
    if not any(counts):
        return bar_chart(title=f"Commits to {table_name}", x_title="", y_title="", labels=[], values=[],
                         empty="no commits in the last 30 days")
    return bar_chart(title=f"Commits to {table_name} per day, last 30 days (UTC)", x_title="day (UTC)",
                     y_title="commits", labels=[b.strftime("%b %d") for b in buckets], values=counts)


def size_over_snapshots(table_name: str, snapshots: list[dict]) -> str:
    """An Iceberg table's total data size after each of its last 30 snapshots."""
    points = [(s["snapshot_id"], s["summary"].get("total-files-size")) for s in snapshots[-30:]]
    points = [(sid, int(size)) for sid, size in points if str(size or "").isdigit()]
    return bar_chart(
        title=f"Data size of {table_name} after each snapshot", x_title="snapshot (oldest to newest)",
        y_title="total data size", labels=[f"…{str(sid)[-4:]}" for sid, _ in points],
        values=[size for _, size in points], value_format=human_bytes,
        empty="no snapshot reports a total size yet",
    )
