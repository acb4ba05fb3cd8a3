"""The picture of a frame (:mod:`quineling.runtime.frame`) as SVG: ``quineling op frame … --svg FILE`` writes it,
and the console's viewer (``console_static/viewer.js``) draws the same geometry in the browser, by the same
rules, which the browser test compares number for number.

The rules: each point ``(x, y, z)`` is seen from above at a tilt, ``(x, −(y·cos t + z·sin t))`` with
``t = 60°``, so the curl (in the xy plane) and the wave's lift (along z) both show; the projected points are
scaled uniformly to fit ``WIDTH × HEIGHT`` less ``MARGIN`` on every side, centred, and rounded to 2 decimals.
Ridges are drawn as line segments, one path per owner (the ridges whose two ends that node owns) and one for
the seams between owners; each owner has its colour from ``PALETTE``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

WIDTH, HEIGHT, MARGIN = 640, 400, 16
TILT = math.pi / 3
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
SEAM_COLOUR = "#222222"
Frame = dict[str, Any]


def screen_points(points: Sequence[Sequence[float]]) -> list[tuple[float, float]]:
    """Every point projected and fitted into the picture, in point order."""
    cos_t, sin_t = math.cos(TILT), math.sin(TILT)
    flat = [(p[0], -(p[1] * cos_t + p[2] * sin_t)) for p in points]
    if not flat:
        return []
    xs, ys = [p[0] for p in flat], [p[1] for p in flat]
    span_x, span_y = max(xs) - min(xs), max(ys) - min(ys)
    scale = min((WIDTH - 2 * MARGIN) / (span_x or 1.0), (HEIGHT - 2 * MARGIN) / (span_y or 1.0))
    off_x = (WIDTH - scale * (max(xs) + min(xs))) / 2
    off_y = (HEIGHT - scale * (max(ys) + min(ys))) / 2
    return [(round(off_x + scale * x, 2), round(off_y + scale * y, 2)) for x, y in flat]


def ridge_paths(frame: Frame) -> dict[str, str]:
    """The SVG path data of the ridges: ``owner-K`` for those within owner ``K``, ``seams`` for the others."""
    at = screen_points(frame["points"])
    owners: list[int] = frame["owners"]
    segments: dict[str, list[str]] = {}
    for i, j in frame["ridges"]:
        key = f"owner-{owners[i]}" if owners[i] == owners[j] else "seams"
        (x1, y1), (x2, y2) = at[i], at[j]
        segments.setdefault(key, []).append(f"M{x1:.2f} {y1:.2f}L{x2:.2f} {y2:.2f}")
    return {key: "".join(parts) for key, parts in segments.items()}


def colour(owner: int) -> str:
    return PALETTE[owner % len(PALETTE)]


def frame_svg(frame: Frame, title: str = "") -> str:
    """A standalone SVG document of ``frame`` (the ``result`` of ``frame``, or ``offspringFrame``'s ``frame``)."""
    node_ids: list[str] = frame.get("nodeIds", [])
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT + 20 * len(node_ids)}" '
        f'width="{WIDTH}" height="{HEIGHT + 20 * len(node_ids)}" role="img">',
        f"<title>{escape(title or 'lifeform frame')}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT + 20 * len(node_ids)}" fill="#ffffff"/>',
    ]
    paths = ridge_paths(frame)
    for key in sorted(paths, key=lambda k: (k == "seams", len(k), k)):
        stroke = SEAM_COLOUR if key == "seams" else colour(int(key.removeprefix("owner-")))
        lines.append(
            f'<path id={quoteattr(key)} d="{paths[key]}" fill="none" stroke="{stroke}" '
            f'stroke-width="{0.9 if key == "seams" else 0.5}" stroke-opacity="0.8"/>'
        )
    for index, node in enumerate(node_ids):
        y = HEIGHT + 20 * index + 14
        lines.append(f'<rect x="{MARGIN}" y="{y - 10}" width="12" height="12" fill="{colour(index)}"/>')
        lines.append(
            f'<text x="{MARGIN + 18}" y="{y}" font-family="sans-serif" font-size="12">{escape(node)}</text>'
        )
    lines.append("</svg>")
    return "\n".join(lines) + "\n"
