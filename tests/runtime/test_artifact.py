"""The stored artifact: identity from source bytes, genomes, anatomy, companions and its size."""

from __future__ import annotations

import copy

import pytest

from quineling.runtime.anatomy import build_anatomy
from quineling.runtime.artifact import COMPANION_KEYS, build_artifact, with_companions
from quineling.runtime.canonical import canonical_json, sha256_hex
from quineling.runtime.genome import decode_genome
from quineling.runtime.source import parse_source, render_source

PROGRAM = {
    "inputs": [{"name": "xs", "type": "list", "unit": None, "value": [2, 3, 4]}],
    "steps": [
        {"id": "s1", "op": "square", "args": {}, "in": ["xs"], "out": ["s1"]},
        {"id": "s2", "op": "sum", "args": {}, "in": ["s1"], "out": ["s2"]},
    ],
    "outputs": [{"name": "total", "from": "s2", "type": "number", "unit": None}],
}
BODY = {
    "traits": {"length": 120, "girth": -40, "curl": 300, "hue": 17, "gait": 0, "temper": -5},
    "repeats": 2,
}
PARENTS = ["sha256:" + "1" * 64]
INTERFACE = {
    "inputs": [{"name": "xs", "type": "list", "unit": None}],
    "outputs": [{"name": "total", "type": "number", "unit": None}],
}
INTENT = {
    "format": "quineling-intent",
    "version": 1,
    "name": "total",
    "thought": "[2,3,4] | square | sum | report total",
} | PROGRAM


def make(companions: dict | None = None) -> dict:
    source = render_source(PROGRAM, BODY, PARENTS)
    return build_artifact(source, PROGRAM, BODY, PARENTS, INTERFACE, companions)


def size_without(artifact: dict) -> int:
    return len(canonical_json({k: v for k, v in artifact.items() if k != "sizeBytes"}).encode("utf-8"))


def test_artifact_shape_and_identity() -> None:
    artifact = make()
    source = render_source(PROGRAM, BODY, PARENTS)
    assert set(artifact) == {
        "id",
        "source",
        "interface",
        "body",
        "anatomy",
        "parents",
        "genomes",
        "companions",
        "sizeBytes",
    }
    assert artifact["id"] == sha256_hex(source.encode("utf-8"))
    assert artifact["source"] == source
    assert parse_source(artifact["source"]) == (PROGRAM, BODY, PARENTS)
    assert artifact["interface"] == INTERFACE
    assert artifact["body"] == BODY
    assert artifact["parents"] == PARENTS
    assert artifact["anatomy"] == build_anatomy(PROGRAM, BODY)
    assert artifact["companions"] == dict.fromkeys(COMPANION_KEYS)


def test_genomes_recover_the_source() -> None:
    artifact = make()
    for kind in ("harmonics", "colors"):
        genome = artifact["genomes"][kind]
        assert genome["sourceHash"] == artifact["id"]
        assert decode_genome(kind, genome, kind).decode("utf-8") == artifact["source"]


def test_size_counts_everything_but_itself() -> None:
    artifact = make()
    assert artifact["sizeBytes"] == size_without(artifact)
    assert artifact["sizeBytes"] > 3 * len(artifact["source"])  # genomes and anatomy are counted


def test_companions_change_size_but_never_identity() -> None:
    bare = make()
    annotated = make({"thought": INTENT["thought"], "intent": INTENT, "intentHash": "sha256:" + "2" * 64})
    assert annotated["id"] == bare["id"]
    assert annotated["companions"]["intent"] == INTENT
    assert annotated["companions"]["contract"] is None and annotated["companions"]["sourceMap"] is None
    assert annotated["sizeBytes"] == size_without(annotated) > bare["sizeBytes"]


def test_with_companions_recomputes_size_without_mutating() -> None:
    bare = make()
    snapshot = copy.deepcopy(bare)
    updated = with_companions(bare, {"intent": INTENT})
    assert bare == snapshot
    assert updated["id"] == bare["id"] and updated["genomes"] == bare["genomes"]
    assert updated["companions"]["intent"] == INTENT
    assert updated["sizeBytes"] == size_without(updated) > bare["sizeBytes"]
    assert with_companions(updated, None) == bare


def test_companions_are_copied_not_aliased() -> None:
    intent = copy.deepcopy(INTENT)
    artifact = make({"intent": intent})
    intent["name"] = "changed"
    assert artifact["companions"]["intent"]["name"] == "total"


def test_unknown_companion_key_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown companion"):
        make({"thoughts": "oops"})
