"""StateStore conformance: every backend in tests/conftest.py BACKENDS must pass all of these."""

from __future__ import annotations

import threading

import pytest

from stores import ChangeSet, ConflictError, Quota, QuotaExceeded, StateStore, Versioned

A, B = ("artifact", "a"), ("artifact", "b")


def put(store: StateStore, scope: str, key: tuple[str, str], value: dict, **extra: object) -> None:
    current = store.read(scope, [key])[key].version
    store.commit(scope, ChangeSet(expect={key: current}, put={key: value}, **extra))  # type: ignore[arg-type]


def test_absent_keys_read_as_none_version_zero(state_store: StateStore) -> None:
    assert state_store.read("s", [A, B]) == {A: Versioned(None, 0), B: Versioned(None, 0)}
    assert state_store.read("s", []) == {}
    assert state_store.counters("s", ["artifacts"]) == {"artifacts": 0}


def test_each_put_bumps_the_version(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": 1}}))
    assert state_store.read("s", [A])[A] == Versioned({"n": 1}, 1)
    state_store.commit("s", ChangeSet(expect={A: 1}, put={A: {"n": 2}}))
    assert state_store.read("s", [A])[A] == Versioned({"n": 2}, 2)


def test_delete_makes_a_document_absent(state_store: StateStore) -> None:
    put(state_store, "s", A, {"n": 1})
    state_store.commit("s", ChangeSet(expect={A: 1}, delete=frozenset({A})))
    assert state_store.read("s", [A])[A] == Versioned(None, 0)


def test_stale_version_conflicts_and_writes_nothing(state_store: StateStore) -> None:
    """A conflict on any expected key leaves every put, delete and counter of the change set unapplied."""
    put(state_store, "s", A, {"n": 1})
    put(state_store, "s", B, {"n": 1})
    stale = ChangeSet(
        expect={A: 0, B: 1},
        put={A: {"n": 9}, ("artifact", "c"): {"n": 9}},
        delete=frozenset({B}),
        quotas=(Quota("artifacts", 1, 10),),
    )
    with pytest.raises(ConflictError):
        state_store.commit("s", stale)
    read = state_store.read("s", [A, B, ("artifact", "c")])
    assert read[A] == Versioned({"n": 1}, 1)
    assert read[B] == Versioned({"n": 1}, 1)
    assert read[("artifact", "c")] == Versioned(None, 0)
    assert state_store.counters("s", ["artifacts"]) == {"artifacts": 0}


def test_expecting_absence_conflicts_when_the_document_exists(state_store: StateStore) -> None:
    put(state_store, "s", A, {"n": 1})
    with pytest.raises(ConflictError):
        state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": 2}}))


def test_quota_exactly_at_the_limit_is_allowed_one_past_is_refused(state_store: StateStore) -> None:
    for i in range(3):
        key = ("artifact", f"x{i}")
        state_store.commit("s", ChangeSet(expect={key: 0}, put={key: {}}, quotas=(Quota("artifacts", 1, 3),)))
    assert state_store.counters("s", ["artifacts"]) == {"artifacts": 3}
    over = ChangeSet(expect={A: 0}, put={A: {}}, quotas=(Quota("artifacts", 1, 3),))
    with pytest.raises(QuotaExceeded) as caught:
        state_store.commit("s", over)
    assert (caught.value.name, caught.value.limit) == ("artifacts", 3)
    assert state_store.read("s", [A])[A] == Versioned(None, 0)
    assert state_store.counters("s", ["artifacts"]) == {"artifacts": 3}


def test_a_multi_unit_delta_must_fit_whole(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(quotas=(Quota("bytes", 60, 100),)))
    with pytest.raises(QuotaExceeded):
        state_store.commit("s", ChangeSet(quotas=(Quota("bytes", 41, 100),)))
    state_store.commit("s", ChangeSet(quotas=(Quota("bytes", 40, 100),)))
    assert state_store.counters("s", ["bytes"]) == {"bytes": 100}


def test_one_failing_quota_refuses_the_others(state_store: StateStore) -> None:
    quotas = (Quota("records", 1, 10), Quota("artifacts", 1, 0))
    with pytest.raises(QuotaExceeded):
        state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {}}, quotas=quotas))
    assert state_store.counters("s", ["records", "artifacts"]) == {"records": 0, "artifacts": 0}


def test_repeated_counter_in_one_change_set_is_summed(state_store: StateStore) -> None:
    with pytest.raises(QuotaExceeded):
        state_store.commit("s", ChangeSet(quotas=(Quota("n", 2, 3), Quota("n", 2, 3))))
    state_store.commit("s", ChangeSet(quotas=(Quota("n", 2, 4), Quota("n", 2, 4))))
    assert state_store.counters("s", ["n"]) == {"n": 4}


def test_freeing_is_always_allowed_and_counters_never_go_below_zero(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(quotas=(Quota("n", 5, 5),)))
    state_store.commit("s", ChangeSet(quotas=(Quota("n", -2, 1),)))  # above the (new) limit, but freeing
    assert state_store.counters("s", ["n"]) == {"n": 3}
    state_store.commit("s", ChangeSet(quotas=(Quota("n", -10, 5),)))
    assert state_store.counters("s", ["n"]) == {"n": 0}


def test_scopes_are_isolated(state_store: StateStore) -> None:
    state_store.commit(
        "alice", ChangeSet(expect={A: 0}, put={A: {"who": "alice"}}, quotas=(Quota("n", 1, 1),))
    )
    assert state_store.read("bob", [A])[A] == Versioned(None, 0)
    assert state_store.counters("bob", ["n"]) == {"n": 0}
    state_store.commit("bob", ChangeSet(expect={A: 0}, put={A: {"who": "bob"}}, quotas=(Quota("n", 1, 1),)))
    assert state_store.read("alice", [A])[A].value == {"who": "alice"}


def test_awkward_names_do_not_collide(state_store: StateStore) -> None:
    """Separators and hash-tag braces in scopes, kinds and ids never make two keys one."""
    left, right = ("a/b", "c"), ("a", "b/c")
    state_store.commit("{x}:y/z", ChangeSet(expect={left: 0}, put={left: {"k": "left"}}))
    state_store.commit("{x}:y/z", ChangeSet(expect={right: 0}, put={right: {"k": "right"}}))
    read = state_store.read("{x}:y/z", [left, right])
    assert (read[left].value, read[right].value) == ({"k": "left"}, {"k": "right"})
    assert state_store.read("{x}", [left])[left] == Versioned(None, 0)


def test_no_shared_references(state_store: StateStore) -> None:
    """Mutating a committed or read value never changes what the store holds."""
    value = {"items": [1, 2], "nested": {"k": "v"}}
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: value}))
    value["items"].append(3)
    first = state_store.read("s", [A])[A].value
    assert first == {"items": [1, 2], "nested": {"k": "v"}}
    first["nested"]["k"] = "changed"
    assert state_store.read("s", [A])[A].value == {"items": [1, 2], "nested": {"k": "v"}}


def test_unicode_values_round_trip(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"text": "héllo ✓ 𝔘"}}))
    assert state_store.read("s", [A])[A].value == {"text": "héllo ✓ 𝔘"}


def test_threads_racing_for_the_last_slots_take_exactly_the_limit(state_store: StateStore) -> None:
    """Eight threads each try five artifacts against a limit of 20: exactly 20 land, none is lost."""
    index = ("index", "all")
    outcomes: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for i in range(5):
            key = ("artifact", f"{n}-{i}")
            for _ in range(500):
                current = state_store.read("s", [index])[index]
                listed = (current.value or {"ids": []})["ids"]
                change = ChangeSet(
                    expect={index: current.version, key: 0},
                    put={index: {"ids": [*listed, key[1]]}, key: {"n": n}},
                    quotas=(Quota("artifacts", 1, 20),),
                )
                try:
                    state_store.commit("s", change)
                    outcome = "ok"
                except ConflictError:
                    continue
                except QuotaExceeded:
                    outcome = "quota"
                with lock:
                    outcomes.append(outcome)
                break

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["ok"] * 20 + ["quota"] * 20
    assert state_store.counters("s", ["artifacts"]) == {"artifacts": 20}
    keys = [("artifact", f"{n}-{i}") for n in range(8) for i in range(5)]
    stored = {k[1] for k, v in state_store.read("s", keys).items() if v.value is not None}
    assert len(stored) == 20
    assert set(state_store.read("s", [index])[index].value["ids"]) == stored


def test_a_shared_read_answers_as_a_read_does_and_follows_every_change(state_store: StateStore) -> None:
    """``read_shared`` may hand several callers one decoded value, but never one the store no longer holds."""
    assert state_store.read_shared("s", [A]) == {A: Versioned(None, 0)}
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": [1]}}))
    first = state_store.read_shared("s", [A, B])
    assert first == state_store.read("s", [A, B]) == {A: Versioned({"n": [1]}, 1), B: Versioned(None, 0)}
    assert state_store.read_shared("s", [A])[A] == first[A]
    state_store.commit("s", ChangeSet(expect={A: 1}, put={A: {"n": [2]}}))
    assert state_store.read_shared("s", [A])[A] == Versioned({"n": [2]}, 2)
    state_store.commit("s", ChangeSet(expect={A: 2}, delete=frozenset({A})))
    assert state_store.read_shared("s", [A])[A] == Versioned(None, 0)
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": [3]}}))  # a new incarnation, a new text
    assert state_store.read_shared("s", [A])[A].value == {"n": [3]}
    assert state_store.read_shared("other", [A])[A] == Versioned(None, 0)


def test_a_plain_read_is_never_the_shared_value(state_store: StateStore) -> None:
    state_store.commit("s", ChangeSet(expect={A: 0}, put={A: {"n": [1]}}))
    shared = state_store.read_shared("s", [A])[A].value
    mine = state_store.read("s", [A])[A].value
    assert mine is not shared
    mine["n"].append(2)  # type: ignore[index]
    assert state_store.read_shared("s", [A])[A].value == {"n": [1]}
    assert state_store.read("s", [A])[A].value == {"n": [1]}
