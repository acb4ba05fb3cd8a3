"""The authored anatomy of a lifeform: its program laid along a spine, repeated per body segment.

``build_anatomy(program, body)`` returns ``{"nodes": [...], "edges": [...]}``:

- One node per input, step and output, in spine order (inputs, then steps, then outputs, each in program
  order), and that whole sequence repeated ``body["repeats"]`` times as segments 0, 1, …
- Node: ``{"id", "kind": "input"|"step"|"output", "name", "segment", "spine"}`` plus ``"op"`` for steps.
  ``name`` is the input/output name or step id; ``spine`` is the node's 0-based position along the whole
  spine. Segment 0 ids are ``in:<name>``, ``step:<id>``, ``out:<name>``; segment k ≥ 1 appends ``#k``
  (``step:s1#2``), so the ids of a single-segment body never change with repeats.
- Edge: ``{"from", "to", "kind", "port"}``. ``kind: "flow"`` edges follow the data flow inside a segment (from
  the node producing ``port`` to each step or output consuming it, once per distinct consumer/port pair, in
  consumer order); ``kind: "spine"`` edges (``port: None``) link the last node of segment k to the first node
  of segment k+1.
"""

from __future__ import annotations

from quineling.runtime.program import Body, Program
from stores.jsontypes import JSON


def _node_id(kind: str, name: str, segment: int) -> str:
    base = f"{kind}:{name}"
    return base if segment == 0 else f"{base}#{segment}"


def _segment(program: Program, segment: int, spine_start: int) -> tuple[list[JSON], list[JSON]]:
    nodes: list[JSON] = []
    edges: list[JSON] = []
    producer: dict[str, str] = {}

    def add(kind: str, prefix: str, name: str, **extra: str) -> str:
        node_id = _node_id(prefix, name, segment)
        nodes.append(
            {"id": node_id, "kind": kind, "name": name, "segment": segment, "spine": spine_start + len(nodes)}
            | extra
        )
        return node_id

    def consume(port: str, consumer: str, seen: set[str]) -> None:
        if port not in producer:
            raise ValueError(f"port {port!r} is not produced before {consumer}")
        if port not in seen:
            seen.add(port)
            edges.append({"from": producer[port], "to": consumer, "kind": "flow", "port": port})

    for item in program["inputs"]:
        producer[item["name"]] = add("input", "in", item["name"])
    for step in program["steps"]:
        node_id = add("step", "step", step["id"], op=step["op"])
        seen: set[str] = set()
        for port in step["in"]:
            consume(port, node_id, seen)
        for port in step["out"]:
            producer[port] = node_id
    for item in program["outputs"]:
        consume(item["from"], add("output", "out", item["name"]), set())
    return nodes, edges


def build_anatomy(program: Program, body: Body) -> dict[str, list[JSON]]:
    nodes: list[JSON] = []
    edges: list[JSON] = []
    for segment in range(body["repeats"]):
        seg_nodes, seg_edges = _segment(program, segment, len(nodes))
        if nodes and seg_nodes:
            edges.append({"from": nodes[-1]["id"], "to": seg_nodes[0]["id"], "kind": "spine", "port": None})
        nodes += seg_nodes
        edges += seg_edges
    return {"nodes": nodes, "edges": edges}
