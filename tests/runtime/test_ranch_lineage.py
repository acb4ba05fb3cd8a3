"""Lineage queries and caps, and ``annotate`` with its world invalidation (docs/ranch-guide.md, section 4)."""

from __future__ import annotations

import copy

import pytest

from tests.runtime.test_ranch_support import (
    ALLOCATE,
    SQUARES,
    SUM_CREDITS,
    admission,
    admit,
    call,
    command,
    create,
    fails,
    garden,
    inspect_world,
    make_runtime,
    offspring,
    ready,
    state,
)


@pytest.fixture
def rt():
    return make_runtime()


def _family(rt):
    a, b = create(rt, SUM_CREDITS, seed=1), create(rt, ALLOCATE, seed=2)
    acks = [admit(rt, offspring([a], "body", nonce=n, mutation="drift"), f"a{n}") for n in range(3)]
    acks.append(admit(rt, offspring([a, b], "compose"), "ab"))
    acks.append(admit(rt, offspring([b], "body", nonce=9, mutation="leap"), "b9"))
    return a, b, acks


def test_lineage_is_append_order_with_numeric_cursor(rt):
    a, b, acks = _family(rt)
    everything = call(rt, operation="lineage")
    assert [d["index"] for d in everything["derivations"]] == [0, 1, 2, 3, 4]
    assert "nextCursor" not in everything
    page = call(rt, operation="lineage", limit=2)
    assert [d["index"] for d in page["derivations"]] == [0, 1] and page["nextCursor"] == 2
    page = call(rt, operation="lineage", limit=2, cursor=page["nextCursor"])
    assert [d["index"] for d in page["derivations"]] == [2, 3] and page["nextCursor"] == 4
    page = call(rt, operation="lineage", limit=2, cursor=4.0)
    assert [d["index"] for d in page["derivations"]] == [4] and "nextCursor" not in page
    of_b = call(rt, operation="lineage", artifactId=b["id"], limit=1)
    assert [d["index"] for d in of_b["derivations"]] == [3] and of_b["nextCursor"] == 4
    as_child = call(rt, operation="lineage", artifactId=acks[3]["artifactId"])
    assert as_child == {"derivations": [acks[3]["derivation"]]}
    assert call(rt, operation="lineage", artifactId="sha256:" + "0" * 64) == {"derivations": []}
    derivation = acks[3]["derivation"]
    assert set(derivation) == {"index", "childArtifactId", "parents", "recipe", "nonce", "mutation", "overrides",
                               "origin", "requestId", "target"}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"), [("limit", 0), ("limit", 33), ("cursor", -1), ("artifactId", "x"), ("extra", 1)]
)
def test_lineage_request_is_closed(rt, field, value):
    assert fails(rt, "invalid-request", operation="lineage", **{field: value}).path == field


@pytest.mark.parametrize("limits", [{"max_derivations": 2}, {"max_lineage_bytes": 800}])
def test_lineage_caps_refuse_admission_without_changes(limits):
    rt = make_runtime(**limits)
    a = create(rt, SQUARES)
    admit(rt, offspring([a], "body", nonce=1, mutation="drift"), "one")
    if "max_derivations" in limits:
        admit(rt, offspring([a], "body", nonce=2, mutation="drift"), "two")
    before = state(rt)
    value = offspring([a], "body", nonce=3, mutation="drift")
    fails(rt, "resource-limit", **admission(value, ready(rt, value), "three"))
    assert state(rt) == before


def test_derivation_size_cap():
    rt = make_runtime(max_derivation_bytes=300)
    a = create(rt, SQUARES)
    value = offspring([a], "body", mutation="leap")
    fails(rt, "resource-limit", **admission(value, ready(rt, value), "big"))


def _bare(rt, thought, seed=0):
    """An artifact without companions (recovered source), plus the intent that describes it."""
    donor = create(make_runtime(), thought, seed=seed)
    bare = call(rt, operation="recover", recovery={"source": donor["source"]})
    return bare, donor["companions"]["intent"]


def test_annotate_attach_unchanged_conflict_and_mismatch(rt):
    bare, intent = _bare(rt, SQUARES)
    assert bare["companions"]["intent"] is None
    annotated = call(rt, operation="annotate", artifactId=bare["id"], intent=intent)
    assert annotated["id"] == bare["id"]
    assert annotated["companions"]["intent"] == intent
    assert call(rt, operation="inspect", artifactId=bare["id"]) == annotated
    before = state(rt)
    assert call(rt, operation="annotate", artifactId=bare["id"], intent=intent) == annotated
    assert state(rt) == before
    renamed = {**intent, "name": "another-name"}
    fails(rt, "metadata-conflict", operation="annotate", artifactId=bare["id"], intent=renamed)
    other_values = copy.deepcopy(intent)
    other_values["inputs"][0]["value"] = [1, 2, 3]
    fails(rt, "intent-mismatch", operation="annotate", artifactId=bare["id"], intent=other_values)
    other_op = create(make_runtime(), "[2,3,4] | double | sum | report total")["companions"]["intent"]
    fails(rt, "intent-mismatch", operation="annotate", artifactId=bare["id"], intent=other_op)
    fails(rt, "not-found", operation="annotate", artifactId="sha256:" + "0" * 64, intent=intent)
    assert fails(rt, "invalid-request", operation="annotate", artifactId=bare["id"],
                 intent={**intent, "extra": 1}).path == "intent.extra"  # fmt: skip
    assert state(rt) == before


def test_annotate_ignores_the_body(rt):
    bare, intent = _bare(rt, SQUARES, seed=77)
    assert call(rt, operation="annotate", artifactId=bare["id"], intent=intent)["body"] == bare["body"]


def test_annotate_invalidates_pins_epochs_and_cancels_proposals(rt):
    bare_a, intent_a = _bare(rt, SUM_CREDITS, seed=1)
    bare_b, _ = _bare(rt, ALLOCATE, seed=2)
    world_id = garden(rt, [bare_a, bare_b])
    command(rt, world_id, {"kind": "advance", "ticks": 1})
    snap = inspect_world(rt, world_id)
    proposal = snap["proposals"][0]
    assert proposal["parents"][0] == {"artifactId": bare_a["id"], "intentHash": None}
    value = {"parents": proposal["parents"], "recipe": "compose", "nonce": 0, "mutation": "none",
             "origin": {"kind": "pairing", "worldId": snap["id"], "proposalId": proposal["proposalId"],
                        "parentResidents": proposal["parentResidents"], "epochs": proposal["epochs"]}}  # fmt: skip
    candidate = ready(rt, value)
    annotated = call(rt, operation="annotate", artifactId=bare_a["id"], intent=intent_a)
    after = inspect_world(rt, snap["id"])
    assert after["revision"] == snap["revision"] + 1 and after["nextSequence"] == snap["nextSequence"]
    assert after["proposals"] == []
    r1 = after["residents"][0]
    assert (r1["epoch"], r1["intentHash"]) == (1, annotated["companions"]["intentHash"])
    assert after["residents"][1]["epoch"] == 0
    target = {"kind": "world", "worldId": snap["id"], "expectedRevision": after["revision"]}
    err = fails(rt, "ineligible", **admission(value, candidate, "after-annotate", target))
    assert err.path == "input.parents[0].intentHash"  # the null pin went stale
    call(rt, operation="annotate", artifactId=bare_a["id"], intent=intent_a)  # identical: no world effect
    assert inspect_world(rt, snap["id"])["revision"] == after["revision"]
