"""The build/execute operations through ``Runtime.dispatch``: create, run, reproduce, recover, frame and
compile, their parse outcomes, request errors and capacity refusals."""

from __future__ import annotations

import copy

import pytest

from quineling import QuinelingError, Runtime
from quineling.runtime import build_ops
from quineling.runtime.source import parse_source
from tests.runtime.test_ranch_support import SQUARES, make_runtime


@pytest.fixture
def rt() -> Runtime:
    return make_runtime()


def result(rt: Runtime, **request: object) -> dict:
    response = rt.dispatch(request)
    assert response["operation"] == request["operation"]
    return response["result"]


def error(rt: Runtime, **request: object) -> QuinelingError:
    with pytest.raises(QuinelingError) as info:
        rt.dispatch(request)
    return info.value


def create(rt: Runtime, thought: str = SQUARES, **options: int) -> dict:
    request: dict = {"operation": "create", "thought": thought}
    if options:
        request["options"] = options
    created = result(rt, **request)
    assert created["status"] == "created"
    return created["artifact"]


def records(rt: Runtime) -> int:
    return rt.store.counters(rt.scope, ["records"])["records"]


def test_square_sum_runs_to_29(rt: Runtime) -> None:
    artifact = create(rt)
    assert artifact["id"].startswith("sha256:") and len(artifact["id"]) == 71
    record = result(rt, operation="run", artifactId=artifact["id"])
    assert record["outputs"] == {"total": 29}
    assert record["artifactId"] == record["sourceHash"] == artifact["id"]
    assert record["parentRecordId"] is None


def test_runs_of_one_source_share_its_parse_and_leave_it_unchanged(rt: Runtime) -> None:
    artifact = create(rt)
    build_ops._parsed_program.cache_clear()
    first = result(rt, operation="run", artifactId=artifact["id"])
    second = result(rt, operation="run", artifactId=artifact["id"])
    assert [first[k] for k in ("outputs", "units", "trace")] == [
        second[k] for k in ("outputs", "units", "trace")
    ]
    assert build_ops._parsed_program.cache_info()[:2] == (1, 1)  # one parse, then the kept program
    assert build_ops._parsed_program(artifact["source"]) == parse_source(artifact["source"])[0]


def test_a_source_over_the_bound_is_parsed_each_time(monkeypatch: pytest.MonkeyPatch, rt: Runtime) -> None:
    artifact = create(rt)
    build_ops._parsed_program.cache_clear()
    monkeypatch.setattr(build_ops, "PARSED_SOURCE_CHARS", len(artifact["source"]) - 1)
    assert result(rt, operation="run", artifactId=artifact["id"])["outputs"] == {"total": 29}
    assert build_ops._parsed_program.cache_info().currsize == 0


def test_integral_floats_are_accepted_like_protobuf_struct(rt: Runtime) -> None:
    artifact = create(rt)
    again = result(rt, operation="create", thought=SQUARES, options={"seed": 0.0, "repeats": 1.0})
    assert again["artifact"]["id"] == artifact["id"]
    assert error(rt, operation="create", thought=SQUARES, options={"seed": 1.5}).code == "invalid-request"
    assert error(rt, operation="create", thought=SQUARES, options={"seed": True}).code == "invalid-request"


def test_reproduce_yields_identical_source_and_fresh_parent_linked_record(rt: Runtime) -> None:
    artifact = create(rt)
    parent = result(rt, operation="run", artifactId=artifact["id"])
    child = result(rt, operation="reproduce", artifactId=artifact["id"], recordId=parent["id"])
    assert child["artifact"]["source"] == artifact["source"]
    assert child["record"]["id"] != parent["id"]
    assert child["record"]["parentRecordId"] == parent["id"]
    assert child["record"]["outputs"] == parent["outputs"]


def test_reproduce_refuses_unknown_and_foreign_records(rt: Runtime) -> None:
    a = create(rt)
    b = create(rt, "[1,2] | sum | report s")
    record_of_b = result(rt, operation="run", artifactId=b["id"])
    assert error(rt, operation="reproduce", artifactId=a["id"], recordId="rec_nope").code == "not-found"
    mismatch = error(rt, operation="reproduce", artifactId=a["id"], recordId=record_of_b["id"])
    assert (mismatch.code, mismatch.path) == ("record-mismatch", "recordId")


@pytest.mark.parametrize("representation", ["source", "harmonics", "colors"])
def test_recover_restores_same_id_through_each_representation(representation: str) -> None:
    origin = make_runtime()
    artifact = create(origin)
    value = artifact["source"] if representation == "source" else artifact["genomes"][representation]
    fresh = make_runtime()
    recovered = result(fresh, operation="recover", recovery={representation: value})
    assert recovered["id"] == artifact["id"]
    assert recovered["companions"]["intent"] is None  # a fresh runtime gets no omitted companions
    retained = result(origin, operation="recover", recovery={representation: value})
    assert retained == artifact  # a runtime that knows the source returns its retained artifact


def test_corrupted_genome_fails_invalid_genome(rt: Runtime) -> None:
    colors = copy.deepcopy(create(rt)["genomes"]["colors"])
    first = colors["swatches"][0]
    colors["swatches"][0] = "#000000" if first != "#000000" else "#000001"
    assert error(make_runtime(), operation="recover", recovery={"colors": colors}).code == "invalid-genome"


@pytest.mark.parametrize("recovery", [{}, {"source": "x", "colors": {}}])
def test_recover_needs_exactly_one_representation(rt: Runtime, recovery: dict) -> None:
    assert error(rt, operation="recover", recovery=recovery).code == "invalid-request"


def test_observations_create_no_records(rt: Runtime) -> None:
    artifact = create(rt)
    before = records(rt)
    result(rt, operation="inspect", artifactId=artifact["id"])
    frame = result(rt, operation="frame", artifactId=artifact["id"], phase=0.25, options={"budget": 4000})
    assert 0 < len(frame["points"]) <= 4000
    result(rt, operation="recover", recovery={"source": artifact["source"]})
    assert records(rt) == before == 0


def test_frame_limits(rt: Runtime) -> None:
    artifact = create(rt)
    for options in ({"budget": 3999}, {"budget": 24001}, {"crests": 5}, {"extra": 1}):
        bad = error(rt, operation="frame", artifactId=artifact["id"], phase=0, options=options)
        assert bad.code == "invalid-request"
    assert error(rt, operation="frame", artifactId=artifact["id"], phase=1e9 + 1).code == "invalid-request"
    assert error(rt, operation="frame", artifactId=artifact["id"], phase=float("nan")).code == "non-finite"


def test_different_companion_intent_is_metadata_conflict_and_keeps_artifact(rt: Runtime) -> None:
    artifact = create(rt)
    intent = copy.deepcopy(artifact["companions"]["intent"])
    intent["name"] = "another-reading"
    conflict = error(rt, operation="compile", intent=intent)
    assert conflict.code == "metadata-conflict"
    assert result(rt, operation="inspect", artifactId=artifact["id"]) == artifact
    # The identical intent returns the retained artifact unchanged.
    assert result(rt, operation="compile", intent=artifact["companions"]["intent"]) == artifact


def test_compile_attaches_intent_to_recovered_source() -> None:
    artifact = create(make_runtime())
    fresh = make_runtime()
    bare = result(fresh, operation="recover", recovery={"source": artifact["source"]})
    assert bare["companions"]["intentHash"] is None
    enriched = result(fresh, operation="compile", intent=artifact["companions"]["intent"])
    assert enriched["id"] == artifact["id"]
    assert enriched["companions"]["intentHash"] == artifact["companions"]["intentHash"]


@pytest.mark.parametrize(
    ("thought", "status"),
    [
        (SQUARES, "parsed"),
        ("   ", "clarify"),
        ("[1,2] | sum", "clarify"),
        ("[1,2] | email the team | report x", "unsupported"),
        ("7 | sum | report t", "inconsistent"),
        ("[1,2] | sum | report a, b", "inconsistent"),
    ],
)
def test_parse_outcomes_and_create_without_artifact(rt: Runtime, thought: str, status: str) -> None:
    parsed = result(rt, operation="parse", thought=thought)
    assert parsed["status"] == status
    assert ("intent" in parsed) == (status == "parsed")
    created = result(rt, operation="create", thought=thought)
    if status == "parsed":
        assert created["status"] == "created"
    else:
        assert created["status"] == status and "artifact" not in created
        assert created["diagnostics"]


@pytest.mark.parametrize(
    ("request_", "code", "path"),
    [
        ({"operation": "create", "thought": SQUARES, "extra": 1}, "invalid-request", "extra"),
        (
            {"operation": "create", "thought": SQUARES, "options": {"seed": 1, "x": 2}},
            "invalid-request",
            "options.x",
        ),
        ({"operation": "create"}, "invalid-request", "thought"),
        ({"operation": "create", "thought": "x" * 16385}, "invalid-request", "thought"),
        ({"operation": "teleport"}, "unknown-operation", "operation"),
        ({"thought": SQUARES}, "invalid-request", "operation"),
        ({"operation": "inspect", "artifactId": "sha256:" + "0" * 64}, "not-found", "artifactId"),
        ({"operation": "run", "artifactId": "sha256:" + "0" * 64}, "not-found", "artifactId"),
        ({"operation": "inspect", "artifactId": "nope"}, "invalid-request", "artifactId"),
        ({"operation": "run", "artifactId": float("inf")}, "non-finite", "artifactId"),
        ({"operation": "compile", "intent": {"format": "quineling-intent"}}, None, None),
        ({"operation": "recover", "recovery": {"source": "not a program\n"}}, "invalid-source", None),
    ],
)
def test_request_errors(rt: Runtime, request_: dict, code: str | None, path: str | None) -> None:
    exc = error(rt, **request_)
    if code is None:  # a malformed intent is refused; which field is reported first is the validator's choice
        assert (
            exc.code in {"invalid-request", "invalid-intent"} and exc.path and exc.path.startswith("intent")
        )
        return
    assert exc.code == code
    if path is not None:
        assert exc.path == path


# The sixteen operations of the product, as a caller would read them in the catalogue.
OPERATION_NAMES = (
    "annotate", "compile", "create", "frame", "inspect", "lineage", "offspringAdmit", "offspringFrame",
    "offspringPreview", "parse", "recover", "reproduce", "run", "worldCommand", "worldCreate", "worldInspect",
)  # fmt: skip


@pytest.mark.parametrize("name", ["teleport", "", "Create", "create "])
def test_unknown_operation_names_the_valid_ones(rt: Runtime, name: str) -> None:
    exc = error(rt, operation=name)
    assert (exc.code, exc.path) == ("unknown-operation", "operation")
    assert exc.message == f"unknown operation {name!r}; valid operations: {', '.join(OPERATION_NAMES)}"


def test_non_finite_inputs_are_rejected_anywhere(rt: Runtime) -> None:
    exc = error(rt, operation="create", thought=SQUARES, options={"seed": float("-inf")})
    assert exc.code == "non-finite"


def deep(levels: int, leaf: object) -> object:
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"k": value}
    return value


def test_values_nested_beyond_any_recursion_limit_are_checked_without_recursing(rt: Runtime) -> None:
    """The runtime's own request check walks iteratively: a caller of ``dispatch`` (not only the A2A layer,
    which caps nesting at its boundary) gets the runtime's error, never a RecursionError."""
    exc = error(rt, operation="parse", thought=SQUARES, extra=deep(5000, float("nan")))
    assert exc.code == "non-finite" and exc.path is not None and exc.path.startswith("extra[0].k[0].k")
    exc = error(rt, operation="parse", thought=SQUARES, extra=deep(5000, 1))
    assert (exc.code, exc.path) == ("invalid-request", "extra")


@pytest.mark.parametrize(
    "request_",
    [
        {"operation": "worldCreate", "worldKey": "\ud800", "seed": 1},
        {"operation": "parse", "thought": "[1] | sum | report t\udfff"},
        {"operation": "parse", "thought": SQUARES, "options": {"\udc00": 1}},
    ],
    ids=["worldKey", "thought", "member-name"],
)
def test_strings_that_are_not_valid_unicode_are_invalid_requests(rt: Runtime, request_: dict) -> None:
    exc = error(rt, **request_)
    assert exc.code == "invalid-request" and "valid Unicode" in exc.message


def test_non_finite_numbers_are_reported_before_bad_strings(rt: Runtime) -> None:
    exc = error(rt, operation="parse", thought="\ud800", extra=[float("inf")])
    assert (exc.code, exc.path) == ("non-finite", "extra[0]")


def test_artifact_capacity_is_refused_not_evicted() -> None:
    rt = make_runtime(max_artifacts=2)
    first = create(rt, "[1] | sum | report a")
    create(rt, "[2] | sum | report b")
    full = error(rt, operation="create", thought="[3] | sum | report c")
    assert full.code == "resource-limit"
    assert result(rt, operation="inspect", artifactId=first["id"]) == first
    assert create(rt, "[1] | sum | report a") == first  # an existing artifact needs no new slot


def test_record_capacity_is_refused() -> None:
    rt = make_runtime(max_records=1)
    artifact = create(rt)
    result(rt, operation="run", artifactId=artifact["id"])
    assert error(rt, operation="run", artifactId=artifact["id"]).code == "resource-limit"
    assert records(rt) == 1


def test_creation_options_change_identity_not_meaning(rt: Runtime) -> None:
    plain = create(rt)
    seeded = create(rt, seed=7, repeats=3)
    assert seeded["id"] != plain["id"] and seeded["body"]["repeats"] == 3
    assert result(rt, operation="run", artifactId=seeded["id"])["outputs"] == {"total": 29}


def test_compose_example_parents_run() -> None:
    rt = make_runtime()
    a = create(rt, "[2,2,8] credits | sum | report request")
    b = create(rt, "5 credits | allocate from 20 | report allocated, remaining")
    assert result(rt, operation="run", artifactId=a["id"])["outputs"] == {"request": 12}
    assert result(rt, operation="run", artifactId=b["id"])["outputs"] == {"allocated": 5, "remaining": 15}
