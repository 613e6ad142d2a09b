"""Small SVG bar charts for the admin: no JavaScript, no plotting library."""

from html import escape

WIDTH, HEIGHT, PAD = 420, 140, 24


def bar_chart(title: str, labels: list[str], values: list[float]) -> str:
    if not values:
        return f'<p>{escape(title)}: no data yet.</p>'
    top = max(values) or 1
    step = (WIDTH - 2 * PAD) / len(values)
    bars = []
    for index, (label, value) in enumerate(zip(labels, values)):
        height = (HEIGHT - 2 * PAD) * value / top
        x = PAD + index * step
        y = HEIGHT - PAD - height
        bars.append(
            f'<rect x="{x + 2:.1f}" y="{y:.1f}" width="{max(step - 4, 1):.1f}" height="{height:.1f}" fill="#417690">'
            f'<title>{escape(label)}: {value:g}</title></rect>'
        )
    return (
        f'<figure style="margin:0 0 1em 0"><figcaption>{escape(title)}</figcaption>'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(title)}"><line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" '
        f'y2="{HEIGHT - PAD}" stroke="#999"/>{"".join(bars)}</svg></figure>'
    )


def human_bytes(value: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}"
        value /= 1024
    return f"{value} B"


def file_size_histogram(histogram: dict | None) -> str:
    if not histogram:
        return bar_chart("File-size histogram (files per bin)", [], [])
    boundaries = histogram["sorted_bin_boundaries"]
    labels = [f"≥ {human_bytes(b)}" for b in boundaries]
    return bar_chart("File-size histogram (files per bin)", labels, histogram["file_counts"])


def commit_rate(rate: list[dict]) -> str:
    return bar_chart("Commits per hour, last 24 hours", [r["hour"] for r in rate], [r["commits"] for r in rate])
