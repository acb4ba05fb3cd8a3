"""Offspring preview, frame and library admission (docs/ranch-guide.md, section 2)."""

from __future__ import annotations

import copy

import pytest

from quineling.runtime.canonical import hash_json, sha256_hex
from quineling.runtime.ranch.heredity import draw
from tests.runtime.test_ranch_support import (
    ALLOCATE,
    LIBRARY,
    SQUARES,
    SUM_CREDITS,
    admission,
    admit,
    call,
    create,
    fails,
    make_runtime,
    offspring,
    pin,
    ready,
    state,
)


@pytest.fixture
def rt():
    return make_runtime()


@pytest.fixture
def ab(rt):
    return create(rt, SUM_CREDITS, seed=1), create(rt, ALLOCATE, seed=2)


def test_guide_preview_frame_admit_twice_lineage_run(rt, ab):
    value = offspring(list(ab), "compose", nonce=7, mutation="drift")
    before = state(rt)
    candidate = ready(rt, value)
    framed = call(
        rt, operation="offspringFrame", input=value, candidateId=candidate["candidateId"],
        childSourceHash=candidate["childSourceHash"], phase=0, options={"budget": 4000, "crests": 2},
    )  # fmt: skip
    assert state(rt) == before  # preview and frame store nothing
    assert framed["candidateId"] == candidate["candidateId"]
    assert 0 < len(framed["frame"]["points"]) <= 4000
    request = admission(value, candidate, "a2a-manual-birth-1")
    admitted = call(rt, **request)
    after_first = state(rt)
    assert call(rt, **copy.deepcopy(request)) == admitted
    assert state(rt) == after_first  # the replay changed nothing
    assert admitted["artifactId"] == candidate["childSourceHash"]
    assert "worldRevision" not in admitted
    evidence = call(rt, operation="lineage", artifactId=admitted["artifactId"], limit=16)
    assert evidence == {"derivations": [admitted["derivation"]]}
    assert state(rt)[2].get("records", 0) == 0  # admission never executes the child
    record = call(rt, operation="run", artifactId=admitted["artifactId"])
    assert record["outputs"] == {"allocated": 12, "remaining": 8}


def test_compose_example_and_candidate_shape(rt, ab):
    a, b = ab
    value = offspring([a, b], "compose")
    candidate = ready(rt, value)
    assert candidate["candidateId"] == hash_json(value)
    assert candidate["childSourceHash"] == sha256_hex(candidate["childSource"])
    assert candidate["recipe"] == "compose"
    assert candidate["interface"] == {
        "inputs": [{"name": "xs", "type": "list", "unit": "credits"}],
        "outputs": [{"name": "allocated", "type": "number", "unit": "credits"},
                    {"name": "remaining", "type": "number", "unit": "credits"}],
    }  # fmt: skip
    lines = candidate["childSource"].splitlines()
    assert lines[2:4] == [f"parent {a['id']}", f"parent {b['id']}"]
    assert "step s1_2 allocate from=20 s1 -> s1_allocated s1_remaining" in lines  # B's step renamed
    child = admit(rt, value, "compose-1")
    assert call(rt, operation="run", artifactId=child["artifactId"])["outputs"] == {
        "allocated": 12,
        "remaining": 8,
    }
    inspected = call(rt, operation="inspect", artifactId=child["artifactId"])
    assert inspected["parents"] == [a["id"], b["id"]]
    assert inspected["companions"]["intent"] is None


def test_preview_is_deterministic_and_integral_floats_are_integers(rt, ab):
    value = offspring(list(ab), "compose", nonce=7.0)
    assert ready(rt, value) == ready(rt, offspring(list(ab), "compose", nonce=7))


def test_stale_and_invented_pins_are_rejected_previews(rt, ab):
    a, b = ab
    invented = offspring([a, b], "compose")
    invented["parents"][0]["intentHash"] = "sha256:" + "0" * 64
    result = call(rt, operation="offspringPreview", input=invented)
    assert result["status"] == "rejected"
    assert result["diagnostics"][0]["code"] == "stale-pin"
    assert result["diagnostics"][0]["path"] == "input.parents[0].intentHash"
    nulled = offspring([a, b], "compose")
    nulled["parents"][1]["intentHash"] = None
    diag = call(rt, operation="offspringPreview", input=nulled)["diagnostics"]
    assert [d["path"] for d in diag] == ["input.parents[1].intentHash"]
    assert "pinned to null but" in diag[0]["message"] and "None" not in diag[0]["message"]


def test_null_pin_for_a_parent_without_companions(rt):
    recovered = call(rt, operation="recover", recovery={"source": create(make_runtime(), SQUARES)["source"]})
    value = {"parents": [{"artifactId": recovered["id"], "intentHash": None}], "recipe": "body", "nonce": 1,
             "mutation": "leap", "origin": {"kind": "manual"}}  # fmt: skip
    assert ready(rt, value)["interface"]["outputs"] == [{"name": "total", "type": "number", "unit": None}]
    value["parents"][0]["intentHash"] = "sha256:" + "1" * 64
    assert call(rt, operation="offspringPreview", input=value)["status"] == "rejected"


def test_unknown_parent_is_not_found(rt, ab):
    value = offspring(list(ab), "compose")
    value["parents"][1]["artifactId"] = "sha256:" + "a" * 64
    assert (
        fails(rt, "not-found", operation="offspringPreview", input=value).path
        == "input.parents[1].artifactId"
    )


@pytest.mark.parametrize(
    ("first", "second", "recipe", "code"),
    [
        (ALLOCATE, SUM_CREDITS, "compose", "compose-arity"),
        (SQUARES, "5 credits | allocate from 20 | report allocated, remaining", "compose", "compose-unit"),
        ("[1,2] | reverse | report r", "5 | double | report d", "compose", "compose-type"),
        (SUM_CREDITS, SQUARES, "mate", "mate-signature"),
        (SQUARES, "[1,2] | sum | report total", "merge", "merge-collision"),
    ],
)
def test_recipe_incompatibilities_are_diagnosed(rt, first, second, recipe, code):
    value = offspring([create(rt, first), create(rt, second)], recipe)
    result = call(rt, operation="offspringPreview", input=value)
    assert result["status"] == "rejected"
    assert result["diagnostics"][0]["code"] == code
    assert result["diagnostics"][0]["path"] == "input.parents[1]"


def test_merge_renames_colliding_inputs_and_runs_both(rt):
    a, b = create(rt, SQUARES), create(rt, "[1,5] | max | report biggest")
    child = admit(rt, offspring([a, b], "merge"), "merge-1")
    source = call(rt, operation="inspect", artifactId=child["artifactId"])["source"]
    assert "input xs_2 list = [1, 5]" in source and "step s1_2 max xs_2" in source
    assert call(rt, operation="run", artifactId=child["artifactId"])["outputs"] == {"total": 29, "biggest": 5}


def test_mate_crosses_traits_by_nonce_bits(rt):
    a, b = create(rt, SQUARES, seed=1), create(rt, "[1,5] | max | report biggest", seed=2)
    candidate = ready(rt, offspring([a, b], "mate", nonce=0b101010))
    ta, tb = a["body"]["traits"], b["body"]["traits"]
    expected = [ta["length"], tb["girth"], ta["curl"], tb["hue"], ta["gait"], tb["temper"]]
    assert list(candidate["traits"].values()) == expected
    run = call(
        rt, operation="run", artifactId=admit(rt, offspring([a, b], "mate", nonce=42), "m")["artifactId"]
    )
    assert run["outputs"] == {"total": 29}  # A's program


def test_trait_mean_drift_leap_and_overrides(rt):
    a, b = create(rt, SQUARES, seed=1), create(rt, SQUARES, seed=2, repeats=3)
    ta, tb = a["body"]["traits"], b["body"]["traits"]
    body_child = ready(rt, offspring([a], "body"))
    assert body_child["traits"] == ta
    drift = ready(rt, offspring([b], "body", nonce=9, mutation="drift"))["traits"]
    assert all(abs(drift[k] - tb[k]) <= 50 or abs(drift[k]) == 1000 for k in tb)
    assert drift == {k: max(-1000, min(1000, tb[k] + draw(9, "drift", k) % 101 - 50)) for k in tb}
    leap = ready(rt, offspring([a], "body", nonce=3, mutation="leap"))["traits"]
    assert sum(leap[k] != ta[k] for k in ta) <= 1
    overrides = {"length": 1000, "girth": -1000, "curl": 0, "hue": 5, "gait": 6, "temper": 7.0}
    forced = ready(rt, offspring([a], "body", overrides=overrides))
    assert forced["traits"] == {**overrides, "temper": 7}
    twin = create(rt, "[1,5] | max | report biggest", seed=2, repeats=3)
    merged = ready(rt, offspring([a, twin], "merge"))
    # the mean rounds toward zero (int() truncates), and repeats is the parents' maximum
    assert merged["traits"] == {k: int((ta[k] + twin["body"]["traits"][k]) / 2) for k in ta}
    assert "body repeats=3 " in merged["childSource"]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda v: v.update(mutation="drift", overrides=dict.fromkeys(
            ("length", "girth", "curl", "hue", "gait", "temper"), 0)), "input.overrides"),
        (lambda v: v.update(overrides={"length": 1}), "input.overrides.girth"),
        (lambda v: v.update(overrides=dict.fromkeys(
            ("length", "girth", "curl", "hue", "gait", "temper"), 1001)), "input.overrides.length"),
        (lambda v: v.update(recipe="body"), "input.parents"),
        (lambda v: v.update(nonce=2**32), "input.nonce"),
        (lambda v: v.update(nonce=1.5), "input.nonce"),
        (lambda v: v.update(mutation="wild"), "input.mutation"),
        (lambda v: v.update(extra=1), "input.extra"),
        (lambda v: v["parents"][0].update(extra=1), "input.parents[0].extra"),
        (lambda v: v["origin"].update(extra=1), "input.origin.extra"),
        (lambda v: v.update(origin={"kind": "pairing", "worldId": "w"}), "input.origin.proposalId"),
    ],
)  # fmt: skip
def test_closed_input_records(rt, ab, mutate, path):
    value = offspring(list(ab), "compose")
    mutate(value)
    assert fails(rt, "invalid-request", operation="offspringPreview", input=value).path == path


def test_candidate_size_cap_is_a_rejected_preview():
    rt = make_runtime(max_candidate_bytes=600)
    a = create(rt, SQUARES)
    result = call(rt, operation="offspringPreview", input=offspring([a], "body"))
    assert result == {
        "status": "rejected",
        "diagnostics": [
            {"code": "candidate-too-large", "message": result["diagnostics"][0]["message"], "path": "input"}
        ],
    }


def test_frame_verifies_ids_and_options(rt, ab):
    value = offspring(list(ab), "compose")
    c = ready(rt, value)
    base = {"operation": "offspringFrame", "input": value, "candidateId": c["candidateId"],
            "childSourceHash": c["childSourceHash"], "phase": 0.25}  # fmt: skip
    assert call(rt, **base) == call(rt, **{**base, "phase": 1.25})  # periodic, deterministic
    assert (
        fails(rt, "candidate-mismatch", **{**base, "candidateId": "sha256:" + "0" * 64}).path == "candidateId"
    )
    other = {**base, "childSourceHash": "sha256:" + "0" * 64}
    assert fails(rt, "candidate-mismatch", **other).path == "childSourceHash"
    changed = {**base, "input": {**value, "nonce": 1}}
    assert fails(rt, "candidate-mismatch", **changed).path == "candidateId"
    fails(rt, "invalid-request", **{**base, "phase": 2e9})
    fails(rt, "invalid-request", **{**base, "options": {"budget": 100}})
    fails(rt, "invalid-request", **{**base, "options": {"crests": 5}})
    fails(rt, "non-finite", **{**base, "phase": float("nan")})
    assert len(call(rt, **{**base, "options": {"budget": 6000, "crests": 3}})["frame"]["points"]) <= 6000


def test_admit_refusals_and_conflicts(rt, ab):
    value = offspring(list(ab), "compose")
    c = ready(rt, value)
    request = admission(value, c, "req-1")
    fails(rt, "candidate-mismatch", **{**request, "childSourceHash": "sha256:" + "0" * 64})
    fails(rt, "candidate-mismatch", **{**request, "candidateId": "sha256:" + "0" * 64})
    assert state(rt)[2].get("admission-receipts", 0) == 0
    first = call(rt, **request)
    other = offspring(list(ab), "compose", nonce=1)
    fails(rt, "conflict", **admission(other, ready(rt, other), "req-1"))
    fails(rt, "conflict", **{**request, "target": {"kind": "world", "worldId": "w", "expectedRevision": 0}})
    second = call(rt, **admission(value, c, "req-2"))  # same child under another key: one more derivation
    assert second["artifactId"] == first["artifactId"]
    assert second["derivation"]["index"] == 1


def test_replay_comes_before_freshness_checks(rt, ab):
    a, b = ab
    recovered_rt = make_runtime()
    bare = call(recovered_rt, operation="recover", recovery={"source": a["source"]})
    value = {"parents": [{"artifactId": bare["id"], "intentHash": None}], "recipe": "body", "nonce": 0,
             "mutation": "none", "origin": {"kind": "manual"}}  # fmt: skip
    request = admission(value, ready(recovered_rt, value), "pinned")
    acknowledged = call(recovered_rt, **request)
    intent = a["companions"]["intent"]
    # annotating makes the null pin stale: a fresh admission is refused, the replay is not
    call(recovered_rt, operation="annotate", artifactId=bare["id"], intent=intent)
    assert call(recovered_rt, operation="offspringPreview", input=value)["status"] == "rejected"
    assert call(recovered_rt, **request) == acknowledged
    assert (
        fails(recovered_rt, "ineligible", **{**request, "requestId": "fresh"}).path
        == "input.parents[0].intentHash"
    )


def test_pairing_origin_cannot_enter_the_library(rt, ab):
    value = offspring(
        list(ab),
        "compose",
        origin={
            "kind": "pairing",
            "worldId": "w",
            "proposalId": "p1",
            "parentResidents": ["r1", "r2"],
            "epochs": [0, 0],
        },
    )
    fails(rt, "ineligible", **admission(value, ready(rt, value), "pairing-library"))


def test_admission_receipts_cap_refuses_without_changes():
    rt = make_runtime(max_admission_receipts=2)
    a = create(rt, SQUARES)
    for nonce in (1, 2):
        admit(rt, offspring([a], "body", nonce=nonce, mutation="drift"), f"k{nonce}")
    before = state(rt)
    value = offspring([a], "body", nonce=3, mutation="drift")
    fails(rt, "resource-limit", **admission(value, ready(rt, value), "k3"))
    assert state(rt) == before
    assert call(rt, **admission(offspring([a], "body", nonce=1, mutation="drift"),
                               ready(rt, offspring([a], "body", nonce=1, mutation="drift")), "k1"))  # fmt: skip


def test_artifact_cap_refuses_admission_without_changes():
    rt = make_runtime(max_artifacts=1)
    a = create(rt, SQUARES)
    before = state(rt)
    value = offspring([a], "body", mutation="leap")
    fails(rt, "resource-limit", **admission(value, ready(rt, value), "full"))
    assert state(rt) == before


def test_library_target_spec_is_closed(rt, ab):
    value = offspring(list(ab), "compose")
    request = admission(value, ready(rt, value), "x", {"kind": "library", "worldId": "w"})
    assert fails(rt, "invalid-request", **request).path == "target.worldId"
    assert fails(rt, "invalid-request", **{**request, "target": LIBRARY, "requestId": ""}).path == "requestId"
    assert pin(ab[0])["intentHash"].startswith("sha256:")
