"""Anatomy: stable node ids along a spine, data-flow edges, segments per repeat."""

from __future__ import annotations

import copy

import pytest

from quineling.runtime.anatomy import build_anatomy

EXAMPLE = {
    "inputs": [{"name": "xs", "type": "list", "unit": None, "value": [2, 3, 4]}],
    "steps": [
        {"id": "s1", "op": "square", "args": {}, "in": ["xs"], "out": ["s1"]},
        {"id": "s2", "op": "sum", "args": {}, "in": ["s1"], "out": ["s2"]},
    ],
    "outputs": [{"name": "total", "from": "s2", "type": "number", "unit": None}],
}
ALLOCATE = {
    "inputs": [{"name": "x", "type": "number", "unit": "credits", "value": 5}],
    "steps": [
        {"id": "s1", "op": "allocate", "args": {"from": 20}, "in": ["x"], "out": ["allocated", "remaining"]}
    ],
    "outputs": [
        {"name": "a", "from": "allocated", "type": "number", "unit": "credits"},
        {"name": "r", "from": "remaining", "type": "number", "unit": "credits"},
    ],
}


def body(repeats: int = 1) -> dict:
    return {
        "traits": dict.fromkeys(("length", "girth", "curl", "hue", "gait", "temper"), 0),
        "repeats": repeats,
    }


def test_single_segment_nodes_and_edges() -> None:
    anatomy = build_anatomy(EXAMPLE, body())
    assert anatomy["nodes"] == [
        {"id": "in:xs", "kind": "input", "name": "xs", "segment": 0, "spine": 0},
        {"id": "step:s1", "kind": "step", "name": "s1", "segment": 0, "spine": 1, "op": "square"},
        {"id": "step:s2", "kind": "step", "name": "s2", "segment": 0, "spine": 2, "op": "sum"},
        {"id": "out:total", "kind": "output", "name": "total", "segment": 0, "spine": 3},
    ]
    assert anatomy["edges"] == [
        {"from": "in:xs", "to": "step:s1", "kind": "flow", "port": "xs"},
        {"from": "step:s1", "to": "step:s2", "kind": "flow", "port": "s1"},
        {"from": "step:s2", "to": "out:total", "kind": "flow", "port": "s2"},
    ]


def test_repeats_add_segments_with_suffixed_ids_and_spine_links() -> None:
    anatomy = build_anatomy(EXAMPLE, body(3))
    ids = [n["id"] for n in anatomy["nodes"]]
    assert ids[:4] == ["in:xs", "step:s1", "step:s2", "out:total"]
    assert ids[4:8] == ["in:xs#1", "step:s1#1", "step:s2#1", "out:total#1"]
    assert ids[8:] == ["in:xs#2", "step:s1#2", "step:s2#2", "out:total#2"]
    assert [n["segment"] for n in anatomy["nodes"]] == [0] * 4 + [1] * 4 + [2] * 4
    assert [n["spine"] for n in anatomy["nodes"]] == list(range(12))
    spine = [e for e in anatomy["edges"] if e["kind"] == "spine"]
    assert spine == [
        {"from": "out:total", "to": "in:xs#1", "kind": "spine", "port": None},
        {"from": "out:total#1", "to": "in:xs#2", "kind": "spine", "port": None},
    ]
    flows = [e for e in anatomy["edges"] if e["kind"] == "flow"]
    assert len(flows) == 9
    assert {"from": "step:s1#2", "to": "step:s2#2", "kind": "flow", "port": "s1"} in flows
    # Flow never crosses segments.
    segment = {n["id"]: n["segment"] for n in anatomy["nodes"]}
    assert all(segment[e["from"]] == segment[e["to"]] for e in flows)


def test_segment_zero_ids_do_not_depend_on_repeats() -> None:
    one = build_anatomy(EXAMPLE, body(1))
    eight = build_anatomy(EXAMPLE, body(8))
    assert eight["nodes"][:4] == one["nodes"]
    assert len(eight["nodes"]) == 32
    assert len({n["id"] for n in eight["nodes"]}) == 32


def test_multi_out_ports_feed_their_consumers() -> None:
    anatomy = build_anatomy(ALLOCATE, body())
    assert [n["id"] for n in anatomy["nodes"]] == ["in:x", "step:s1", "out:a", "out:r"]
    assert anatomy["edges"] == [
        {"from": "in:x", "to": "step:s1", "kind": "flow", "port": "x"},
        {"from": "step:s1", "to": "out:a", "kind": "flow", "port": "allocated"},
        {"from": "step:s1", "to": "out:r", "kind": "flow", "port": "remaining"},
    ]


def test_repeated_in_port_gives_one_edge_and_every_endpoint_exists() -> None:
    program = copy.deepcopy(EXAMPLE)
    program["steps"][1]["in"] = ["s1", "xs", "s1"]
    anatomy = build_anatomy(program, body(2))
    into_s2 = [(e["from"], e["port"]) for e in anatomy["edges"] if e["to"] == "step:s2"]
    assert into_s2 == [("step:s1", "s1"), ("in:xs", "xs")]
    ids = {n["id"] for n in anatomy["nodes"]}
    assert all(e["from"] in ids and e["to"] in ids for e in anatomy["edges"])


def test_unresolved_port_is_rejected() -> None:
    program = copy.deepcopy(EXAMPLE)
    program["outputs"][0]["from"] = "nowhere"
    with pytest.raises(ValueError, match="nowhere"):
        build_anatomy(program, body())


def test_anatomy_is_deterministic_and_does_not_alias_the_program() -> None:
    program = copy.deepcopy(EXAMPLE)
    anatomy = build_anatomy(program, body(2))
    assert anatomy == build_anatomy(copy.deepcopy(EXAMPLE), body(2))
    assert program == EXAMPLE
