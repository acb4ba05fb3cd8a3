"""The build and execute operations: parse, create, compile, inspect, run, reproduce, recover, frame."""

from __future__ import annotations

from functools import lru_cache

from quineling.runtime import fields as f
from quineling.runtime.artifact import build_artifact
from quineling.runtime.canonical import sha256_hex
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.frame import sample_frame
from quineling.runtime.genome import decode_genome
from quineling.runtime.intent import check_program, program_of_intent, validate_intent
from quineling.runtime.kernel import Execution, execute
from quineling.runtime.library import ARTIFACT, RECORD, companions_of, load_artifact, stage_artifact
from quineling.runtime.operations import Operation, table
from quineling.runtime.program import Program
from quineling.runtime.source import parse_source, render_source
from quineling.runtime.thought import parse_thought
from quineling.runtime.traits import traits_from_seed
from stores.jsontypes import JSON

MAX_PHASE = 1e9

creation_options = f.record(
    {"seed": f.Optional(f.uint32, 0), "repeats": f.Optional(f.integer(1, 8), 1)}, name="options"
)
frame_options = f.record(
    {"budget": f.Optional(f.integer(4000, 24000), 4000), "crests": f.Optional(f.integer(2, 4), 2)},
    name="options",
)
DEFAULT_CREATION = {"seed": 0, "repeats": 1}
DEFAULT_FRAME = {"budget": 4000, "crests": 2}
phase = f.number(-MAX_PHASE, MAX_PHASE)


def _request(name: str, **fields: f.Field) -> f.Spec[JSON]:
    return f.record({"operation": f.one_of(name), **fields}, name=f"{name} request")


def _body(options: JSON) -> JSON:
    return {"traits": traits_from_seed(options["seed"]), "repeats": options["repeats"]}


def _store_program(view: StateView, env: Env, program: JSON, body: JSON, companions: JSON) -> JSON:
    """Validate a program, then store it as an artifact under the companion rules (``stage_artifact``).

    When the source is already retained with this very intent, the retained artifact is the answer and the
    derived parts (genomes, anatomy, size) are not built again just to be compared and dropped.
    """
    interface = check_program(program, code="invalid-intent", path="")
    source = render_source(program, body, [])
    retained = view.get(ARTIFACT, sha256_hex(source))
    if retained is not None and retained["companions"]["intentHash"] == companions["intentHash"]:
        return retained
    return stage_artifact(view, env, build_artifact(source, program, body, [], interface, companions))


def parse(args: JSON, view: StateView, env: Env) -> JSON:
    return parse_thought(args["thought"])


def create(args: JSON, view: StateView, env: Env) -> JSON:
    outcome = parse_thought(args["thought"])
    if outcome["status"] != "parsed":
        return outcome
    intent = outcome["intent"]
    companions = companions_of(intent, thought=args["thought"], source_map=outcome["sourceMap"])
    stored = _store_program(view, env, program_of_intent(intent), _body(args["options"]), companions)
    return {
        "status": "created",
        "artifact": stored,
        "diagnostics": outcome["diagnostics"],
        "assumptions": outcome["assumptions"],
        "sourceMap": outcome["sourceMap"],
    }


def compile_(args: JSON, view: StateView, env: Env) -> JSON:
    intent = args["intent"]
    return _store_program(view, env, program_of_intent(intent), _body(args["options"]), companions_of(intent))


def inspect(args: JSON, view: StateView, env: Env) -> JSON:
    return load_artifact(view, args["artifactId"])


# A run parses its artifact's source again each time (a sixth of a run's CPU): the programs of recent
# sources are kept. A source is content-addressed and its parse a pure function of it, and execute() never
# changes the program it is given, so a kept program serves every run of that source. Longer sources are
# parsed each time, so the cache holds at most PARSED_PROGRAMS × PARSED_SOURCE_CHARS characters of source.
PARSED_PROGRAMS = 256
PARSED_SOURCE_CHARS = 16 * 1024


@lru_cache(maxsize=PARSED_PROGRAMS)
def _parsed_program(source: str) -> Program:
    return parse_source(source)[0]


def _evaluate(artifact: JSON) -> Execution:
    source = artifact["source"]
    kept = isinstance(source, str) and len(source) <= PARSED_SOURCE_CHARS
    return execute(_parsed_program(source) if kept else parse_source(source)[0])


def _record(env: Env, artifact: JSON, parent: str | None, outcome: Execution) -> JSON:
    outputs, units, trace = outcome
    return {
        "id": env.new_record_id(),
        "artifactId": artifact["id"],
        "sourceHash": artifact["id"],
        "parentRecordId": parent,
        "outputs": outputs,
        "units": units,
        "trace": trace,
        "createdAt": env.clock(),
    }


def _store_record(view: StateView, env: Env, record: JSON) -> None:
    view.insert(RECORD, record["id"], record)
    view.quota("records", 1, env.limits.max_records)


def run(args: JSON, view: StateView, env: Env) -> JSON:
    # Only read (its id and source), so the decoded artifact may be one shared with other runs of it.
    artifact = load_artifact(view, args["artifactId"], shared=True)
    record = _record(env, artifact, None, _evaluate(artifact))
    _store_record(view, env, record)
    return record


def reproduce(args: JSON, view: StateView, env: Env) -> JSON:
    view.prefetch([("artifact", args["artifactId"]), (RECORD, args["recordId"])])
    artifact = load_artifact(view, args["artifactId"])
    parent = view.get(RECORD, args["recordId"])
    if parent is None:
        raise QuinelingError("not-found", f"no retained execution record {args['recordId']}", "recordId")
    if parent["artifactId"] != artifact["id"] or parent["sourceHash"] != artifact["id"]:
        raise QuinelingError(
            "record-mismatch",
            f"record {parent['id']} belongs to {parent['artifactId']}, not this artifact",
            "recordId",
        )
    record = _record(env, artifact, parent["id"], _evaluate(artifact))
    if record["outputs"] != parent["outputs"] or record["units"] != parent["units"]:
        raise QuinelingError(
            "record-mismatch", "re-execution did not reproduce the parent record's outputs", "recordId"
        )
    _store_record(view, env, record)
    return {"artifact": artifact, "record": record}


def _recovered_source(recovery: JSON) -> str:
    present = [k for k in ("source", "harmonics", "colors") if k in recovery]
    if len(present) != 1:
        raise QuinelingError(
            "invalid-request", "recovery takes exactly one of source, harmonics or colors", "recovery"
        )
    kind = present[0]
    if kind == "source":
        if not isinstance(recovery["source"], str):
            raise QuinelingError("invalid-request", "must be a string", "recovery.source")
        return recovery["source"]
    data = decode_genome(kind, recovery[kind], f"recovery.{kind}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise QuinelingError("invalid-source", "recovered bytes are not UTF-8", f"recovery.{kind}") from None


def _recovery(value: object, path: str) -> JSON:
    if not isinstance(value, dict):
        raise QuinelingError("invalid-request", "recovery must be an object", path)
    for key in value:
        if key not in ("source", "harmonics", "colors"):
            raise QuinelingError("invalid-request", f"unknown field {key!r}", f"{path}.{key}")
    return value


def recover(args: JSON, view: StateView, env: Env) -> JSON:
    source = _recovered_source(args["recovery"])
    program, body, parents = parse_source(source, "recovery")
    interface = check_program(program, code="invalid-source", path="recovery")
    artifact = build_artifact(source, program, body, parents, interface, None)
    retained = view.get("artifact", artifact["id"])
    if retained is not None:
        return retained
    return stage_artifact(view, env, artifact)


def frame(args: JSON, view: StateView, env: Env) -> JSON:
    artifact = load_artifact(view, args["artifactId"])
    options = args["options"]
    return sample_frame(
        artifact["anatomy"], artifact["body"], args["phase"], options["budget"], options["crests"]
    )


thought = f.string()
artifact_id = f.sha256_id

# parse, create, compile and inspect answer from their arguments and what they read alone (no clock, no random
# id): when they write nothing, their answer may be replayed from the runtime's memo (runtime/memo.py).
OPERATIONS = table(
    Operation("parse", _request("parse", thought=thought), parse, memo=True),
    Operation(
        "create",
        _request("create", thought=thought, options=f.Optional(creation_options, DEFAULT_CREATION)),
        create,
        memo=True,
    ),
    Operation(
        "compile",
        _request("compile", intent=validate_intent, options=f.Optional(creation_options, DEFAULT_CREATION)),
        compile_,
        memo=True,
    ),
    Operation("inspect", _request("inspect", artifactId=artifact_id), inspect, memo=True),
    Operation("run", _request("run", artifactId=artifact_id), run),
    Operation(
        "reproduce", _request("reproduce", artifactId=artifact_id, recordId=f.string(1, 128)), reproduce
    ),
    Operation("recover", _request("recover", recovery=_recovery), recover),
    Operation(
        "frame",
        _request(
            "frame", artifactId=artifact_id, phase=phase, options=f.Optional(frame_options, DEFAULT_FRAME)
        ),
        frame,
    ),
)
