"""Small, dependency-free SVG charts for the audit report: line chart, bar chart, histogram, timeline.

The report must be one self-contained file (operators mail it around, CI stores it as an artefact),
so the plots are inline SVG strings generated here from the few hundred aggregated points the job
collects; nothing is loaded from the network and no plotting library is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH, HEIGHT = 720, 260
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 150, 28, 40
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")


def _frame(title: str, body: list[str], height: int = HEIGHT) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="sans-serif" font-size="11">'
        f'<text x="{MARGIN_LEFT}" y="16" font-size="13" font-weight="bold">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _nice(value: float) -> str:
    if abs(value) >= 1_000_000:
        return f"{value / 1_000_000:.3g}M"
    if abs(value) >= 1_000:
        return f"{value / 1_000:.3g}k"
    return f"{value:.3g}"


def _axes(x0: float, x1: float, y_max: float, x_label: str, y_label: str, height: int = HEIGHT) -> list[str]:
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    out = [
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP + plot_h}" x2="{MARGIN_LEFT + plot_w}" y2="{MARGIN_TOP + plot_h}" '
        'stroke="#444"/>',
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP}" x2="{MARGIN_LEFT}" y2="{MARGIN_TOP + plot_h}" stroke="#444"/>',
        f'<text x="{MARGIN_LEFT + plot_w / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>',
        f'<text x="12" y="{MARGIN_TOP + plot_h / 2}" transform="rotate(-90 12 {MARGIN_TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    for i in range(5):
        frac = i / 4
        y = MARGIN_TOP + plot_h * (1 - frac)
        out.append(f'<text x="{MARGIN_LEFT - 4}" y="{y + 4}" text-anchor="end">{_nice(y_max * frac)}</text>')
        out.append(f'<line x1="{MARGIN_LEFT}" y1="{y}" x2="{MARGIN_LEFT + plot_w}" y2="{y}" stroke="#eee"/>')
        x = MARGIN_LEFT + plot_w * frac
        out.append(f'<text x="{x}" y="{MARGIN_TOP + plot_h + 14}" text-anchor="middle">'
                   f'{_nice(x0 + (x1 - x0) * frac)}</text>')
    return out


def line_chart(title: str, series: dict[str, Sequence[tuple[float, float]]], x_label: str, y_label: str) -> str:
    """One polyline per series (points sorted by x); the legend is on the right."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return _frame(title, [f'<text x="{MARGIN_LEFT}" y="60">no data</text>'])
    x0 = min(p[0] for p in points)
    x1 = max(p[0] for p in points)
    x1 = x1 if x1 > x0 else x0 + 1
    y_max = max(max(p[1] for p in points), 1)
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    body = _axes(x0, x1, y_max, x_label, y_label)
    for i, (name, pts) in enumerate(sorted(series.items())):
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(
            f"{MARGIN_LEFT + plot_w * (x - x0) / (x1 - x0):.1f},{MARGIN_TOP + plot_h * (1 - y / y_max):.1f}"
            for x, y in sorted(pts)
        )
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{coords}"/>')
        ly = MARGIN_TOP + 14 * i
        body.append(f'<rect x="{WIDTH - MARGIN_RIGHT + 10}" y="{ly}" width="10" height="3" fill="{color}"/>')
        body.append(f'<text x="{WIDTH - MARGIN_RIGHT + 24}" y="{ly + 5}">{escape(name[:22])}</text>')
    return _frame(title, body)


def bar_chart(title: str, bars: Sequence[tuple[str, float]], y_label: str, highlight: Sequence[bool] = ()) -> str:
    """Vertical bars with their labels under them and their values on top."""
    if not bars:
        return _frame(title, [f'<text x="{MARGIN_LEFT}" y="60">no data</text>'])
    y_max = max(max(v for _, v in bars), 1)
    plot_w = WIDTH - MARGIN_LEFT - 20
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    step = plot_w / len(bars)
    body = [
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP + plot_h}" x2="{MARGIN_LEFT + plot_w}" y2="{MARGIN_TOP + plot_h}" '
        'stroke="#444"/>',
        f'<text x="12" y="{MARGIN_TOP + plot_h / 2}" transform="rotate(-90 12 {MARGIN_TOP + plot_h / 2})" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    for i, (label, value) in enumerate(bars):
        h = plot_h * value / y_max
        x = MARGIN_LEFT + i * step + step * 0.15
        color = "#d62728" if i < len(highlight) and highlight[i] else "#1f77b4"
        body.append(f'<rect x="{x:.1f}" y="{MARGIN_TOP + plot_h - h:.1f}" width="{step * 0.7:.1f}" '
                    f'height="{h:.1f}" fill="{color}"/>')
        body.append(f'<text x="{x + step * 0.35:.1f}" y="{MARGIN_TOP + plot_h - h - 3:.1f}" '
                    f'text-anchor="middle">{_nice(value)}</text>')
        body.append(f'<text x="{x + step * 0.35:.1f}" y="{MARGIN_TOP + plot_h + 14}" text-anchor="middle">'
                    f'{escape(label[:16])}</text>')
    return _frame(title, body)


def timeline(title: str, lanes: Sequence[tuple[str, Sequence[tuple[float, float, str, bool]]]],
             x0: float, x1: float, x_label: str) -> str:
    """One row per lane (a queue); each span (start, end, client, overlapping) is a bar labelled with
    its client; spans that overlap another client's beyond the window are red."""
    row_h = 18
    height = MARGIN_TOP + MARGIN_BOTTOM + row_h * max(len(lanes), 1)
    if not lanes:
        return _frame(title, [f'<text x="{MARGIN_LEFT + 90}" y="60">no ownership recorded</text>'], height)
    x1 = x1 if x1 > x0 else x0 + 1
    left = MARGIN_LEFT + 90
    plot_w = WIDTH - left - 20
    clients = sorted({c for _, spans in lanes for _, _, c, _ in spans})
    color = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(clients)}
    body = []
    for i, (label, spans) in enumerate(lanes):
        y = MARGIN_TOP + i * row_h
        body.append(f'<text x="{left - 4}" y="{y + 12}" text-anchor="end">{escape(label[:26])}</text>')
        for start, end, client, bad in spans:
            xs = left + plot_w * (start - x0) / (x1 - x0)
            xe = left + plot_w * (end - x0) / (x1 - x0)
            fill = "#d62728" if bad else color[client]
            body.append(f'<rect x="{xs:.1f}" y="{y + 2 + (5 if bad else 0)}" width="{max(xe - xs, 1):.1f}" '
                        f'height="{row_h - 6 - (5 if bad else 0)}" fill="{fill}" fill-opacity="0.75">'
                        f'<title>{escape(client)}</title></rect>')
    y_axis = MARGIN_TOP + row_h * len(lanes)
    for i in range(5):
        frac = i / 4
        body.append(f'<text x="{left + plot_w * frac}" y="{y_axis + 14}" text-anchor="middle">'
                    f'{_nice(x0 + (x1 - x0) * frac)}</text>')
    body.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>')
    return _frame(title, body, height)
