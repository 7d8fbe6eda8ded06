"""Inline SVG charts for the HTML reports: pure functions from numbers to markup, no plotting library.

Every chart carries its numbers as text and tells its series apart by shape (filled vs outlined
bars, solid vs dashed lines), so it reads in grayscale and without colour. Proportions come in as
0..1 and are labelled in percent with summary.pct, as report.md shows them.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from .cells import pct

FILL, GOLD, MUTED = "#4C72B0", "#DD8452", "#555"
Interval = tuple[str, float | None, float | None, float | None]  # (label, value, low, high)
Series = tuple[str, Sequence[float | None], str]  # (name, values, stroke-dasharray)


def _svg(width: float, height: float, title: str, body: list[str]) -> str:
    """An inline <svg> with an accessible title; ``title`` is escaped here, ``body`` is markup."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}"><title>{escape(title)}</title>' + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}>{escape(text)}</text>'


EM = 0.62  # a text's width per character in em: above the mean glyph of the page's sans-serif fonts
SIZE, SMALL = 12.0, 10.5  # px, as the page's CSS sets svg text and svg text.small


def text_width(text: str, size: float = SIZE) -> float:
    """A generous estimate of ``text``'s rendered width in px, for sizing a chart so nothing is clipped."""
    return len(text) * EM * size


def _short(label: str, limit: int = 28) -> str:
    """At most ``limit`` characters, the middle cut out: a label's end (a run's folder, a checkpoint's step)
    tells runs apart as often as its start does."""
    if len(label) <= limit:
        return label
    head = (limit - 1) // 2
    return label[:head] + "…" + label[len(label) - (limit - 1 - head):]


def short_labels(labels: Sequence[str], limit: int = 28) -> list[str]:
    """:func:`_short` of each label, or the labels whole where shortening would make two of them equal."""
    short = [_short(label, limit) for label in labels]
    return short if len(set(short)) == len(set(labels)) else list(labels)


def _stack(wanted: Sequence[float], gap: float) -> list[float]:
    """Text baselines as near ``wanted`` as can be with at least ``gap`` px between any two (in order of y)."""
    placed: list[float] = [0.0] * len(wanted)
    last = None
    for i in sorted(range(len(wanted)), key=lambda i: wanted[i]):
        placed[i] = wanted[i] if last is None else max(wanted[i], last + gap)
        last = placed[i]
    return placed


def letter_chart(dist: dict[str, dict[str, float]], title: str = "Letter distribution") -> str:
    """Horizontal bars per letter: predicted share (filled) over gold share (outlined), each with its
    percentage written after it; a bias shows as a filled bar far longer than the outlined one."""
    if not dist:
        return ""
    label_w = 12 + text_width(max(dist, key=len))
    plot_w, row_h, top = 220, 30, 24
    width, height = label_w + plot_w + 8 + text_width("100.0%", SMALL), top + row_h * len(dist) + 4
    body = [f'<rect x="{label_w}" y="4" width="12" height="10" fill="{FILL}"/>',
            _text(label_w + 16, 13, "predicted", cls="small"),
            f'<rect x="{label_w + 100}" y="4" width="12" height="10" fill="white" stroke="{GOLD}" stroke-width="2"/>',
            _text(label_w + 116, 13, "gold", cls="small")]
    for i, (letter, share) in enumerate(dist.items()):
        y = top + i * row_h
        body.append(_text(4, y + 17, letter, cls="strong"))
        for j, (key, name) in enumerate((("pred", "predicted"), ("gold", "gold"))):
            value = share.get(key) or 0.0
            w, by = max(0.5, plot_w * min(1.0, value)), y + 2 + 13 * j
            style = f'fill="{FILL}"' if key == "pred" else f'fill="white" stroke="{GOLD}" stroke-width="1.5"'
            body.append(f'<rect x="{label_w}" y="{by}" width="{w:.1f}" height="11" {style}>'
                        f'<title>{escape(f"{letter} {name} {pct(value)}%")}</title></rect>')
            body.append(_text(label_w + w + 4, by + 10, f"{pct(value)}%", cls="small"))
    return _svg(width, height, title, body)


def order_chart(per_order: Sequence[float], mean: float | None, original: float | None) -> str:
    """Accuracy of each order index as bars on a 0-100% axis, with the mean (dashed) and the original
    order (dotted) as labelled lines; an order far from the others is a position effect."""
    if not per_order:
        return ""
    n = len(per_order)
    slot = max(4.0, min(36.0, 600 / n))
    left, top, plot_h = 40, 10, 120
    lines = [(name, value, dash) for name, value, dash in (("mean", mean, "6 3"), ("original order", original, "2 2"))
             if value is not None]
    texts = [f"{name} {pct(value)}%" for name, value, _ in lines]
    width = left + n * slot + 12 + max([text_width(t, SMALL) for t in texts] + [40.0])
    height: float = top + plot_h + 34
    y = lambda v: top + plot_h * (1 - v)
    body = [f'<line x1="{left}" x2="{left + n * slot}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
            + _text(left - 4, y(t) + 4, f"{100 * t:.0f}%", "end", "small") for t in (0.0, 0.5, 1.0)]
    every = max(1, round(18 / slot))  # order labels no closer than ~18 px
    for i, v in enumerate(per_order):
        x = left + i * slot
        body.append(f'<rect x="{x + 0.15 * slot:.1f}" y="{y(v):.1f}" width="{0.7 * slot:.1f}" '
                    f'height="{plot_h * v:.1f}" fill="{FILL}"><title>order {i}: {pct(v)}%</title></rect>')
        if slot >= 26:
            body.append(_text(x + slot / 2, y(v) - 3, pct(v, 0), "middle", "small"))
        if i % every == 0:
            body.append(_text(x + slot / 2, top + plot_h + 14, str(i), "middle", "small"))
    body.append(_text(left + n * slot / 2, height - 4, "order index", "middle", "small"))
    # labels no closer than a line apart, the lower value's label below (close values would overprint)
    label_y = _stack([y(value) + 4 for _, value, _ in lines], gap=SMALL + 3)
    height = max(height, top + max(label_y + [0.0]) + 4)
    for (_name, value, dash), text, text_y in zip(lines, texts, label_y):
        ly = y(value)
        body.append(f'<line x1="{left}" x2="{left + n * slot + 4}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="black" '
                    f'stroke-width="1.5" stroke-dasharray="{dash}"/>')
        body.append(_text(left + n * slot + 8, text_y, text, cls="small"))
    return _svg(width, height, "Accuracy per order", body)


def interval_chart(rows: Sequence[Interval], lo: float, hi: float, zero: float | None = None,
                   signed: bool = False, title: str = "Intervals", tooltips: Sequence[str] = ()) -> str:
    """One row per label: a point at the value and a whisker over [low, high] on a shared axis.

    The axis runs ``lo``..``hi`` (proportions). ``zero`` draws a reference line (no difference).
    ``tooltips``: each row's full name, shown on hover (else the label, where it had to be
    shortened)."""
    if not rows or hi <= lo:
        return ""
    fmt = (lambda v: f"{100 * v:+.1f}") if signed else (lambda v: pct(v))
    tick = (lambda v: f"{100 * v:+.1f}") if signed else (lambda v: f"{100 * v:.0f}%")
    shown = short_labels([r[0] for r in rows])

    def written(value: float | None, low: float | None, high: float | None) -> str:
        if value is None:
            return "n/a"
        interval = f" [{fmt(low)}, {fmt(high)}]" if low is not None and high is not None else ""
        return f"{fmt(value)}{'' if signed else '%'}{interval}"

    values = [written(*r[1:]) for r in rows]
    label_w, plot_w, row_h, top = 12 + max(text_width(label) for label in shown), 320, 24, 6
    width = label_w + plot_w + 14 + max(text_width(v, SMALL) for v in values)
    width = max(width, label_w + plot_w + text_width(tick(hi), SMALL) / 2 + 4)
    height = top + row_h * len(rows) + 22
    x = lambda v: label_w + plot_w * (min(hi, max(lo, v)) - lo) / (hi - lo)
    body = [f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{height - 18}" stroke="#ddd"/>'
            + _text(x(t), height - 5, tick(t), "middle", "small") for t in (lo, (lo + hi) / 2, hi)]
    if zero is not None:
        body.append(f'<line x1="{x(zero):.1f}" x2="{x(zero):.1f}" y1="{top}" y2="{height - 18}" stroke="black" '
                    'stroke-dasharray="4 3"/>')
    for i, ((label, value, low, high), name, text) in enumerate(zip(rows, shown, values)):
        cy = top + i * row_h + row_h / 2
        tip = tooltips[i] if i < len(tooltips) else label
        body.append(_text(4, cy + 4, name) if name == tip else
                    f'<g><title>{escape(tip)}</title>{_text(4, cy + 4, name)}</g>')
        if value is None:
            body.append(_text(label_w + 4, cy + 4, "n/a", cls="small"))
            continue
        if low is not None and high is not None:
            body.append(f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{cy}" y2="{cy}" stroke="black" '
                        f'stroke-width="2"/>')
            for end in (low, high):
                body.append(f'<line x1="{x(end):.1f}" x2="{x(end):.1f}" y1="{cy - 5}" y2="{cy + 5}" stroke="black"/>')
        body.append(f'<circle cx="{x(value):.1f}" cy="{cy}" r="4.5" fill="{FILL}" stroke="black"/>')
        body.append(_text(label_w + plot_w + 10, cy + 4, text, cls="small"))
    return _svg(width, height, title, body)


MARKS = {"better": "▲", "worse": "▼"}  # a checkpoint significantly better / worse than the first
MARK_LEGEND = "▲ / ▼ significantly better / worse than the first (Holm over the checkpoints)"


def trend_chart(labels: Sequence[str], series: Sequence[Series], errors: Sequence[float | None] = (),
                marks: Sequence[str] = ()) -> str:
    """Lines over checkpoints (equally spaced, in the given order) on a 0-100% axis, each point
    labelled; ``errors`` are ± bars for the first series. A missing value breaks its line. ``marks``
    ("better", "worse" or "" per checkpoint) put ▲ / ▼ under a checkpoint's label, explained below the legend."""
    if not labels or not series:
        return ""
    marked = any(m in MARKS for m in marks)
    slot, left, top, plot_h = max(60.0, 480 / len(labels)), 40, 10, 160
    legend = left + 38 + max(text_width(name, SMALL) for name, _, _ in series)
    legend = max(legend, left + text_width(MARK_LEGEND, SMALL)) if marked else legend
    width = max(left + slot * len(labels) + 10, left + slot * (len(labels) - 0.5) + 6 + text_width("100.0", SMALL),
                legend + 4)
    shift = 14 if marked else 0  # a row for the marks under the labels
    height = top + plot_h + 40 + 16 * len(series) + 2 * shift
    x = lambda i: left + slot * (i + 0.5)
    y = lambda v: top + plot_h * (1 - min(1.0, max(0.0, v)))
    body = [f'<line x1="{left}" x2="{width - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
            + _text(left - 4, y(t) + 4, f"{100 * t:.0f}%", "end", "small") for t in (0.0, 0.5, 1.0)]
    body += [_text(x(i), top + plot_h + 14, _short(label, 14), "middle", "small") for i, label in enumerate(labels)]
    body += [_text(x(i), top + plot_h + 28, f"{MARKS[m]} {m}", "middle", "small")
             for i, m in enumerate(marks) if m in MARKS]
    for (i, value), err in zip(enumerate(series[0][1]), errors):
        if value is not None and err:
            body.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(value + err):.1f}" y2="{y(value - err):.1f}" '
                        f'stroke="black"/>')
    markers = ("circle", "rect", "diamond")
    for s, (name, values, dash) in enumerate(series):
        points = [(x(i), y(v), v) for i, v in enumerate(values) if v is not None]
        runs = _segments(values)
        for seg in runs:
            path = " ".join(f"{x(i):.1f},{y(values[i] or 0.0):.1f}" for i in seg)
            body.append(f'<polyline points="{path}" fill="none" stroke="black" stroke-width="1.5" '
                        f'stroke-dasharray="{dash}"/>')
        for px, py, v in points:
            body.append(_marker(markers[s % 3], px, py) + _text(px + 6, py - 6, pct(v), cls="small"))
        ly = top + plot_h + 30 + shift + 16 * s
        body.append(f'<line x1="{left}" x2="{left + 30}" y1="{ly - 4}" y2="{ly - 4}" stroke="black" '
                    f'stroke-dasharray="{dash}"/>' + _marker(markers[s % 3], left + 15, ly - 4)
                    + _text(left + 38, ly, name, cls="small"))
    if marked:
        body.append(_text(left, top + plot_h + 30 + shift + 16 * len(series), MARK_LEGEND, cls="small"))
    return _svg(width, height, "Checkpoint trend", body)


def _marker(kind: str, x: float, y: float) -> str:
    if kind == "circle":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{FILL}" stroke="black"/>'
    if kind == "rect":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8" fill="white" stroke="black"/>'
    return f'<path d="M{x:.1f},{y - 5:.1f} l5,5 l-5,5 l-5,-5 z" fill="{GOLD}" stroke="black"/>'


def _segments(values: Sequence[float | None]) -> list[list[int]]:
    """Runs of consecutive indices with a value (a line is drawn through each run)."""
    runs: list[list[int]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            runs.append([])
        else:
            runs[-1].append(i)
    return [r for r in runs if r]
