"""Runtime retention on every backend (memory, fakeredis, real Redis), with one injected clock for the runtime
and the store: records lapse a fixed time after they were made, artifacts, the world and the lineage after
their last use once nothing retained refers to them, receipts with what they guard; a full store refuses
(saying which limit, its size, and when a slot frees) and accepts again exactly when the oldest entry lapses.

Requests are dispatched as the A2A service does, with a task written in the same commit (``Client``), so every
request commits and every use counts; ``plain`` dispatches without one.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest

from quineling.a2a.task_facts import describe_task
from quineling.runtime.context import Env, Retention, RuntimeLimits, utc_time
from quineling.runtime.errors import QuinelingError
from quineling.runtime.library import CACHEABLE_KINDS
from quineling.runtime.runtime import Runtime
from stores import Backend, TaskWrite
from stores.cache import CachingStateStore
from tests.conftest import BACKENDS, BackendMaker, FakeClock
from tests.runtime.test_ranch_support import (
    ALLOCATE,
    SQUARES,
    SUM_CREDITS,
    admission,
    offspring,
    ready,
)

RECORD_TTL, IDLE_TTL = 60.0, 600.0


class Client:
    """A runtime whose every dispatch commits a task, as ``A2AService`` does; the clock is shared with the
    store, so expiry is decided exactly."""

    def __init__(self, backend: Backend, clock: FakeClock, retention: Retention | None = None, **limits: int):
        counter = itertools.count(1)
        self.clock = clock
        self.env = Env(
            limits=RuntimeLimits(**limits),
            clock=lambda: utc_time(clock.now),
            new_record_id=lambda: f"rec_{next(counter):032x}",
            retention=retention or Retention(RECORD_TTL, IDLE_TTL),
            now=clock,
        )
        self.backend = backend
        self.runtime = Runtime(store=backend.state_store(clock=clock), env=self.env)
        self.tasks = backend.task_store(describe=describe_task, clock=clock)

    def attach(self, _outcome: Any) -> TaskWrite:
        task = {"id": uuid.uuid4().hex, "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        return TaskWrite(self.tasks, "default/u", task)

    def __call__(self, **request: Any) -> Any:
        return self.runtime.dispatch(request, attach=self.attach)["result"]

    def plain(self, **request: Any) -> Any:
        return self.runtime.dispatch(request)["result"]

    def fails(self, code: str, **request: Any) -> QuinelingError:
        with pytest.raises(QuinelingError) as info:
            self.runtime.dispatch(request, attach=self.attach)
        assert info.value.code == code, info.value.to_dict()
        return info.value

    def counters(self, *names: str) -> dict[str, int]:
        return self.runtime.store.counters("default", names)

    def create(self, thought: str, seed: int = 0) -> Any:
        result = self(operation="create", thought=thought, options={"seed": seed, "repeats": 1})
        assert result["status"] == "created", result
        return result["artifact"]


@pytest.fixture
def backend(make_backend: BackendMaker) -> Backend:
    return make_backend()


@pytest.fixture
def client(backend: Backend, clock: FakeClock) -> Client:
    return Client(backend, clock)


def not_found(client: Client, **request: Any) -> str:
    return client.fails("not-found", **request).message


def test_a_record_lapses_its_ttl_after_creation_and_answers_not_found(client: Client) -> None:
    artifact = client.create(SQUARES)
    record = client(operation="run", artifactId=artifact["id"])
    reproduce = {"operation": "reproduce", "artifactId": artifact["id"], "recordId": record["id"]}
    client.clock.advance(RECORD_TTL - 0.001)
    assert client(**reproduce)["record"]["parentRecordId"] == record["id"]  # a use does not extend a record
    client.clock.advance(0.001)
    lapsed = not_found(client, **reproduce)
    never = not_found(client, **{**reproduce, "recordId": "rec_" + "f" * 32})
    assert lapsed == never.replace("rec_" + "f" * 32, record["id"])  # exactly as one that never existed


def test_records_at_capacity_are_refused_until_exactly_when_the_oldest_lapses(client: Client) -> None:
    client.env.limits = RuntimeLimits(max_records=3)
    artifact = client.create(SQUARES)
    run = {"operation": "run", "artifactId": artifact["id"]}
    first = client.clock.now
    for _ in range(3):
        client(**run)
        client.clock.advance(10)
    refused = client.fails("resource-limit", **run)
    assert refused.message == (
        "capacity reached: records is limited to 3 (max_records); "
        f"the oldest entry frees a slot at {utc_time(first + RECORD_TTL)} (in 30 s)"
    )
    client.clock.now = first + RECORD_TTL - 0.001
    client.fails("resource-limit", **run)
    assert client.counters("records") == {"records": 3}
    client.clock.now = first + RECORD_TTL
    client(**run)
    assert client.counters("records") == {"records": 3}  # one lapsed, one new: exact


def test_an_artifact_lapses_after_its_last_use(client: Client) -> None:
    artifact = client.create(SQUARES)
    inspect = {"operation": "inspect", "artifactId": artifact["id"]}
    client.clock.advance(IDLE_TTL - 1)
    client(operation="run", artifactId=artifact["id"])  # a use: kept another IDLE_TTL from now
    client.clock.advance(IDLE_TTL - 1)
    assert client(**inspect)["id"] == artifact["id"]  # an inspect is a use too
    client.clock.advance(IDLE_TTL - 0.001)
    assert client.plain(**inspect)["id"] == artifact["id"]
    client.clock.advance(0.001)
    assert not_found(client, **inspect) == f"no retained artifact {artifact['id']}"
    assert client.counters("artifacts", "artifact-bytes") == {"artifacts": 0, "artifact-bytes": 0}
    again = client.create(SQUARES)  # a re-created artifact is a new entry with a full lifetime
    assert again == artifact and client.counters("artifacts") == {"artifacts": 1}


def test_a_record_keeps_its_artifact_as_long_as_itself(backend: Backend, clock: FakeClock) -> None:
    client = Client(backend, clock, Retention(record_ttl_seconds=900, idle_ttl_seconds=100))
    artifact = client.create(SQUARES)
    record = client(operation="run", artifactId=artifact["id"])
    clock.advance(899)
    reproduced = client(operation="reproduce", artifactId=artifact["id"], recordId=record["id"])
    assert reproduced["artifact"]["id"] == artifact["id"]  # long past the artifact's own idle time


def test_artifacts_at_capacity_say_when_the_oldest_frees_a_slot(client: Client) -> None:
    client.env.limits = RuntimeLimits(max_artifacts=2)
    start = client.clock.now
    client.create(SQUARES)
    client.clock.advance(5)
    client.create(SUM_CREDITS)
    refused = client.fails("resource-limit", operation="create", thought=ALLOCATE)
    assert refused.message == (
        "capacity reached: artifacts is limited to 2 (max_artifacts); the oldest entry frees a slot at "
        f"{utc_time(start + IDLE_TTL)} (in {int(IDLE_TTL) - 5} s) unless it is used before"
    )
    client.clock.now = start + IDLE_TTL
    assert client(operation="create", thought=ALLOCATE)["status"] == "created"


def test_with_retention_off_a_full_store_stays_full(backend: Backend, clock: FakeClock) -> None:
    """``0`` is the original behaviour: entries are kept until the store is reset, whatever the clock."""
    client = Client(backend, clock, Retention(0, 0), max_records=2)
    artifact = client.create(SQUARES)
    for _ in range(2):
        client(operation="run", artifactId=artifact["id"])
    clock.advance(10 * 365 * 24 * 3600)
    refused = client.fails("resource-limit", operation="run", artifactId=artifact["id"])
    assert (
        refused.message
        == "capacity reached: records is limited to 2 (max_records); none of its entries expires"
    )
    assert client(operation="inspect", artifactId=artifact["id"])["id"] == artifact["id"]


def test_a_world_keeps_its_residents_artifacts_as_long_as_itself(client: Client) -> None:
    artifact = client.create(SQUARES)
    snap = client(operation="worldCreate", worldKey="garden", seed=23, affinity="neutral")
    client(
        operation="worldCommand", worldId=snap["id"], expectedRevision=0, sequence=1,
        command={"kind": "import", "artifactId": artifact["id"]},
    )  # fmt: skip
    for _ in range(3):  # only the world is used, never the artifact itself
        client.clock.advance(IDLE_TTL - 1)
        client(operation="worldInspect", worldId=snap["id"])
    assert client(operation="inspect", artifactId=artifact["id"])["id"] == artifact["id"]
    lapse = client.clock.now + IDLE_TTL  # the inspect just now was the artifact's last use
    client.clock.now = lapse
    not_found(client, operation="worldInspect", worldId=snap["id"])
    not_found(client, operation="inspect", artifactId=artifact["id"])
    assert client.counters("artifacts") == {"artifacts": 0}


def test_an_exact_world_command_retry_replays_inside_the_window_only(client: Client) -> None:
    artifact = client.create(SQUARES)
    snap = client(operation="worldCreate", worldKey="garden", seed=23, affinity="neutral")
    request = {
        "operation": "worldCommand", "worldId": snap["id"], "expectedRevision": 0, "sequence": 1,
        "command": {"kind": "import", "artifactId": artifact["id"]},
    }  # fmt: skip
    ack = client(**request)
    client.clock.advance(IDLE_TTL - 0.001)
    assert client(**request) == ack  # replayed, not executed again
    assert [r["residentId"] for r in client(operation="worldInspect", worldId=snap["id"])["residents"]] == [
        "r1"
    ]
    client.clock.advance(IDLE_TTL - 0.001)  # the replay and the inspect were uses: the window moved with them
    assert client(**request) == ack
    client.clock.advance(IDLE_TTL)
    not_found(client, **request)  # the world lapsed, its receipts with it


def test_an_admission_receipt_lives_as_long_as_the_lineage_it_guards(
    backend: Backend, clock: FakeClock
) -> None:
    client = Client(backend, clock, max_admission_receipts=1)
    parents = [client.create(SUM_CREDITS, seed=1), client.create(ALLOCATE, seed=2)]
    value = offspring(parents, "compose")
    candidate = ready(client.runtime, value)
    request = admission(value, candidate, "adm-1")
    ack = client(**request)
    clock.advance(IDLE_TTL - 0.001)
    assert client(**request) == ack  # the exact retry replays: no second derivation
    assert len(client(operation="lineage")["derivations"]) == 1  # a use of the lineage
    refused = client.fails("resource-limit", **admission(value, candidate, "adm-2"))
    assert refused.message.startswith(
        "capacity reached: admission-receipts is limited to 1 (max_admission_receipts)"
    )
    assert f"at {utc_time(clock.now + IDLE_TTL)}" in refused.message
    clock.advance(IDLE_TTL)
    assert client(operation="lineage") == {"derivations": []}  # lineage and receipt lapsed together
    assert client.counters("admission-receipts") == {"admission-receipts": 0}
    not_found(client, **request)  # the parents lapsed as well (their last use was the admission)
    for parent, seed in zip(parents, (1, 2), strict=True):
        assert client.create(parent["companions"]["thought"], seed=seed) == parent
    again = client(**request)  # outside the window the first admission is as if it never happened
    assert again["derivation"]["index"] == 0 and again["artifactId"] == ack["artifactId"]


def test_a_read_only_request_without_a_commit_extends_nothing(client: Client) -> None:
    """``Runtime.dispatch`` without a task to write commits nothing for an inspect, so it is no use: the
    service always writes a task, so over A2A every request is (docs/decisions/0024-retention.md)."""
    artifact = client.create(SQUARES)
    client.clock.advance(IDLE_TTL - 1)
    client.plain(operation="inspect", artifactId=artifact["id"])
    client.clock.advance(1)
    not_found(client, operation="inspect", artifactId=artifact["id"])


# fakeredis runs the scripts in a Lua emulator, several times slower than Redis: its 2,000 runs are slow.
STREAM_BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("fakeredis", id="fakeredis", marks=pytest.mark.slow),
    BACKENDS["redis"],
]


@pytest.mark.parametrize("make_backend", STREAM_BACKENDS, indirect=True)
def test_a_steady_stream_of_runs_keeps_succeeding_with_the_default_limits(
    backend: Backend, clock: FakeClock
) -> None:
    """2,000 runs, the clock moving 4 s per run (256 records per 900 s is one per 3.5 s): the store stays just
    under max_records and no run is refused. Without retention the 257th run would be."""
    client = Client(backend, clock, Retention())
    artifact = client.create(SQUARES)
    limit = RuntimeLimits().max_records
    for n in range(2000):
        client(operation="run", artifactId=artifact["id"])
        clock.advance(4)
        if n % 500 == 0:
            assert client.counters("records")["records"] <= limit
    assert (
        client.counters("records")["records"] == 900 // 4
    )  # the record made 900 s before the last run lapsed in its commit
    assert client(operation="inspect", artifactId=artifact["id"])["id"] == artifact["id"]


NETWORK = {name: param for name, param in BACKENDS.items() if name != "memory"}


@pytest.mark.parametrize("make_backend", list(NETWORK.values()), ids=list(NETWORK), indirect=True)
def test_retention_adds_no_round_trip(make_backend: BackendMaker, clock: FakeClock) -> None:
    """A run over a warm read cache is one round trip, a new create two, and the use each makes is in them."""
    backend = make_backend()
    client = Client(backend, clock)
    client.runtime.store = CachingStateStore(client.runtime.store, CACHEABLE_KINDS)

    def trips(**request: Any) -> int:
        before = backend.round_trips()
        client(**request)
        return backend.round_trips() - before

    assert trips(operation="create", thought=SQUARES) == 2
    artifact_id = client.create(SQUARES)["id"]
    clock.advance(IDLE_TTL - 1)
    assert [trips(operation="run", artifactId=artifact_id) for _ in range(3)] == [1, 1, 1]
    clock.advance(IDLE_TTL - 1)  # the runs extended the artifact
    assert trips(operation="inspect", artifactId=artifact_id) == 1


def test_a_replayed_answer_stages_the_same_leases_and_extensions_from_its_slim_reads() -> None:
    """The answer memo keeps only ``retention.replay_reads`` of what an answer read: presence and versions,
    and the world's value (whose residents stage() extends). Seeded with that, a replay must stage exactly
    what the full reads stage."""
    from quineling.runtime import retention
    from quineling.runtime.context import StateView
    from quineling.runtime.ranch.world_state import WORLD
    from stores.memory import MemoryBackend

    reads: dict[Any, tuple[Any, int]] = {
        ("artifact", "sha256:a"): ({"id": "sha256:a", "sizeBytes": 3, "source": "x" * 500}, 4),
        WORLD: ({"residents": [{"artifactId": "sha256:b"}]}, 2),
        ("artifact", "sha256:gone"): (None, 0),
    }
    env = Env(retention=Retention(RECORD_TTL, IDLE_TTL), now=lambda: 1000.0)
    store = MemoryBackend().state_store()

    def staged(seeded: dict[Any, tuple[Any, int]]) -> Any:
        view = StateView(store, "s")
        view.seed(seeded)
        retention.stage(view, env)
        return view.change_set()

    slim = retention.replay_reads(reads)
    assert slim[("artifact", "sha256:a")] == ({}, 4)  # no copy of the artifact itself
    assert slim[WORLD] == reads[WORLD] and slim[("artifact", "sha256:gone")] == (None, 0)
    full, replayed = staged(reads), staged(slim)
    assert full.extend == {
        ("artifact", "sha256:a"): 1000.0 + IDLE_TTL,
        WORLD: 1000.0 + IDLE_TTL,
        ("artifact", "sha256:b"): 1000.0 + IDLE_TTL,
    }
    assert (replayed.extend, replayed.expect, replayed.leases) == (full.extend, full.expect, full.leases)
