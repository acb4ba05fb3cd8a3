"""Building an offspring candidate from the complete input — shared by preview, frame and admit.

The build reads the parent artifacts (so an admission's commit is checked against their versions) and
never writes. Order of checks: every parent exists (else ``not-found``, an error: the request names nothing
this runtime holds); every pin matches the parent's current companion intent hash (``stale-pin``
diagnostics); the recipe's typed compatibility (``compose-*``, ``mate-signature``, ``merge-collision``); the
child program passes the program checker (``invalid-child``, e.g. more than 64 steps); the candidate fits
``limits.max_candidate_bytes`` (``candidate-too-large``, measured as the candidate's canonical JSON).

The child source is ``render_source(program, body, parents=[parent artifact ids in input order])``; the body
has the derived traits and ``repeats`` = the largest of the parents' repeats (so a child is never shorter
than its longest parent).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from quineling.runtime.canonical import canonical_json, hash_json, sha256_hex
from quineling.runtime.context import Env, StateView
from quineling.runtime.errors import QuinelingError
from quineling.runtime.intent import check_program
from quineling.runtime.library import ARTIFACT
from quineling.runtime.program import Body, Program
from quineling.runtime.ranch.heredity import derive_traits
from quineling.runtime.ranch.recipes import Rejected, combine, diagnostic
from quineling.runtime.source import parse_source, render_source
from stores.jsontypes import JSON


@dataclass(slots=True)
class Build:
    """A ready candidate (``candidate`` set) or a rejection (``diagnostics`` set)."""

    candidate_id: str
    candidate: JSON | None = None
    diagnostics: list[JSON] = field(default_factory=list)
    program: Program | None = None
    body: Body | None = None
    parents: list[str] = field(default_factory=list)
    interface: JSON | None = None

    @property
    def ready(self) -> bool:
        return self.candidate is not None

    def preview(self) -> JSON:
        if self.candidate is not None:
            return {"status": "ready", "candidate": self.candidate}
        return {"status": "rejected", "diagnostics": self.diagnostics}


def candidate_id(offspring: JSON) -> str:
    """sha256 of the cleaned input's canonical JSON (an omitted ``overrides`` stays omitted)."""
    return hash_json(offspring)


def held_intent_hash(artifact: JSON) -> str | None:
    return (artifact.get("companions") or {}).get("intentHash")


def load_parents(view: StateView, offspring: JSON, path: str) -> list[JSON]:
    pins = offspring["parents"]
    view.prefetch([(ARTIFACT, pin["artifactId"]) for pin in pins])
    artifacts = []
    for i, pin in enumerate(pins):
        artifact = view.get(ARTIFACT, pin["artifactId"])
        if artifact is None:
            raise QuinelingError(
                "not-found", f"no retained artifact {pin['artifactId']}", f"{path}.parents[{i}].artifactId"
            )
        artifacts.append(artifact)
    return artifacts


def _pin_diagnostics(offspring: JSON, artifacts: list[JSON]) -> list[JSON]:
    problems = []
    for i, (pin, artifact) in enumerate(zip(offspring["parents"], artifacts, strict=True)):
        held = held_intent_hash(artifact)
        if pin["intentHash"] != held:
            expected = "null (the parent has no companion intent)" if held is None else held
            pinned = "null" if pin["intentHash"] is None else pin["intentHash"]  # JSON's word, not Python's
            problems.append(diagnostic(
                "stale-pin", f"parent {i} is pinned to {pinned} but its companion intent hash is {expected}",
                f"input.parents[{i}].intentHash",
            ))  # fmt: skip
    return problems


def build_candidate(view: StateView, env: Env, offspring: JSON, path: str = "input") -> Build:
    build = Build(candidate_id=candidate_id(offspring))
    artifacts = load_parents(view, offspring, path)
    build.diagnostics = _pin_diagnostics(offspring, artifacts)
    if build.diagnostics:
        return build
    decoded = [parse_source(a["source"], f"{path}.parents[{i}]") for i, a in enumerate(artifacts)]
    recipe = offspring["recipe"]
    try:
        program = combine(recipe, [p for p, _, _ in decoded])
    except Rejected as rejected:
        build.diagnostics = rejected.diagnostics
        return build
    try:
        interface = check_program(program, code="invalid-source", path="")
    except QuinelingError as exc:
        build.diagnostics = [
            diagnostic("invalid-child", f"the child program is not valid: {exc.message}", "input")
        ]
        return build
    traits = derive_traits(recipe, [b["traits"] for _, b, _ in decoded], offspring)
    body = {"traits": traits, "repeats": max(b["repeats"] for _, b, _ in decoded)}
    parents = [pin["artifactId"] for pin in offspring["parents"]]
    source = render_source(program, body, parents)
    candidate = {
        "candidateId": build.candidate_id,
        "childSourceHash": sha256_hex(source),
        "childSource": source,
        "recipe": recipe,
        "traits": traits,
        "interface": interface,
    }
    size = len(canonical_json(candidate).encode("utf-8"))
    if size > env.limits.max_candidate_bytes:
        build.diagnostics = [diagnostic(
            "candidate-too-large",
            f"the candidate is {size} bytes; the limit is {env.limits.max_candidate_bytes}", "input",
        )]  # fmt: skip
        return build
    build.candidate, build.program, build.body, build.parents = candidate, program, body, parents
    build.interface = interface
    return build


def rebuild_verified(view: StateView, env: Env, args: JSON) -> Build:
    """Frame/admission: rebuild from the complete input and verify both ids.

    ``candidateId`` is checked before the rebuild (it depends on the input only). A rebuild that is now
    rejected (e.g. a pin went stale after ``annotate``) is ``ineligible``; a different child source is
    ``candidate-mismatch``.
    """
    offspring = args["input"]
    if candidate_id(offspring) != args["candidateId"]:
        raise QuinelingError(
            "candidate-mismatch", "candidateId does not match the complete input", "candidateId"
        )
    build = build_candidate(view, env, offspring)
    if not build.ready:
        first = build.diagnostics[0]
        raise QuinelingError(
            "ineligible",
            f"the candidate no longer builds: {first['code']}: {first['message']}",
            first["path"],
        )
    assert build.candidate is not None
    if build.candidate["childSourceHash"] != args["childSourceHash"]:
        raise QuinelingError(
            "candidate-mismatch", "childSourceHash does not match the rebuilt child source", "childSourceHash"
        )
    return build
