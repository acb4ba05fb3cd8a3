"""The client against misbehaving agents (tests/client/fault_server.py): retries and backoff, timeouts, the
circuit breaker, 429 with Retry-After, cut streams, a lying card, illegal state transitions, card caching, and
secrets kept out of errors and logs."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import pytest

from quineling.client import (
    A2AClient,
    AgentError,
    AgentUnreachable,
    AuthenticationFailed,
    BreakerSettings,
    CardCache,
    CardError,
    CircuitBreaker,
    ClientTimeout,
    Credentials,
    ProtocolError,
    RetryPolicy,
    SharedState,
    Timeouts,
    load_card,
)
from tests.client.fault_server import (
    Reply,
    Request,
    agent_server,
    card_for,
    fault_server,
    rpc_result,
    sse,
    task,
)
from tests.support.ports import free_port


@pytest.fixture
def make(state: SharedState) -> Any:
    opened = ExitStack()

    def start(
        rpc: Callable[[Request], Reply], *, client: dict[str, Any] | None = None, **card: Any
    ) -> tuple[Any, A2AClient]:
        live = opened.enter_context(agent_server(rpc, **card))
        options = {"shared_state": state, "cache": CardCache(), **(client or {})}
        made = A2AClient.connect(live.base, **options)
        clients.append(made)
        return live, made

    clients: list[A2AClient] = []
    yield start
    for made in clients:
        made.close()
    opened.close()


def rpc_ops(request: Request) -> str:
    return str(request.body["method"]) if isinstance(request.body, dict) else ""


# --- retries ---------------------------------------------------------------------------------------------


def test_a_safe_request_is_retried_with_exponential_backoff_and_jitter(
    make: Any, fast_retry: Any, delays: list[float]
) -> None:
    answers = iter([Reply(503), Reply(503)])

    def rpc(request: Request) -> Reply:
        return next(answers, None) or rpc_result(request, task("t1", "TASK_STATE_COMPLETED"))

    live, client = make(rpc, client={"retry": fast_retry(retries=2, base=0.1)})
    assert client.get_task("t1").state.terminal
    assert live.count(lambda r: rpc_ops(r) == "GetTask") == 3
    # base·2^n + U(0, 0.25·base·2^n) with U at its maximum: 0.1·1.25, then 0.2·1.25
    assert delays == pytest.approx([0.125, 0.25])


def test_backoff_jitter_stays_within_a_quarter_of_the_step() -> None:
    for rng, expected in ((0.0, [0.5, 1.0, 2.0]), (0.5, [0.5625, 1.125, 2.25]), (1.0, [0.625, 1.25, 2.5])):
        policy = RetryPolicy(retries=3, base=0.5, rng=lambda r=rng: r)
        assert [policy.backoff(n) for n in range(3)] == pytest.approx(expected)
    assert RetryPolicy(retries=2).delay(2, None) is None  # no third retry


def test_retries_really_wait(make: Any) -> None:
    answers = iter([Reply(502)])

    def rpc(request: Request) -> Reply:
        return next(answers, None) or rpc_result(request, task("t1", "TASK_STATE_WORKING"))

    _live, client = make(rpc, client={"retry": RetryPolicy(retries=1, base=0.2)})
    started = time.monotonic()
    client.get_task("t1")
    assert time.monotonic() - started >= 0.2


def test_after_the_last_retry_the_agent_is_unreachable(make: Any, fast_retry: Any) -> None:
    live, client = make(
        lambda _r: Reply(503, {"error": {"code": 503, "message": "busy"}}), client={"retry": fast_retry()}
    )
    with pytest.raises(AgentUnreachable) as caught:
        client.get_task("t1")
    assert caught.value.exit_code == 3 and "503" in caught.value.message
    assert live.count(lambda r: rpc_ops(r) == "GetTask") == 3


def test_a_send_is_never_repeated_without_an_idempotency_key(make: Any, fast_retry: Any) -> None:
    live, client = make(lambda _r: Reply(503), client={"retry": fast_retry()})
    with pytest.raises(AgentUnreachable):
        client.send("hello")
    assert live.count(lambda r: rpc_ops(r) == "SendMessage") == 1


def test_a_send_with_an_idempotency_key_is_repeated_with_the_key(make: Any, fast_retry: Any) -> None:
    answers = iter([Reply(503)])

    def rpc(request: Request) -> Reply:
        return next(answers, None) or rpc_result(request, {"task": task("t1", "TASK_STATE_COMPLETED")})

    live, client = make(rpc, client={"retry": fast_retry()})
    client.send("hello", idempotency_key="key-1")
    sends = [r for r in live.requests if rpc_ops(r) == "SendMessage"]
    assert len(sends) == 2
    assert [r.header("Idempotency-Key") for r in sends] == ["key-1", "key-1"]
    assert sends[0].body["params"]["message"]["messageId"] == sends[1].body["params"]["message"]["messageId"]


def test_a_refused_connection_is_retried_even_for_a_send(
    tmp_path: Any, fast_retry: Any, delays: list[float], state: SharedState
) -> None:
    card = tmp_path / "card.json"
    port = free_port()  # nothing listens there, and no other test of the session is given it
    card.write_text(json.dumps(card_for(f"http://127.0.0.1:{port}")))
    with (
        A2AClient.connect(
            card, retry=fast_retry(), shared_state=state, timeouts=Timeouts(connect=1)
        ) as client,
        pytest.raises(AgentUnreachable) as caught,
    ):
        client.send("hello")
    assert len(delays) == 2  # nothing was sent, so repeating is safe
    assert caught.value.exit_code == 3


def test_429_waits_for_retry_after(make: Any, fast_retry: Any, delays: list[float]) -> None:
    answers = iter([Reply(429, headers={"Retry-After": "1"})])

    def rpc(request: Request) -> Reply:
        return next(answers, None) or rpc_result(request, task("t1", "TASK_STATE_COMPLETED"))

    _live, client = make(rpc, client={"retry": fast_retry(base=0.01)})
    client.get_task("t1")
    assert delays == [1.0]  # Retry-After wins over the 12.5 ms backoff


def test_a_retry_after_beyond_the_cap_is_not_waited_for(
    make: Any, fast_retry: Any, delays: list[float]
) -> None:
    live, client = make(lambda _r: Reply(429, headers={"Retry-After": "120"}), client={"retry": fast_retry()})
    with pytest.raises(AgentError) as caught:
        client.get_task("t1")
    assert delays == [] and live.count(lambda r: rpc_ops(r) == "GetTask") == 1
    assert caught.value.reason == "HTTP 429" and "120" in (caught.value.hint or "")


# --- timeouts and the breaker --------------------------------------------------------------------------


def hanging(request: Request) -> Reply:
    return Reply(hang=True)


def test_an_agent_that_never_answers_times_out(make: Any) -> None:
    _live, client = make(
        hanging, client={"retry": RetryPolicy.none(), "timeouts": Timeouts(connect=1, read=0.3)}
    )
    started = time.monotonic()
    with pytest.raises(ClientTimeout) as caught:
        client.get_task("t1")
    assert time.monotonic() - started < 2
    assert caught.value.exit_code == 5 and "read timeout" in caught.value.message


def test_the_breaker_opens_after_five_failures_then_lets_one_trial_through(
    make: Any, state: SharedState
) -> None:
    mode = {"hang": True}

    def rpc(request: Request) -> Reply:
        return Reply(hang=True) if mode["hang"] else rpc_result(request, task("t1", "TASK_STATE_COMPLETED"))

    breaker = CircuitBreaker(state, BreakerSettings(window=0.5))
    live, client = make(
        rpc, client={"retry": RetryPolicy.none(), "timeouts": Timeouts(read=0.2), "breaker": breaker}
    )
    for _ in range(5):
        with pytest.raises(ClientTimeout):
            client.get_task("t1")
    assert client.breaker_status()["state"] == "open"
    with pytest.raises(AgentUnreachable, match="circuit breaker"):
        client.get_task("t1")
    assert live.count(lambda r: rpc_ops(r) == "GetTask") == 5  # refused without a request
    time.sleep(0.6)
    assert client.breaker_status()["state"] == "half-open"
    with pytest.raises(ClientTimeout):  # the trial fails: open for another window
        client.get_task("t1")
    assert client.breaker_status()["state"] == "open"
    with pytest.raises(AgentUnreachable):
        client.get_task("t1")
    time.sleep(0.6)
    mode["hang"] = False
    assert client.get_task("t1").id == "t1"  # the trial succeeds: closed
    assert client.breaker_status() == {"state": "closed", "failures": 0, "open_until": None}
    assert live.count(lambda r: rpc_ops(r) == "GetTask") == 7


def test_a_half_open_breaker_admits_one_trial_at_a_time(state: SharedState) -> None:
    now = [1000.0]
    breaker = CircuitBreaker(state, BreakerSettings(threshold=5, window=60), clock=lambda: now[0])
    for _ in range(5):
        breaker.failure("a")
    with pytest.raises(AgentUnreachable):
        breaker.before("a")
    now[0] += 61
    breaker.before("a")  # this caller holds the trial
    with pytest.raises(AgentUnreachable, match="trial"):
        breaker.before("a")
    breaker.success("a")
    breaker.before("a")
    breaker.before("a")
    assert breaker.status("a")["state"] == "closed"


def test_four_failures_and_a_success_leave_the_breaker_closed(state: SharedState) -> None:
    breaker = CircuitBreaker(state)
    for _ in range(4):
        breaker.failure("a")
    breaker.success("a")
    for _ in range(4):
        breaker.failure("a")
    breaker.before("a")
    assert breaker.status("a") == {"state": "closed", "failures": 4, "open_until": None}


# --- streams ---------------------------------------------------------------------------------------------


def streaming_agent(
    first: Reply, resubscribe: Callable[[Request], Reply], get: str
) -> Callable[[Request], Reply]:
    def rpc(request: Request) -> Reply:
        method = rpc_ops(request)
        if method == "SendStreamingMessage":
            return first
        if method == "SubscribeToTask":
            return resubscribe(request)
        return rpc_result(request, task("t1", get))

    return rpc


def rpc_event(result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "result": result}


SUBMITTED = rpc_event({"task": task("t1", "TASK_STATE_SUBMITTED")})
WORKING = rpc_event(
    {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}
)
ARTIFACT = rpc_event({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
                                         "artifact": {"artifactId": "a1", "parts": [{"text": "out"}]}}})  # fmt: skip
DONE = rpc_event(
    {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}
)


def kinds(events: list[Any]) -> list[str]:
    out = []
    for e in events:
        state = getattr(e, "state", None)
        out.append(f"{type(e).__name__}:{state.short}" if state is not None else type(e).__name__)
    return out


def test_a_cut_stream_resumes_from_the_last_event_id_without_duplicates(make: Any, fast_retry: Any) -> None:
    first = Reply(events=[sse(SUBMITTED, "1"), sse(WORKING, "2")], cut=True)
    replay = Reply(events=[sse(WORKING, "2"), sse(ARTIFACT, "3"), sse(DONE, "4")])  # the server replays id 2
    live, client = make(
        streaming_agent(first, lambda _r: replay, "TASK_STATE_WORKING"), client={"retry": fast_retry()}
    )
    events = list(client.stream("go"))
    assert kinds(events) == [
        "Task:submitted",
        "StatusUpdate:working",
        "ArtifactUpdate",
        "StatusUpdate:completed",
    ]
    (sub,) = [r for r in live.requests if rpc_ops(r) == "SubscribeToTask"]
    assert sub.header("Last-Event-ID") == "2" and sub.body["params"] == {"id": "t1"}


def test_without_event_ids_a_cut_stream_is_subscribed_afresh_and_the_same_snapshot_skipped(
    make: Any, fast_retry: Any
) -> None:
    first = Reply(events=[sse(SUBMITTED)], cut=True)
    again = Reply(events=[sse(SUBMITTED), sse(WORKING), sse(DONE)])
    live, client = make(
        streaming_agent(first, lambda _r: again, "TASK_STATE_SUBMITTED"), client={"retry": fast_retry()}
    )
    events = list(client.stream("go"))
    assert kinds(events) == ["Task:submitted", "StatusUpdate:working", "StatusUpdate:completed"]
    (sub,) = [r for r in live.requests if rpc_ops(r) == "SubscribeToTask"]
    assert sub.header("Last-Event-ID") is None


def test_a_task_that_ended_while_the_stream_was_down_is_read_not_subscribed(
    make: Any, fast_retry: Any
) -> None:
    first = Reply(events=[sse(SUBMITTED, "1"), sse(WORKING, "2")], cut=True)
    live, client = make(
        streaming_agent(first, lambda _r: Reply(500), "TASK_STATE_COMPLETED"), client={"retry": fast_retry()}
    )
    events = list(client.stream("go"))
    assert kinds(events) == ["Task:submitted", "StatusUpdate:working", "Task:completed"]
    assert live.count(lambda r: rpc_ops(r) == "SubscribeToTask") == 0


def test_a_stream_that_keeps_breaking_gives_up_after_the_retries(make: Any, fast_retry: Any) -> None:
    cut = Reply(events=[sse(SUBMITTED, "1")], cut=True)
    live, client = make(streaming_agent(cut, lambda _r: Reply(events=[], cut=True), "TASK_STATE_WORKING"),
                        client={"retry": fast_retry()})  # fmt: skip
    with pytest.raises(AgentUnreachable, match="resume"):
        list(client.stream("go"))
    assert live.count(lambda r: rpc_ops(r) == "SubscribeToTask") == 2


def test_resume_false_raises_on_a_cut(make: Any, fast_retry: Any) -> None:
    cut = Reply(events=[sse(SUBMITTED, "1")], cut=True)
    _live, client = make(
        streaming_agent(cut, lambda _r: Reply(500), "TASK_STATE_WORKING"), client={"retry": fast_retry()}
    )
    with pytest.raises(AgentUnreachable, match="not resumed"):
        list(client.stream("go", resume=False))


# --- a lying card, illegal transitions -----------------------------------------------------------------


def test_a_card_that_lies_about_an_interface_falls_back_to_the_next(make: Any) -> None:
    def rpc(request: Request) -> Reply:
        if request.path.startswith("/rest/tasks/"):
            return Reply(body=task("t1", "TASK_STATE_COMPLETED"))
        return Reply(404, "<html>not here</html>")

    def interfaces(base: str) -> list[dict[str, str]]:
        return [{"url": f"{base}/nothing", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": f"{base}/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]  # fmt: skip

    with agent_server(rpc, interfaces=interfaces) as live:
        with A2AClient.connect(
            live.base, cache=CardCache(), shared_state=SharedState.from_url("memory://")
        ) as client:
            assert client.interface.protocol_binding == "JSONRPC"
            assert client.get_task("t1").id == "t1"
            assert client.interface.url == f"{live.base}/rest"


def test_a_card_whose_only_interface_lies_is_a_protocol_error(make: Any) -> None:
    live, client = make(lambda _r: Reply(200, "<html>a web page</html>"))
    with pytest.raises(ProtocolError) as caught:
        client.get_task("t1")
    assert f"{live.base}/rpc" in caught.value.message and "JSONRPC 1.0" in caught.value.message


def test_a_state_going_back_on_a_stream_is_a_protocol_error(make: Any) -> None:
    back = rpc_event(
        {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"}}}
    )
    first = Reply(events=[sse(rpc_event({"task": task("t1", "TASK_STATE_WORKING")})), sse(back)])
    _live, client = make(streaming_agent(first, lambda _r: Reply(500), "TASK_STATE_WORKING"))
    with pytest.raises(ProtocolError, match="task t1: TASK_STATE_WORKING -> TASK_STATE_SUBMITTED"):
        list(client.stream("go"))


def test_a_stream_that_leaves_a_terminal_state_is_a_protocol_error(make: Any) -> None:
    again = Reply(events=[sse(rpc_event({"task": task("t1", "TASK_STATE_WORKING")}))])
    _live, client = make(streaming_agent(Reply(500), lambda _r: again, "TASK_STATE_COMPLETED"))
    assert client.get_task("t1").state.terminal
    with pytest.raises(ProtocolError, match="TASK_STATE_COMPLETED -> TASK_STATE_WORKING"):
        list(client.subscribe("t1"))


def test_polls_that_leave_a_terminal_state_are_a_protocol_error(make: Any) -> None:
    polls = iter(["TASK_STATE_FAILED", "TASK_STATE_WORKING"])
    _live, client = make(lambda r: rpc_result(r, task("t1", next(polls))))
    client.get_task("t1")
    with pytest.raises(ProtocolError, match="TASK_STATE_FAILED -> TASK_STATE_WORKING"):
        client.get_task("t1")


def test_an_illegal_transition_between_polls_is_a_protocol_error(make: Any) -> None:
    polls = iter(["TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"])

    def rpc(request: Request) -> Reply:
        if rpc_ops(request) == "SendMessage":
            return rpc_result(request, {"task": task("t1", "TASK_STATE_WORKING")})
        return rpc_result(request, task("t1", next(polls)))

    _live, client = make(rpc, streaming=False)
    with pytest.raises(ProtocolError, match="TASK_STATE_WORKING -> TASK_STATE_SUBMITTED"):
        client.delegate("go", timeout=10)


# --- card caching, secrets -----------------------------------------------------------------------------


def test_the_card_is_cached_for_max_age_then_revalidated_by_etag() -> None:
    card_requests: list[Request] = []

    def handle(request: Request) -> Reply:
        card_requests.append(request)
        if request.header("If-None-Match") == '"v1"':
            return Reply(304, headers={"ETag": '"v1"', "Cache-Control": "max-age=60"})
        return Reply(body=card_for("http://x"), headers={"ETag": '"v1"', "Cache-Control": "max-age=60"})

    now = [0.0]
    cache = CardCache(clock=lambda: now[0])
    with fault_server(handle) as live:
        first = load_card(live.base, cache=cache)
        assert load_card(live.base, cache=cache) is first and len(card_requests) == 1
        now[0] = 61
        assert load_card(live.base, cache=cache) is first
        assert len(card_requests) == 2 and card_requests[1].header("If-None-Match") == '"v1"'
        assert card_requests[0].header("A2A-Version") == "1.0"


SECRET = "s3cr3t-token-value"


def test_secrets_stay_out_of_reprs_errors_and_logs(make: Any, caplog: pytest.LogCaptureFixture) -> None:
    def rpc(request: Request) -> Reply:
        echoed = request.header("Authorization")
        return Reply(401, {"error": {"code": 401, "message": f"bad credentials: {echoed}"}},
                     headers={"WWW-Authenticate": "Bearer"})  # fmt: skip

    credentials = Credentials(bearer=SECRET, api_key=SECRET + "-key")
    caplog.set_level(logging.DEBUG)
    live, client = make(rpc, client={"credentials": credentials})
    with pytest.raises(AuthenticationFailed) as caught:
        client.get_task("t1")
    error = caught.value
    assert error.exit_code == 4 and "401" in error.message and "***" in error.message
    assert live.requests[-1].header("Authorization") == f"Bearer {SECRET}"
    for text in (str(error), repr(error), error.hint or "", repr(credentials), str(credentials), repr(client),
                 caplog.text):  # fmt: skip
        assert SECRET not in text


def test_an_api_key_in_the_query_stays_out_of_errors_and_logs(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    schemes = {"key": {"apiKeySecurityScheme": {"location": "query", "name": "api_key"}}}
    caplog.set_level(logging.DEBUG)
    live, client = make(lambda _r: Reply(hang=True), securitySchemes=schemes,
                        client={"credentials": Credentials(api_key=SECRET), "retry": RetryPolicy.none(),
                                "timeouts": Timeouts(read=0.2)})  # fmt: skip
    with pytest.raises(ClientTimeout) as caught:
        client.get_task("t1")
    assert f"api_key={SECRET}" in live.requests[-1].path  # it was sent where the card said
    assert SECRET not in str(caught.value) and SECRET not in caplog.text


def test_an_api_key_goes_where_the_card_declares(make: Any) -> None:
    schemes = {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Agent-Key"}}}
    live, client = make(lambda r: rpc_result(r, task("t1", "TASK_STATE_COMPLETED")), securitySchemes=schemes,
                        client={"credentials": Credentials(api_key="k1")})  # fmt: skip
    client.get_task("t1")
    assert (
        live.requests[-1].header("X-Agent-Key") == "k1" and live.requests[-1].header("Authorization") is None
    )


def test_every_request_carries_the_version_and_the_tenant(make: Any) -> None:
    def interfaces(base: str) -> list[dict[str, str]]:
        return [
            {"url": f"{base}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "acme"}
        ]

    with agent_server(
        lambda r: rpc_result(r, task("t1", "TASK_STATE_COMPLETED")), interfaces=interfaces
    ) as live:
        with A2AClient.connect(
            live.base, cache=CardCache(), shared_state=SharedState.from_url("memory://")
        ) as client:
            client.get_task("t1")
            client.cancel("t1")
    assert all(r.header("A2A-Version") == "1.0" for r in live.requests)
    assert [r.body["params"]["tenant"] for r in live.requests[1:]] == ["acme", "acme"]


def test_push_config_calls_are_refused_locally_when_the_card_says_so(make: Any) -> None:
    live, client = make(lambda r: rpc_result(r, {}))
    for call in (lambda: client.set_push_config("t1", "https://hook"), lambda: client.get_push_config("t1", "c"),
                 lambda: client.list_push_configs("t1"), lambda: client.delete_push_config("t1", "c")):  # fmt: skip
        with pytest.raises(AgentError) as caught:
            call()
        assert caught.value.reason == "PUSH_NOTIFICATION_NOT_SUPPORTED" and caught.value.a2a_code == -32003
    assert len(live.requests) == 1  # the card only


def test_push_config_calls_go_out_when_the_card_offers_them(make: Any) -> None:
    def rpc(request: Request) -> Reply:
        return rpc_result(request, {"taskId": "t1", "id": "c1", "url": "https://hook"})

    live, client = make(rpc, push=True)
    assert client.set_push_config("t1", "https://hook", config_id="c1")["id"] == "c1"
    assert rpc_ops(live.requests[-1]) == "CreateTaskPushNotificationConfig"
    assert live.requests[-1].body["params"] == {"taskId": "t1", "url": "https://hook", "id": "c1"}


def test_delegate_polls_until_its_deadline(make: Any) -> None:
    def rpc(request: Request) -> Reply:
        if rpc_ops(request) == "SendMessage":
            assert request.body["params"]["configuration"] == {"returnImmediately": True}
            return rpc_result(request, {"task": task("t1", "TASK_STATE_SUBMITTED")})
        return rpc_result(request, task("t1", "TASK_STATE_WORKING"))

    live, client = make(rpc, streaming=False)
    started = time.monotonic()
    result = client.delegate("go", timeout=1.2)
    assert result.outcome == "timeout" and result.task is not None and result.task.state.short == "working"
    assert 1.2 <= time.monotonic() - started < 2.5
    assert live.count(lambda r: rpc_ops(r) == "GetTask") >= 1  # polled at 0.5 s, then 0.75 s later


def test_delegate_on_a_silent_stream_ends_at_its_deadline(make: Any) -> None:
    def rpc(request: Request) -> Reply:
        if rpc_ops(request) == "SendStreamingMessage":
            return Reply(hang=True)
        return rpc_result(request, task("t1", "TASK_STATE_WORKING"))

    _live, client = make(rpc, client={"retry": RetryPolicy.none()})
    started = time.monotonic()
    result = client.delegate("go", timeout=0.5)
    assert result.outcome == "timeout" and time.monotonic() - started < 2


def test_an_error_event_mid_stream_is_the_agents_error(make: Any) -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone", "data": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}}  # fmt: skip
    first = Reply(events=[sse(SUBMITTED), sse(error, event="error")])
    _live, client = make(streaming_agent(first, lambda _r: Reply(500), "TASK_STATE_WORKING"))
    with pytest.raises(AgentError) as caught:
        list(client.stream("go"))
    assert (caught.value.reason, caught.value.a2a_code) == ("TASK_NOT_FOUND", -32001)


def test_a_rest_error_event_mid_stream_is_the_agents_error() -> None:
    status = {"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "no", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNSUPPORTED_OPERATION"}]}}  # fmt: skip

    def rest(base: str) -> list[dict[str, str]]:
        return [{"url": f"{base}/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]

    def handle(request: Request) -> Reply:
        assert request.path == "/rest/message:stream" and request.header("Accept") == "text/event-stream"
        return Reply(events=[sse({"task": task("t1", "TASK_STATE_WORKING")}), sse(status, event="error")])

    with agent_server(handle, interfaces=rest) as live:
        with A2AClient.connect(
            live.base, cache=CardCache(), shared_state=SharedState.from_url("memory://")
        ) as client:
            with pytest.raises(AgentError) as caught:
                list(client.stream("go"))
    assert caught.value.reason == "UNSUPPORTED_OPERATION" and caught.value.a2a_code == -32004


def test_an_origin_without_a_card_names_both_places_looked() -> None:
    with fault_server(lambda _r: Reply(404, "<html>no</html>")) as live:
        with pytest.raises(CardError) as caught:
            load_card(live.base, cache=CardCache())
    assert (
        "/.well-known/agent-card.json" in caught.value.message
        and "/.well-known/agent.json" in caught.value.message
    )


def test_a_credential_http_cannot_carry_is_refused_by_name_not_by_a_unicode_error() -> None:
    """A pasted token with a non-ASCII character would fail deep in the HTTP stack as UnicodeEncodeError."""
    from quineling.client import InvalidCredentials

    for given in ({"bearer": "tök"}, {"api_key": "key\n"}):
        with pytest.raises(InvalidCredentials, match="printable ASCII") as caught:
            Credentials(**given)
        assert caught.value.exit_code == 2 and "tök" not in str(caught.value)
