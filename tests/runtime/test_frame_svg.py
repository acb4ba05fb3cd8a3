"""The frame's picture (quineling/runtime/frame_svg.py): every ridge drawn once, in the path of its owner or of
the seams, inside the picture and filling it; the document escapes what it names."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from quineling.runtime.frame_svg import HEIGHT, MARGIN, WIDTH, frame_svg, ridge_paths, screen_points
from tests.runtime.test_frame import body, frame


@pytest.mark.parametrize("repeats", [1, 3])
def test_every_ridge_is_drawn_once_where_its_owners_say(repeats: int) -> None:
    sampled = frame(body(repeats), crests=3)
    paths = ridge_paths(sampled)
    owners = sampled["owners"]
    within = sum(1 for i, j in sampled["ridges"] if owners[i] == owners[j])
    counts = {key: path.count("M") for key, path in paths.items()}
    assert sum(counts.values()) == len(sampled["ridges"])
    assert counts["seams"] == len(sampled["ridges"]) - within
    assert set(paths) == {f"owner-{k}" for k in set(owners)} | {"seams"}


def test_the_body_fills_the_picture_inside_its_margin() -> None:
    at = screen_points(frame()["points"])
    xs, ys = [x for x, _ in at], [y for _, y in at]
    assert MARGIN - 0.01 <= min(xs) and max(xs) <= WIDTH - MARGIN + 0.01
    assert MARGIN - 0.01 <= min(ys) and max(ys) <= HEIGHT - MARGIN + 0.01
    # Fitted to the tighter side: one of the two spans reaches both margins.
    assert WIDTH - 2 * MARGIN - (max(xs) - min(xs)) < 0.02 or HEIGHT - 2 * MARGIN - (max(ys) - min(ys)) < 0.02


def test_the_document_is_svg_and_escapes_its_names() -> None:
    sampled = frame()
    sampled["nodeIds"] = [*sampled["nodeIds"][:-1], "<script>x</script>&"]
    svg = frame_svg(sampled, title='a "title" <b>')
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.find("{http://www.w3.org/2000/svg}title").text == 'a "title" <b>'  # type: ignore[union-attr]
    assert "<script>" not in svg and "&lt;script&gt;x&lt;/script&gt;&amp;" in svg
    assert len(re.findall(r"<path ", svg)) == len(ridge_paths(sampled))


def test_an_empty_frame_draws_an_empty_picture() -> None:
    svg = frame_svg({"points": [], "normals": [], "owners": [], "ridges": [], "nodeIds": []})
    assert "<path" not in svg and ET.fromstring(svg) is not None
