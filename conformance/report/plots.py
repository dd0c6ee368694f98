"""Small self-contained SVG plots for the HTML report (no JavaScript, no external files), so the
report stays one file that a CI can archive and a reader can open anywhere."""

from __future__ import annotations

from html import escape

WIDTH, HEIGHT, PAD = 560, 180, 30


def histogram_svg(values: list[float], unit: str, bins: int = 12) -> str:
    """Bars of how many values fall in each of ``bins`` equal ranges, labelled with the range ends."""
    if not values:
        return "<p><i>no values recorded</i></p>"
    lo, hi = min(values), max(values)
    if hi == lo:
        # Every value the same (a simulated clock's exact 0 ms): one bar, and an axis that says so. Twelve bins of
        # an invented width put the bar over "0–1 ms" and both axis ends at "0 ms".
        bins = 1
    width = (hi - lo) / bins if hi > lo else 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / width)) if hi > lo else 0] += 1
    top = max(counts)
    bar = (WIDTH - 2 * PAD) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" role="img" '
             f'aria-label="histogram of {len(values)} values">']
    for i, c in enumerate(counts):
        h = (HEIGHT - 2 * PAD) * c / top
        x, y = PAD + i * bar, HEIGHT - PAD - h
        label = (f"{lo + i * width:g}–{lo + (i + 1) * width:g} {unit}: {c}" if hi > lo
                 else f"{lo:g} {unit}: {c}")
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" fill="#4a78b5">'
                     f"<title>{escape(label)}</title></rect>")
        if c:
            parts.append(f'<text x="{x + bar / 2:.1f}" y="{y - 3:.1f}" font-size="10" text-anchor="middle">{c}</text>')
    parts.append(f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#333"/>')
    if hi > lo:
        parts.append(f'<text x="{PAD}" y="{HEIGHT - 10}" font-size="11">{lo:g} {escape(unit)}</text>')
        parts.append(f'<text x="{WIDTH - PAD}" y="{HEIGHT - 10}" font-size="11" text-anchor="end">'
                     f"{hi:g} {escape(unit)}</text>")
    else:
        parts.append(f'<text x="{WIDTH / 2:g}" y="{HEIGHT - 10}" font-size="11" text-anchor="middle">'
                     f"every value {lo:g} {escape(unit)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def balance_rows(observations: list[dict]) -> list[dict]:
    """One row per (strategy, queues, consumers): the share sizes and their spread."""
    rows = {}
    for o in observations:
        shares = list(o.get("shares", []))
        if not shares:
            continue
        key = (str(o.get("strategy")), int(o.get("queues", 0)), int(o.get("consumers", 0)))
        rows[key] = {"strategy": key[0], "queues": key[1], "consumers": key[2], "shares": shares,
                     "min": min(shares), "max": max(shares), "spread": max(shares) - min(shares)}
    return [rows[k] for k in sorted(rows)]
