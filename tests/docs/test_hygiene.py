"""The documentation stands on its own: no pointers to material outside the repository, no tools beyond
python3 and curl in what readers paste, and every relative link (and its #anchor) resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.examples import ROOT, Document

DOCUMENTS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]

# What a pointer outside the repository looks like: the material the project was built from is not shipped,
# so a reader could not follow it. State the fact, or link to the docs/ page that states it.
OUTSIDE = {
    # A link's own ``../`` (docs/decisions/ to docs/) is allowed: the link check below keeps it in the repository.
    "a path outside the repository": re.compile(r"(?:(?<!\]\()(?<!\.\./)\.\./|/work/|\bshared/)"),
    "a section number of an outside document": re.compile(r"§"),
    "a decision number": re.compile(r"\bD[0-9]{1,2}\b"),
    "the seed document": re.compile(r"\b(?:the seed|seed's|seed \"|seeds/)", re.IGNORECASE),
    "the design document": re.compile(r"\bdesign (?:§|doc|document)|\bthe design\b", re.IGNORECASE),
    "jq (readers are promised python3 and curl only)": re.compile(r"(?:\|\s*jq\b|\bjq ')"),
}
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("name", DOCUMENTS)
def test_no_pointers_outside_the_repository(name: str) -> None:
    text = (ROOT / name).read_text(encoding="utf-8")
    found = [
        f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {what}: {m.group()!r}"
        for what, pattern in OUTSIDE.items()
        for m in pattern.finditer(text)
    ]
    assert found == []


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = Document.load(path).text
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)  # headings only outside fences
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_relative_links_and_anchors_resolve(name: str) -> None:
    source = ROOT / name
    broken = []
    for match in LINK.finditer(source.read_text(encoding="utf-8")):
        target = match[1]
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        path = (source.parent / file_part).resolve() if file_part else source
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(f"{target}: no such file in the repository")
        elif anchor and anchor not in anchors(path):
            broken.append(f"{target}: {path.name} has no heading #{anchor}")
    assert broken == []


def test_slugs_follow_github() -> None:
    assert slug("### `offspringPreview`".lstrip("# ")) == "offspringpreview"
    assert slug("3. A world birth from a live proposal") == "3-a-world-birth-from-a-live-proposal"
    assert slug("Sending an operation over A2A") == "sending-an-operation-over-a2a"
