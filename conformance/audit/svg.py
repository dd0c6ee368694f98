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
#: Colours of series and clients. Red is not among them: it means one thing in every chart, a violation.
PALETTE = ("#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")
ALERT = "#d62728"
#: The ownership timeline: wider than the other charts, a column for the queue labels, one row per queue.
TIMELINE_WIDTH, TIMELINE_LABELS, ROW_H = 960, 230, 18
#: Average width of one character at the charts' 11 px font, to decide whether a label fits in its bar.
CHAR_W = 6.2


def _frame(title: str, body: list[str], height: int = HEIGHT, width: int = WIDTH) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
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
    # Headroom above the tallest bar for its value, below the title.
    y_max = max(max(v for _, v in bars), 1) * 1.12
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
        color = ALERT if i < len(highlight) and highlight[i] else PALETTE[0]
        body.append(f'<rect x="{x:.1f}" y="{MARGIN_TOP + plot_h - h:.1f}" width="{step * 0.7:.1f}" '
                    f'height="{h:.1f}" fill="{color}"/>')
        body.append(f'<text x="{x + step * 0.35:.1f}" y="{MARGIN_TOP + plot_h - h - 3:.1f}" '
                    f'text-anchor="middle">{_nice(value)}</text>')
        body.append(f'<text x="{x + step * 0.35:.1f}" y="{MARGIN_TOP + plot_h + 14}" text-anchor="middle">'
                    f'{escape(label[:16])}</text>')
    return _frame(title, body)


def queue_label(lane: str) -> tuple[str, str]:
    """(short label, group) of a timeline lane ``group/topic/broker/queue_id``: the group and the queue tell
    the rows apart (a group consumes one topic here); the full name goes into the row's tooltip."""
    parts = lane.rsplit("/", 3)
    if len(parts) < 4:
        return lane[:34], lane
    group, _, broker, queue_id = parts
    short = f"{group} · {broker}/{queue_id}"
    fits = int((TIMELINE_LABELS - 8) / CHAR_W)
    return (short if len(short) <= fits else "…" + short[1 - fits:]), group


def client_label(client: str, group: str) -> str:
    """A client's name in its bar: without its group's prefix when it has one (``OrderBilling-c0`` -> ``c0``)."""
    return client.removeprefix(group).lstrip("-_@:") or client


def sub_rows(spans: Sequence[tuple[float, float, str, bool]]) -> list[int]:
    """The sub-row of each span of one queue: 0, except that an overlapping span goes to the first sub-row
    where it covers no other span, so that two owners at once are drawn one above the other, never one over
    the other."""
    rows: list[list[tuple[float, float]]] = [[]]
    placed: list[int] = []
    for start, end, _, bad in spans:
        row = 0
        while bad and any(start < e and s < end for s, e in rows[row]):
            row += 1
            if row == len(rows):
                rows.append([])
        rows[row].append((start, end))
        placed.append(row)
    return placed


def timeline(title: str, lanes: Sequence[tuple[str, Sequence[tuple[float, float, str, bool]]]],
             x0: float, x1: float, x_label: str) -> str:
    """One row per queue (more where owners overlap, one above the other); each span (start, end, client,
    overlapping) is a bar in its client's colour with the client's name in it where it fits (and always in its
    tooltip). A span that overlaps another client's beyond the window gets a red outline; the legend under the
    title says so."""
    placement = [sub_rows(spans) for _, spans in lanes]
    heights = [ROW_H * (max(rows, default=0) + 1) for rows in placement]
    top = MARGIN_TOP + 18
    height = top + MARGIN_BOTTOM + max(sum(heights), ROW_H)
    if not lanes:
        return _frame(title, [f'<text x="{MARGIN_LEFT}" y="60">no ownership recorded</text>'], height)
    x1 = x1 if x1 > x0 else x0 + 1
    left = TIMELINE_LABELS
    plot_w = TIMELINE_WIDTH - left - 20
    clients = sorted({c for _, spans in lanes for _, _, c, _ in spans})
    color = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(clients)}
    body = [f'<text x="{MARGIN_LEFT}" y="{MARGIN_TOP + 6}" class="legend">bar: a client owning the queue (its name '
            f'in the bar or its tooltip)</text>',
            f'<rect x="{MARGIN_LEFT + 370}" y="{MARGIN_TOP - 3}" width="14" height="10" fill="#ccc" stroke="{ALERT}" '
            'stroke-width="2"/>',
            f'<text x="{MARGIN_LEFT + 390}" y="{MARGIN_TOP + 6}" class="legend">overlaps another client beyond '
            'the window</text>']
    y_lane = top
    for (lane, spans), rows, lane_h in zip(lanes, placement, heights, strict=True):
        short, group = queue_label(lane)
        body.append(f'<text x="{left - 6}" y="{y_lane + 12}" text-anchor="end" class="queue">{escape(short)}'
                    f'<title>{escape(lane)}</title></text>')
        for (start, end, client, bad), row in zip(spans, rows, strict=True):
            xs = left + plot_w * (start - x0) / (x1 - x0)
            width = max(plot_w * (end - start) / (x1 - x0), 1)
            y = y_lane + row * ROW_H
            outline = f' stroke="{ALERT}" stroke-width="2"' if bad else ""
            body.append(f'<rect x="{xs:.1f}" y="{y + 2}" width="{width:.1f}" height="{ROW_H - 5}" '
                        f'fill="{color[client]}" fill-opacity="0.8"{outline} class="span{" overlap" if bad else ""}">'
                        f'<title>{escape(client)}{" (overlap)" if bad else ""}</title></rect>')
            name = client_label(client, group)
            if len(name) * CHAR_W + 4 <= width:
                body.append(f'<text x="{xs + 2:.1f}" y="{y + 12}" fill="#fff" class="client">{escape(name)}</text>')
        y_lane += lane_h
    for i in range(5):
        frac = i / 4
        body.append(f'<text x="{left + plot_w * frac}" y="{y_lane + 14}" text-anchor="middle">'
                    f'{_nice(x0 + (x1 - x0) * frac)}</text>')
    body.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">{escape(x_label)}</text>')
    return _frame(title, body, height, width=TIMELINE_WIDTH)
