"""The synchronous A2A client: one agent, every operation, over the interface negotiated from its card.

client = A2AClient.connect("https://agent.example", credentials=Credentials(bearer=token))
task = client.send(text_message("hello"))
for event in client.stream(text_message("hello")): ...
result = client.delegate(text_message("hello"), timeout=60)
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Unpack

from quineling.client.breaker import BreakerSettings, CircuitBreaker
from quineling.client.card import IDEMPOTENCY, LONG_POLL, RESUMABLE_STREAMS, AgentCard, Interface, parse_card
from quineling.client.credentials import Credentials
from quineling.client.discovery import CACHE, CardCache, is_url, load_card, resolve_source
from quineling.client.errors import CardError, ClientTimeout, ProtocolError, not_supported
from quineling.client.following import follow
from quineling.client.http import Channel, SSEItem, Timeouts, public_url
from quineling.client.latency import TRACKER
from quineling.client.messages import text_message
from quineling.client.models import (
    DelegateResult,
    Message,
    StreamEvent,
    Task,
    TaskPage,
    TaskState,
    parse_send_response,
)
from quineling.client.negotiation import candidates
from quineling.client.origins import named_origins
from quineling.client.retry import RetryPolicy
from quineling.client.shared import SharedState
from quineling.client.states import TaskStateMachine
from quineling.client.transports import (
    CallOptions,
    InterfaceMismatch,
    JsonRpcTransport,
    RestTransport,
    Transport,
    V03Transport,
)

JSONDict = dict[str, Any]
POLL_START = 0.5  # delegate's first poll interval; it grows ×1.5 to POLL_MAX
POLL_MAX = 5.0
LONG_POLL_MAX = 30.0  # the longest a long-poll GetTask is held by the agent (Quineling's bound)
TRACKED_TASKS = 1024  # tasks whose last state this client remembers, to validate what it sees next


def agent_key(card: AgentCard) -> str:
    """What breakers, latency and the registry know an agent by: its card's URL (else its first endpoint)."""
    return public_url(card.source) if is_url(card.source) else card.interfaces[0].url


def _transport(channel: Channel, interface: Interface) -> Transport:
    if interface.legacy:
        return V03Transport(channel, interface)
    if interface.protocol_binding.upper() == "HTTP+JSON":
        return RestTransport(channel, interface)
    return JsonRpcTransport(channel, interface)


def _message(message: JSONDict | Message | str) -> JSONDict:
    """A message dict to send: text becomes a text message; a dict without ``messageId``/``role`` gets them."""
    if isinstance(message, str):
        return text_message(message)
    msg = dict(message.raw if isinstance(message, Message) else message)
    msg.setdefault("role", "ROLE_USER")
    if not msg.get("messageId"):
        msg["messageId"] = str(uuid.uuid4())
    return msg


class A2AClient:
    def __init__(
        self,
        card: AgentCard,
        *,
        transports: Sequence[str] | None = None,
        credentials: Credentials | None = None,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        insecure: bool = False,
        headers: dict[str, str] | None = None,
        tenant: str | None = None,
        allow_v03: bool = True,
        shared_state: SharedState | str | None = None,
        breaker: CircuitBreaker | None = None,
        channel: Channel | None = None,
        allowed_origins: Sequence[str] = (),
    ) -> None:
        """``allowed_origins``: origins besides the one named (the card's URL; for a card given as a file or
        object, the origins its interfaces name) that may receive the credentials (see
        :mod:`quineling.client.origins`); requests anywhere else go without them, with a
        :class:`CredentialsNotSent` warning."""
        self.card = card
        self.agent = agent_key(card)
        self.retry = retry if retry is not None else RetryPolicy()
        if breaker is None:
            state = SharedState.from_url(shared_state) if isinstance(shared_state, str) else shared_state
            breaker = CircuitBreaker(state, BreakerSettings())
        self.channel = channel or Channel(self.agent, timeouts=timeouts, retry=self.retry, breaker=breaker,
                                          credentials=credentials, headers=headers, insecure=insecure)  # fmt: skip
        self.channel.agent = self.agent
        self.channel.breaker = breaker
        self.channel.retry = self.retry
        if credentials is not None:
            self.channel.credentials = credentials
        auth_headers, auth_query, cookies = self.channel.credentials.apply(card)
        if cookies:
            auth_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        self.channel.auth_headers, self.channel.auth_query = auth_headers, auth_query
        self.channel.credential_origins = named_origins(card.source, (i.url for i in card.interfaces),
                                                        allowed_origins)  # fmt: skip
        found = candidates(card, transports, allow_v03=allow_v03)
        if tenant is not None:
            found = [Interface(i.url, i.protocol_binding, i.protocol_version, tenant) for i in found]
        self._candidates = found
        self._index = 0
        self._confirmed = False
        self.transport = _transport(self.channel, found[0])
        self._states: OrderedDict[str, tuple[TaskState, float]] = OrderedDict()
        self._states_lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        source: str | Path,
        *,
        timeouts: Timeouts | None = None,
        retry: RetryPolicy | None = None,
        insecure: bool = False,
        headers: dict[str, str] | None = None,
        shared_state: SharedState | str | None = None,
        breaker: CircuitBreaker | None = None,
        cache: CardCache = CACHE,
        **options: Any,
    ) -> A2AClient:
        """Discover the agent at ``source`` (origin, card URL or card file), then connect to it. ``breaker``:
        one of your own (e.g. with other :class:`BreakerSettings`); else one on ``shared_state``."""
        if breaker is None:
            state = SharedState.from_url(shared_state) if isinstance(shared_state, str) else shared_state
            breaker = CircuitBreaker(state, BreakerSettings())
        policy = retry if retry is not None else RetryPolicy()
        source = resolve_source(source)
        channel = Channel(public_url(str(source)), timeouts=timeouts, retry=policy, breaker=breaker,
                          headers=headers, insecure=insecure)  # fmt: skip
        try:
            card = load_card(source, channel=channel, cache=cache)
            return cls(card, retry=policy, breaker=breaker, channel=channel, **options)
        except BaseException:
            channel.close()
            raise

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> A2AClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        i = self.interface
        return f"A2AClient({self.card.name!r}, {i.protocol_binding} {i.protocol_version} at {i.url})"

    @property
    def interface(self) -> Interface:
        return self.transport.interface

    # --- plumbing: a call on the chosen interface, moving on when the card lied about it -------------------

    def _next_interface(self, error: InterfaceMismatch) -> None:
        if self._confirmed or self._index + 1 >= len(self._candidates):
            raise error
        self._index += 1
        self.transport = _transport(self.channel, self._candidates[self._index])

    def _call(self, op: str, params: JSONDict, **options: Unpack[CallOptions]) -> Any:
        while True:
            try:
                result = self.transport.call(op, params, **options)
            except InterfaceMismatch as error:
                self._next_interface(error)
                continue
            self._confirmed = True
            return result

    def _open(
        self, idempotency_key: str | None
    ) -> Any:  # the Opener following.follow calls, with the interface fallback
        def open_stream(
            op: str, params: JSONDict, last_id: str | None, read_timeout: float | None
        ) -> Iterator[SSEItem]:
            while True:
                try:
                    stream = self.transport.stream(op, params, last_event_id=last_id, read_timeout=read_timeout,
                                                   idempotency_key=idempotency_key if op != "SubscribeToTask" else None)  # fmt: skip
                    first = next(stream, None)
                except InterfaceMismatch as error:
                    self._next_interface(error)
                    continue
                self._confirmed = True
                if first is not None:
                    yield first
                    yield from stream
                return

        return open_stream

    def observe(self, task_id: str, state: TaskState, sent_at: float | None = None) -> None:
        """Check ``state``, from an answer to a request sent at ``sent_at`` (``time.monotonic()``), against the
        last state this client saw for the task *before* that request went out — an answer that arrived earlier
        is older, so the new one must follow from it; an illegal transition raises :class:`ProtocolError` naming
        both states. ``sent_at=None`` only records (a stream's events, validated by the stream's own machine)."""
        if not task_id or state is TaskState.UNSPECIFIED:
            return
        with self._states_lock:
            if sent_at is not None:
                TaskStateMachine(task_id, self._known(task_id, sent_at)).advance(state)
            self._states[task_id] = (state, time.monotonic())
            self._states.move_to_end(task_id)
            while len(self._states) > TRACKED_TASKS:
                self._states.popitem(last=False)

    def _known(self, task_id: str, before: float) -> TaskState | None:
        entry = self._states.get(task_id)
        return entry[0] if entry is not None and entry[1] <= before else None

    def known_state(self, task_id: str) -> TaskState | None:
        """The last state this client saw for the task (None: never seen, or forgotten)."""
        with self._states_lock:
            return self._known(task_id, time.monotonic())

    def _task(self, raw: Any, sent_at: float) -> Task:
        task = Task.parse(raw)
        self.observe(task.id, task.state, sent_at)
        return task

    # --- operations ----------------------------------------------------------------------------------------

    def send_key(self, idempotency_key: str | None) -> str | None:
        """The key for one logical send: the caller's, else — when the card declares Quineling's idempotency
        extension — a fresh UUID, so the send is safe to retry (every retry of it reuses the key); else none,
        and the send is never repeated once it may have reached the agent."""
        if idempotency_key is None and self.card.declares(IDEMPOTENCY):
            return str(uuid.uuid4())
        return idempotency_key

    @staticmethod
    def _send_params(
        message: JSONDict | Message | str,
        *,
        return_immediately: bool = False,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        metadata: JSONDict | None = None,
    ) -> JSONDict:
        msg = _message(message)
        config: JSONDict = {}
        if return_immediately:
            config["returnImmediately"] = True
        if history_length is not None:
            config["historyLength"] = history_length
        if accepted_output_modes:
            config["acceptedOutputModes"] = list(accepted_output_modes)
        params: JSONDict = {"message": msg}
        if config:
            params["configuration"] = config
        if metadata:
            params["metadata"] = metadata
        return params

    def send(
        self,
        message: JSONDict | Message | str,
        *,
        return_immediately: bool = False,
        history_length: int | None = None,
        idempotency_key: str | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        metadata: JSONDict | None = None,
    ) -> Task | Message:
        params = self._send_params(message, return_immediately=return_immediately, history_length=history_length,
                                   accepted_output_modes=accepted_output_modes, metadata=metadata)  # fmt: skip
        sent_at = time.monotonic()
        key = self.send_key(idempotency_key)
        result = parse_send_response(self._call("SendMessage", params, idempotency_key=key))
        if isinstance(result, Task):
            self.observe(result.id, result.state, sent_at)
        return result

    def stream(
        self,
        message: JSONDict | Message | str,
        *,
        idempotency_key: str | None = None,
        resume: bool = True,
        metadata: JSONDict | None = None,
        deadline: float | None = None,
    ) -> Iterator[StreamEvent]:
        """The events of a streamed send. If the stream breaks once the task is known, it is resumed with
        SubscribeToTask (``resume=False``: raise instead). ``deadline``: a ``time.monotonic()`` value."""
        if not self.card.streaming:
            raise not_supported("SendStreamingMessage", "streaming", -32004)
        params = self._send_params(message, metadata=metadata)
        return follow(self._open(self.send_key(idempotency_key)), "SendStreamingMessage", params, retry=self.retry,
                      resume=resume, get_task=self.get_task, deadline=deadline, observe=self.observe,
                      resumable=self.card.declares(RESUMABLE_STREAMS))  # fmt: skip

    def subscribe(
        self, task_id: str, *, resume: bool = True, deadline: float | None = None
    ) -> Iterator[StreamEvent]:
        """The task's events from its current snapshot to its end, resuming a cut stream (see
        :mod:`quineling.client.following`)."""
        if not self.card.streaming:
            raise not_supported("SubscribeToTask", "streaming", -32004)
        return follow(self._open(None), "SubscribeToTask", {"id": task_id}, retry=self.retry, resume=resume,
                      task_id=task_id, get_task=self.get_task, deadline=deadline, observe=self.observe,
                      initial=self.known_state(task_id), resumable=self.card.declares(RESUMABLE_STREAMS))  # fmt: skip

    @property
    def long_polls(self) -> bool:
        """Whether GetTask can wait for a change here: the card declares Quineling's long-poll extension and
        the interface in use is a 1.0 one (v0.3 ``tasks/get`` has no ``currentGeneration``)."""
        return self.card.declares(LONG_POLL) and not self.interface.legacy

    def get_task(
        self,
        task_id: str,
        *,
        history_length: int | None = None,
        current_generation: int | None = None,
        wait: float | None = None,
    ) -> Task:
        """``current_generation`` (long-poll, see :attr:`long_polls`): the agent answers once the task's
        generation is above it, or after its bounded wait; ``wait`` caps that wait on this side (seconds)."""
        params: JSONDict = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        read_timeout = None
        if current_generation is not None:
            params["currentGeneration"] = current_generation
            read_timeout = (
                max(self.channel.timeouts.read, LONG_POLL_MAX + 5) if wait is None else max(0.1, wait)
            )
        sent_at = time.monotonic()
        try:
            return self._task(self._call("GetTask", params, read_timeout=read_timeout), sent_at)
        except ClientTimeout:
            if current_generation is None or wait is None:
                raise
            return self._task(self._call("GetTask", {k: v for k, v in params.items() if k != "currentGeneration"}),
                              time.monotonic())  # fmt: skip

    def list_page(
        self,
        *,
        context_id: str | None = None,
        status: TaskState | str | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        history_length: int | None = None,
        status_timestamp_after: str | None = None,
        include_artifacts: bool | None = None,
    ) -> TaskPage:
        params: JSONDict = {}
        for name, value in (("contextId", context_id), ("pageSize", page_size), ("pageToken", page_token),
                            ("historyLength", history_length), ("statusTimestampAfter", status_timestamp_after),
                            ("includeArtifacts", include_artifacts)):  # fmt: skip
            if value is not None and value != "":
                params[name] = value
        if status:
            params["status"] = TaskState.parse(status).value
        return TaskPage.parse(self._call("ListTasks", params))

    def list_tasks(self, **filters: Any) -> Iterator[Task]:
        """Every matching task, page after page until ``nextPageToken`` is empty (filters: as :meth:`list_page`)."""
        token: str | None = filters.pop("page_token", None)
        seen: set[str] = set()
        while True:
            page = self.list_page(page_token=token, **filters)
            yield from page.tasks
            token = page.next_page_token
            if not token:
                return
            if token in seen:
                raise ProtocolError(f"ListTasks: the agent returned page token {token!r} twice (a loop)")
            seen.add(token)

    def cancel(self, task_id: str, *, metadata: JSONDict | None = None) -> Task:
        params: JSONDict = {"id": task_id, **({"metadata": metadata} if metadata else {})}
        sent_at = time.monotonic()
        return self._task(self._call("CancelTask", params), sent_at)

    # --- push notification configs: refused locally when the card says the agent has none --------------

    def _push(self, op: str, params: JSONDict) -> Any:
        if not self.card.push_notifications:
            raise not_supported(op, "pushNotifications", -32003)
        return self._call(op, params)

    def set_push_config(self, task_id: str, url: str, *, config_id: str | None = None, token: str | None = None,
                        authentication: JSONDict | None = None) -> JSONDict:  # fmt: skip
        params: JSONDict = {"taskId": task_id, "url": url}
        for name, value in (("id", config_id), ("token", token), ("authentication", authentication)):
            if value:
                params[name] = value
        result: JSONDict = self._push("CreateTaskPushNotificationConfig", params)
        return result

    def get_push_config(self, task_id: str, config_id: str) -> JSONDict:
        result: JSONDict = self._push("GetTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})
        return result

    def list_push_configs(
        self, task_id: str, *, page_size: int | None = None, page_token: str | None = None
    ) -> list[JSONDict]:
        params: JSONDict = {"taskId": task_id, **({"pageSize": page_size} if page_size else {}),
                            **({"pageToken": page_token} if page_token else {})}  # fmt: skip
        result = self._push("ListTaskPushNotificationConfigs", params)
        configs = result.get("configs") if isinstance(result, dict) else None
        return list(configs) if isinstance(configs, list) else []

    def delete_push_config(self, task_id: str, config_id: str) -> None:
        self._push("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": config_id})

    def get_extended_card(self) -> AgentCard:
        """The authenticated extended card (replaces :attr:`card` for this client)."""
        if not self.card.extended_card:
            raise not_supported("GetExtendedAgentCard", "extendedAgentCard", -32004)
        card = parse_card(self._call("GetExtendedAgentCard", {}), source=self.card.source)
        if not card.interfaces:
            raise CardError("the extended card has no interfaces")
        self.card = card
        return card

    # --- delegate ------------------------------------------------------------------------------------------

    def delegate(self, message: JSONDict | Message | str, *, timeout: float = 60) -> DelegateResult:
        """Send, then follow the task until it is terminal or interrupted (streaming where the card allows,
        else polling from 500 ms, backing off ×1.5 to 5 s), at most ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        if self.card.streaming:
            return self._delegate_streaming(message, deadline)
        return self._delegate_polling(message, deadline)

    def _delegate_streaming(self, message: JSONDict | Message | str, deadline: float) -> DelegateResult:
        task_id = ""
        state: TaskState | None = None
        try:
            for event in self.stream(message, deadline=deadline):
                if isinstance(event, Message) and not task_id:
                    return DelegateResult.of("completed", None, event)
                if isinstance(event, Task):
                    task_id, state = event.id, event.state
                elif hasattr(event, "state"):
                    task_id, state = task_id or event.task_id, event.state
                elif not task_id:
                    task_id = event.task_id
        except ClientTimeout:
            return DelegateResult.of("timeout", self._snapshot(task_id))
        task = self.get_task(task_id) if task_id else None  # validated against the stream's last state
        outcome = task.state.short if task is not None else (state.short if state else "completed")
        return DelegateResult.of(outcome, task)

    def _snapshot(self, task_id: str) -> Task | None:
        if not task_id:
            return None
        try:
            return self.get_task(task_id)
        except Exception:  # noqa: BLE001 - best effort: the outcome is already "timeout"
            return None

    def _delegate_polling(self, message: JSONDict | Message | str, deadline: float) -> DelegateResult:
        first = self.send(message, return_immediately=True)
        if isinstance(first, Message):
            return DelegateResult.of("completed", None, first)
        task = first
        for snapshot in self.poll(first, deadline):
            task = snapshot
        if not (task.state.terminal or task.state.interrupted):
            return DelegateResult.of("timeout", task)
        return DelegateResult.of(task.state.short, task)

    def poll(self, task: Task, deadline: float, interval: float = POLL_START) -> Iterator[Task]:
        """The task's snapshots until it is terminal or interrupted, or ``deadline`` (``time.monotonic()``)
        passes. With long-poll (:attr:`long_polls`, and the task carries a generation) each GetTask waits for
        the next change, so a change is seen at once and an idle task costs one request per ~30 s; otherwise
        fixed polling from ``interval``, backing off ×1.5 to 5 s. Each snapshot is validated by observe()."""
        while not (task.state.terminal or task.state.interrupted):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            generation = task.generation if self.long_polls else None
            if generation is not None:
                task = self.get_task(task.id, current_generation=generation, wait=remaining)
            else:
                time.sleep(min(interval, remaining))
                interval = min(POLL_MAX, interval * 1.5)
                task = self.get_task(task.id)
            yield task

    def latency(self) -> dict[str, Any]:
        """``count``, ``mean``, ``p50``, ``p95`` (milliseconds) over the last 20 calls to this agent."""
        return TRACKER.summary(self.agent)

    def breaker_status(self) -> dict[str, Any]:
        return self.channel.breaker.status(self.agent)
