"""The cross-site defences of the default (anonymous, loopback) agent: the Host check against DNS rebinding,
the Origin check, the rule that a state-changing request cannot be a "simple" cross-site one, and CORS for
configured origins (quineling/a2a/http/origin_guard.py; docs/decisions/0006-security-defaults.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quineling.a2a.http.origin_guard import OriginGuard
from quineling.settings import ConfigError, load_settings
from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1

REBINDING = {"Host": "attacker.example", **V1}
FORM = "application/x-www-form-urlencoded"


def client_for(**config: Any) -> Any:
    return make_app(config=config).test_client()


def waiting_task(client: Any) -> str:
    """A task left INPUT_REQUIRED (cancelable), by a well-behaved client."""
    body = {"message": user_message(text(""))}
    task = client.post("/a2a/rest/message:send", json=body, headers=V1).get_json()["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    task_id: str = task["id"]
    return task_id


def state_of(client: Any, task_id: str) -> str:
    state: str = client.get(f"/a2a/rest/tasks/{task_id}", headers=V1).get_json()["status"]["state"]
    return state


def rpc(method: str, params: Any, rpc_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


# --- 1. Host ------------------------------------------------------------------------------------------


def test_a_rebinding_page_gets_421_in_each_bindings_shape() -> None:
    client = client_for()
    waiting_task(client)
    assert client.get("/a2a/rest/tasks", headers=V1).status_code == 200

    rest = client.get("/a2a/rest/tasks", headers=REBINDING)
    assert rest.status_code == 421
    error = rest.get_json()["error"]
    assert error["code"] == 421 and error["details"][0]["reason"] == "INVALID_REQUEST"
    assert "attacker.example" in error["message"] and "QUINELING_ALLOWED_HOSTS" in error["message"]

    jsonrpc = client.post("/a2a/jsonrpc", json=rpc("ListTasks", {}), headers=REBINDING)
    assert jsonrpc.status_code == 421
    assert jsonrpc.get_json() == {"jsonrpc": "2.0", "id": None, "error": jsonrpc.get_json()["error"]}
    assert jsonrpc.get_json()["error"]["code"] == -32600 and "tasks" not in jsonrpc.get_data(as_text=True)

    for path in ("/.well-known/agent-card.json", "/a2a/rest/openapi.json", "/a2a/rest/docs", "/nowhere"):
        plain = client.get(path, headers=REBINDING)
        assert plain.status_code == 421, path
        assert plain.get_json()["error"]["code"] == 421, path


def test_a_rebinding_page_cannot_cancel() -> None:
    client = client_for()
    task_id = waiting_task(client)
    answer = client.post(f"/a2a/rest/tasks/{task_id}:cancel", headers=REBINDING)
    assert answer.status_code == 421
    cancel = rpc("CancelTask", {"id": task_id})
    assert client.post("/a2a/jsonrpc", json=cancel, headers=REBINDING).status_code == 421
    assert state_of(client, task_id) == "TASK_STATE_INPUT_REQUIRED"


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8049", "LocalHost:1234", "localhost.", "127.0.0.1", "127.0.0.1:8049",
     "[::1]", "[::1]:8049"],
)  # fmt: skip
def test_loopback_names_are_served_with_and_without_a_port(host: str) -> None:
    assert client_for().get("/a2a/rest/tasks", headers={"Host": host, **V1}).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["attacker.example", "attacker.example:8049", "localhost.attacker.example", "127.0.0.1.nip.io",
     "127.0.0.2", "0.0.0.0", "[::1", "[::2]:8049", "localhost:99999", "localhost:x", "user@localhost",
     "", " ", "local host"],
)  # fmt: skip
def test_any_other_host_is_refused(host: str) -> None:
    assert client_for().get("/a2a/rest/tasks", headers={"Host": host, **V1}).status_code == 421


def test_the_advertised_host_and_the_listener_are_served() -> None:
    behind_proxy = client_for(base_url="https://agent.example.com/", a2a_host="10.1.2.3")
    for host in ("agent.example.com", "AGENT.example.com:443", "10.1.2.3:8049", "localhost:8049"):
        assert behind_proxy.get("/a2a/rest/tasks", headers={"Host": host, **V1}).status_code == 200, host
    assert behind_proxy.get("/a2a/rest/tasks", headers={"Host": "example.com", **V1}).status_code == 421
    # A wildcard bind advertises itself when nothing else is set; that name cannot come from DNS.
    ipv6 = client_for(a2a_host="fd00::7")
    assert ipv6.get("/a2a/rest/tasks", headers={"Host": "[fd00::7]:8049", **V1}).status_code == 200
    wildcard = client_for(a2a_host="0.0.0.0")
    assert wildcard.get("/a2a/rest/tasks", headers={"Host": "0.0.0.0:8049", **V1}).status_code == 200
    assert wildcard.get("/a2a/rest/tasks", headers={"Host": "192.168.1.5:8049", **V1}).status_code == 421


def test_allowed_hosts_add_names_domains_or_any() -> None:
    client = client_for(allowed_hosts="agent.lan, .corp.example, [fd00::5], 192.168.1.5")
    for host in ("agent.lan", "agent.lan:9000", "corp.example", "a.b.corp.example:80", "[fd00::5]:8049",
                 "192.168.1.5:8049", "localhost"):  # fmt: skip
        assert client.get("/a2a/rest/tasks", headers={"Host": host, **V1}).status_code == 200, host
    for host in ("evilcorp.example", "corp.example.attacker.example", "agent.lan.attacker.example"):
        assert client.get("/a2a/rest/tasks", headers={"Host": host, **V1}).status_code == 421, host
    anything = client_for(allowed_hosts="*")
    assert anything.get("/a2a/rest/tasks", headers=REBINDING).status_code == 200


def test_the_health_probes_answer_any_host() -> None:
    client = client_for()
    for path in ("/healthz", "/readyz"):
        answer = client.get(path, headers={"Host": "10.244.3.17:8049", "Origin": "https://elsewhere.example"})
        assert answer.status_code == 200 and answer.get_json()["status"] == "ok", path


@pytest.mark.parametrize(
    ("setting", "value"),
    [("allowed_hosts", "agent.lan:8049"), ("allowed_hosts", "http://agent.lan"), ("allowed_hosts", "a b"),
     ("allowed_hosts", "::1"), ("allowed_hosts", "agent.lan/x"), ("allowed_hosts", ".*.example"),
     ("cors_origins", "https://app.example/"), ("cors_origins", "null"), ("cors_origins", "app.example"),
     ("cors_origins", "ftp://app.example"), ("cors_origins", "https://app.example:0"),
     ("base_url", "http://user@agent.example")],
)  # fmt: skip
def test_bad_host_and_origin_settings_stop_the_start(setting: str, value: str) -> None:
    variable = f"QUINELING_{setting.upper()}"
    with pytest.raises(ConfigError, match=variable):
        load_settings(env={variable: value})


def test_good_host_and_origin_settings_load() -> None:
    settings = load_settings(
        env={
            "QUINELING_ALLOWED_HOSTS": " Agent.LAN, .corp.example,[::1],*",
            "QUINELING_CORS_ORIGINS": "https://app.example, http://localhost:3000,*",
        }
    )
    assert settings.allowed_hosts and settings.cors_origins


# --- 2 and 3. Cross-site requests ---------------------------------------------------------------------


def test_a_cross_site_form_post_cannot_cancel_a_task() -> None:
    """The form a page of any site can submit: no custom header, a form media type, the version in the
    query string."""
    client = client_for()
    task_id = waiting_task(client)
    url = f"/a2a/rest/tasks/{task_id}:cancel?A2A-Version=1.0"
    for headers in ({"Content-Type": FORM}, {"Content-Type": "text/plain"}, {}):
        answer = client.post(url, data=b"", headers=headers)
        assert answer.status_code == 415, headers
        assert answer.get_json()["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert state_of(client, task_id) == "TASK_STATE_INPUT_REQUIRED"
    # What a browser adds to such a form: its Origin, which is refused before anything else.
    foreign = client.post(url, data=b"", headers={"Content-Type": FORM, "Origin": "https://attacker.example"})
    assert foreign.status_code == 403 and "QUINELING_CORS_ORIGINS" in foreign.get_json()["error"]["message"]
    assert state_of(client, task_id) == "TASK_STATE_INPUT_REQUIRED"


def test_a_simple_post_cannot_drive_the_jsonrpc_endpoint() -> None:
    """A fetch of a Blob body sends no Content-Type and is still "simple"; v0.3 methods need no A2A-Version
    header, and the 1.0 version can be put in the query string."""
    client = client_for()
    task_id = waiting_task(client)
    v03 = rpc("tasks/cancel", {"id": task_id})
    v10 = rpc("CancelTask", {"id": task_id})
    for url, body in (("/a2a/jsonrpc", v03), ("/a2a/jsonrpc?A2A-Version=1.0", v10)):
        answer = client.post(url, data=json.dumps(body))  # no Content-Type at all
        assert answer.status_code == 400, url
        assert answer.get_json()["error"]["code"] == -32005 and answer.get_json()["id"] is None
        plain = client.post(url, data=json.dumps(body), content_type="text/plain")
        assert plain.status_code == 400, url
    assert state_of(client, task_id) == "TASK_STATE_INPUT_REQUIRED"


def test_clients_that_send_json_or_the_version_header_are_served() -> None:
    client = client_for()
    # The README's cancel: no body, no Content-Type, the A2A-Version header.
    first = waiting_task(client)
    assert client.post(f"/a2a/rest/tasks/{first}:cancel", headers=V1).status_code == 200
    # A v0.3 client: JSON, no A2A-Version header.
    second = waiting_task(client)
    v03 = client.post("/a2a/jsonrpc", json=rpc("tasks/cancel", {"id": second}))
    assert v03.status_code == 200 and v03.get_json()["result"]["status"]["state"] == "canceled"
    # A JSON body with the version in the query string.
    third = waiting_task(client)
    rest = client.post(f"/a2a/rest/tasks/{third}:cancel?A2A-Version=1.0", json={})
    assert rest.status_code == 200
    # JSON-RPC without Content-Type but with the header (it forces a preflight just as well).
    fourth = waiting_task(client)
    bare = client.post("/a2a/jsonrpc", data=json.dumps(rpc("CancelTask", {"id": fourth})), headers=V1)
    assert bare.status_code == 200 and "result" in bare.get_json()
    # An unknown route or verb keeps its routing answer.
    assert client.post("/a2a/rest/nowhere").status_code == 404
    assert client.post("/.well-known/agent-card.json").status_code == 405


@pytest.mark.parametrize("origin", ["https://attacker.example", "http://localhost:3000", "null", "garbage"])
def test_a_foreign_origin_is_refused_in_each_bindings_shape(origin: str) -> None:
    client = client_for()
    task_id = waiting_task(client)
    headers = {"Origin": origin, **V1}
    rest = client.post(f"/a2a/rest/tasks/{task_id}:cancel", json={}, headers=headers)
    assert rest.status_code == 403 and rest.get_json()["error"]["code"] == 403
    jsonrpc = client.post("/a2a/jsonrpc", json=rpc("CancelTask", {"id": task_id}), headers=headers)
    assert jsonrpc.status_code == 403 and jsonrpc.get_json()["error"]["code"] == -32600
    v03 = client.post("/a2a/jsonrpc", json=rpc("tasks/cancel", {"id": task_id}), headers={"Origin": origin})
    assert v03.status_code == 403
    assert state_of(client, task_id) == "TASK_STATE_INPUT_REQUIRED"
    # Reads and streams too: a page of another origin gets nothing of this agent.
    assert client.get("/a2a/rest/tasks", headers=headers).status_code == 403
    assert client.get(f"/a2a/rest/tasks/{task_id}:subscribe", headers=headers).status_code == 403
    card = client.get("/.well-known/agent-card.json", headers={"Origin": origin})
    assert card.status_code == 403 and card.get_json()["error"]["code"] == 403
    assert "Access-Control-Allow-Origin" not in card.headers
    preflight = client.options(
        "/a2a/jsonrpc", headers={"Origin": origin, "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 403 and "Access-Control-Allow-Origin" not in preflight.headers


def test_the_agents_own_origin_is_served() -> None:
    """Pages the agent serves (the API page) call it back from its own origin: the advertised one, or the
    one of the request's Host."""
    client = client_for(base_url="https://agent.example.com")
    task_id = waiting_task(client)
    for host, origin in (
        ("localhost", "http://localhost"),
        ("localhost:8049", "http://localhost:8049"),
        ("127.0.0.1:8049", "https://agent.example.com"),  # a proxy that forwards its upstream address
        ("agent.example.com", "https://agent.example.com:443"),
        ("agent.example.com", "https://agent.example.com"),
    ):
        headers = {"Host": host, "Origin": origin, **V1}
        assert client.get(f"/a2a/rest/tasks/{task_id}", headers=headers).status_code == 200, (host, origin)
    assert (
        client.post(
            f"/a2a/rest/tasks/{task_id}:cancel", json={}, headers={"Origin": "http://localhost", **V1}
        ).status_code
        == 200
    )
    for host, origin in (("localhost:8049", "http://localhost:8050"), ("localhost", "http://127.0.0.1")):
        headers = {"Host": host, "Origin": origin, **V1}
        assert client.get("/a2a/rest/tasks", headers=headers).status_code == 403, (host, origin)


def test_configured_cors_origins_get_preflights_and_headers() -> None:
    client = client_for(cors_origins="https://app.example, http://localhost:3000")
    origin = {"Origin": "https://app.example"}
    preflight = client.options(
        "/a2a/rest/message:send",
        headers={**origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type, a2a-version"},
    )  # fmt: skip
    assert preflight.status_code == 204
    assert preflight.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert {"POST", "GET", "DELETE"} <= set(preflight.headers["Access-Control-Allow-Methods"].split(", "))
    allowed = {h.lower() for h in preflight.headers["Access-Control-Allow-Headers"].split(", ")}
    assert {"content-type", "a2a-version", "a2a-extensions", "authorization"} <= allowed  # bearer tokens
    assert (
        "Origin" in preflight.headers["Vary"] and "Access-Control-Allow-Credentials" not in preflight.headers
    )

    body = {"message": user_message(text("[1] | sum | report t"))}
    sent = client.post("/a2a/rest/message:send", json=body, headers={**origin, **V1})
    assert sent.status_code == 200 and sent.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "ETag" in sent.headers["Access-Control-Expose-Headers"]
    assert "WWW-Authenticate" in sent.headers["Access-Control-Expose-Headers"]  # a 401's challenge
    card = client.get("/.well-known/agent-card.json", headers={"Origin": "http://localhost:3000"})
    assert card.status_code == 200 and card.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert {"A2A-Version", "Origin"} <= {v.strip() for v in card.headers["Vary"].split(",")}
    # Without an Origin (or from the agent's own) nothing CORS is added, but caches still key on Origin.
    plain = client.get("/.well-known/agent-card.json")
    assert "Access-Control-Allow-Origin" not in plain.headers and "Origin" in plain.headers["Vary"]
    # Unlisted origins are still refused; a listed one still cannot send a simple form.
    other = client.post(
        "/a2a/rest/message:send", json=body, headers={"Origin": "https://other.example", **V1}
    )
    assert other.status_code == 403 and "Access-Control-Allow-Origin" not in other.headers
    form = client.post(
        "/a2a/rest/tasks/x:cancel?A2A-Version=1.0", data=b"", headers={**origin, "Content-Type": FORM}
    )
    assert form.status_code == 415


def test_cors_any_origin() -> None:
    client = client_for(cors_origins="*")
    answer = client.get("/a2a/rest/tasks", headers={"Origin": "https://anyone.example", **V1})
    assert (
        answer.status_code == 200
        and answer.headers["Access-Control-Allow-Origin"] == "https://anyone.example"
    )


def test_without_cors_responses_carry_no_cors_headers() -> None:
    client = client_for()
    answer = client.get("/.well-known/agent-card.json", headers={"Origin": "http://localhost"})
    assert answer.status_code == 200
    assert not [name for name in answer.headers.keys() if name.lower().startswith("access-control-")]
    assert "Origin" not in answer.headers.get("Vary", "")


def test_the_served_host_memo_is_bounded_and_never_holds_a_refused_name() -> None:
    guard = OriginGuard.from_settings(load_settings({"allowed_hosts": ".corp.example"}))
    assert not guard.host_allowed("attacker.example") and not guard.host_allowed("attacker.example")
    for n in range(200):
        assert guard.host_allowed(f"h{n}.corp.example")
    memo = guard._served
    assert len(memo) == 64 and "attacker.example" not in memo
    assert not guard.host_allowed("attacker.example")
