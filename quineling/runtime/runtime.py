"""``Runtime.dispatch``: validate, compute on a recording view, commit once, retry on conflict.

A caller that keeps its own record of each request (the A2A layer keeps a task) passes ``attach``: a callback
that turns the outcome — the result, or the :class:`QuinelingError` — into an opaque write the store commits
in the same atomic step as the change set (a :class:`stores.base.TaskWrite`). The runtime knows nothing of
what it writes; it only makes sure every outcome it answers with was committed together with that write.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from quineling.runtime import retention
from quineling.runtime.context import QUOTA_LIMITS, Env, RuntimeLimits, StateView, utc_time
from quineling.runtime.errors import QuinelingError
from quineling.runtime.fields import ensure_request_values
from quineling.runtime.memo import AnswerMemo
from quineling.runtime.operations import Operation
from quineling.runtime.product_operations import ALL_OPERATIONS
from stores.base import StateStore, TaskWrite
from stores.changes import ChangeSet, Key
from stores.errors import ConflictError, QuotaExceeded
from stores.jsontypes import JSON

DEFAULT_SCOPE = "default"

Outcome = JSON  # {operation, result}
# Builds the write to commit with an outcome; called again for every recomputed outcome, so it must be pure.
Attach = Callable[[Outcome | QuinelingError], TaskWrite]


def _registered_operations() -> dict[str, Operation]:
    from quineling.runtime import build_ops
    from quineling.runtime.ranch import ops as ranch_ops

    operations = {**build_ops.OPERATIONS, **ranch_ops.OPERATIONS}
    assert set(operations) == set(ALL_OPERATIONS), "every product operation has exactly one handler"
    return operations


class Runtime:
    """The Quineling runtime over a state store. Stateless itself: any number may share one store."""

    def __init__(
        self,
        store: StateStore | None = None,
        limits: RuntimeLimits | None = None,
        *,
        env: Env | None = None,
        scope: str = DEFAULT_SCOPE,
        memo_entries: int = 1024,
    ) -> None:
        if store is None:
            from stores.memory import MemoryBackend

            store = MemoryBackend().state_store()
        self.store = store
        self.env = env or Env()
        if limits is not None:
            self.env.limits = limits
        self.scope = scope
        self.operations: Mapping[str, Operation] = _registered_operations()
        # Answers to identical requests, replayed only once the commit confirms what they rest on (memo.py).
        self.memo = AnswerMemo(memo_entries) if memo_entries else None

    @property
    def limits(self) -> RuntimeLimits:
        return self.env.limits

    def dispatch(self, request: object, *, scope: str | None = None, attach: Attach | None = None) -> Outcome:
        """Run one request ``{operation, …fields}`` and return ``{operation, result}``.

        Raises :class:`QuinelingError`; on error nothing of the runtime is committed.

        With ``attach``, ``attach(outcome or error)`` is committed in the same atomic step as the outcome's
        change set — also for outcomes that change no runtime state (read-only operations, refusals, invalid
        requests, capacity and ``busy`` errors), which then commit the write alone. On a conflict the request
        is recomputed and ``attach`` called again with the new outcome. A store error about the write
        itself (e.g. :class:`~stores.errors.TaskConflict`) propagates, and then nothing was committed.

        With ``attach``, an answer may come from the memo (``memo.py``): the outcome handed to ``attach`` and
        returned is then shared with every other replay of it, so it is only ever read (it becomes a task's
        artifact, and tasks are changed copy-on-write).
        """
        scope = scope or self.scope
        try:
            operation = self._resolve(request)
            args = operation.spec(request, "")
        except QuinelingError as exc:
            self._record(scope, attach, exc)
            raise
        # Only with a write to commit: it carries the confirmation at no extra round trip, while a plain dispatch
        # that read its documents from the store itself commits nothing (so extends nothing), as before.
        memo_key = (
            AnswerMemo.key(scope, operation.name, args)
            if self.memo is not None and operation.memo and attach is not None
            else None
        )
        if memo_key is not None:
            replayed = self._replay(scope, memo_key, attach)
            if replayed is not None:
                return replayed
        for _ in range(self.limits.max_attempts):
            view = StateView(self.store, scope)
            try:
                result = operation.handler(args, view, self.env)
            except QuinelingError as exc:
                if not self._settle_refusal(scope, view, attach, exc):
                    continue  # refused on a torn read (e.g. a receipt before, the world after a commit)
                raise
            outcome = {"operation": operation.name, "result": result}
            retention.stage(view, self.env)  # what this outcome keeps alive rides along its commit
            changes = view.change_set()
            try:
                if changes.is_empty:
                    self._observe(scope, view, attach, outcome)
                    self._remember(memo_key, view, outcome)
                else:
                    self.store.commit(scope, changes, task=attach(outcome) if attach else None)
            except ConflictError:
                continue
            except QuotaExceeded as exc:
                error = self._capacity_error(exc)
                self._record(scope, attach, error)
                raise error from None
            return outcome
        error = QuinelingError("busy", "the store stayed contended; retry the request")
        self._record(scope, attach, error)
        raise error

    def _replay(self, scope: str, key: str, attach: Attach | None) -> Outcome | None:
        """The remembered answer to this request, committed like a fresh one on unconfirmed reads (its task
        write, the extensions of what it used, the versions it rests on); ``None`` when there is none or a
        version changed (then the entry is dropped and the caller computes the answer)."""
        assert self.memo is not None
        replay = self.memo.get(key)
        if replay is None:
            return None
        view = StateView(self.store, scope)
        view.seed(replay.reads)
        retention.stage(view, self.env)
        try:
            self._observe(scope, view, attach, replay.outcome)
        except ConflictError:
            self.memo.forget(key)
            return None
        return replay.outcome

    def _remember(self, key: str | None, view: StateView, outcome: Outcome) -> None:
        """Keep a committed observation for replay, when the reads it rests on are known to be consistent:
        one snapshot, or versions the commit just confirmed."""
        if key is None or self.memo is None or not view.is_read_only:
            return
        if view.is_snapshot or not view.is_confirmed:
            self.memo.remember(key, outcome, retention.replay_reads(view.reads()))

    def _observe(self, scope: str, view: StateView, attach: Attach | None, outcome: Outcome) -> None:
        """Commit what a read-only outcome needs; raises :class:`ConflictError` when it must be recomputed.

        Read-only outcomes come from one read, except lineage (its index, then derivations that never change
        once written), so an observation needs no validation of its own — unless something it read came
        from a cache: then its versions are confirmed, in the commit of the write when there is one. The
        extensions of what it used ride along whatever is committed; with nothing to commit (no write, all
        reads confirmed) there is no commit to carry them, and no round trip is added for them."""
        changes = view.change_set()
        expect = {} if view.is_confirmed else changes.expect
        if attach is not None:
            self.store.commit(scope, ChangeSet(expect=expect, extend=changes.extend), task=attach(outcome))
        elif expect:
            self.store.commit(scope, ChangeSet(expect=expect, extend=changes.extend))

    def _capacity_error(self, exc: QuotaExceeded) -> QuinelingError:
        """``resource-limit`` naming the limit, its size, and when the first entry holding it frees a slot."""
        name = QUOTA_LIMITS.get(exc.name)
        message = f"capacity reached: {exc.name} is limited to {exc.limit}" + (f" ({name})" if name else "")
        if exc.frees_at is None:
            return QuinelingError("resource-limit", f"{message}; none of its entries expires")
        wait = max(0, math.ceil(exc.frees_at - self.env.now()))
        when = f"the oldest entry frees a slot at {utc_time(exc.frees_at)} (in {wait} s)"
        if exc.name not in retention.FIXED_QUOTAS:  # its holders live on while they are used
            when += " unless it is used before"
        return QuinelingError("resource-limit", f"{message}; {when}")

    def _settle_refusal(
        self, scope: str, view: StateView, attach: Attach | None, error: QuinelingError
    ) -> bool:
        """Whether ``error`` stands (and, with ``attach``, its write is committed); ``False``: recompute.

        A single read is a snapshot. Reads in several round trips are checked by committing their versions
        (with the write, if any, at no extra round trip): if any document changed in between, the refusal may
        mix two states — say an admission retry that read no receipt, then the world its original had just
        advanced, and would answer ``stale-revision`` to a request that succeeded — so it is recomputed.
        """
        try:
            self._commit_answer(scope, {} if view.is_snapshot else view.change_set().expect, attach, error)
        except ConflictError:
            return False
        return True

    def _record(self, scope: str, attach: Attach | None, error: QuinelingError) -> None:
        """Commit the write for an outcome that changes no runtime state."""
        self._commit_answer(scope, {}, attach, error)

    def _commit_answer(
        self, scope: str, expect: dict[Key, int], attach: Attach | None, answer: Outcome | QuinelingError
    ) -> None:
        """Commit an answer that changes no runtime state: the versions it rests on (``expect``, empty when
        its reads need no confirming) together with its write; no round trip when there is neither."""
        if attach is not None:
            self.store.commit(scope, ChangeSet(expect=expect), task=attach(answer))
        elif expect:
            self.store.commit(scope, ChangeSet(expect=expect))

    def _resolve(self, request: object) -> Operation:
        if not isinstance(request, Mapping):
            raise QuinelingError("invalid-request", "a request must be an object", None)
        ensure_request_values(request)
        name = request.get("operation")
        if not isinstance(name, str):
            raise QuinelingError("invalid-request", "operation must be a string", "operation")
        operation = self.operations.get(name)
        if operation is None:  # the catalogue is closed: naming an operation never enables one
            valid = ", ".join(sorted(self.operations))
            raise QuinelingError(
                "unknown-operation", f"unknown operation {name!r}; valid operations: {valid}", "operation"
            )
        return operation
