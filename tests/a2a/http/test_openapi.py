"""The HTTP+JSON OpenAPI document says what the server does: every operation's errors are the bodies the
binding really sends (validated against the declared schema), its examples really work, and nothing
flask-smorest would add on its own (422, its error schema) is left in."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import fakeredis
import jsonschema
import pytest
from openapi_spec_validator import validate as validate_openapi

from quineling.a2a.card import BEARER_SCHEME
from quineling.a2a.errors import ERROR_DOMAIN, ERROR_INFO_TYPE
from quineling.a2a.http.rate_limit import RATE_LIMIT_DOMAIN
from quineling.a2a.task_facts import describe_task
from quineling.app import create_app
from quineling.runtime.runtime import Runtime
from stores.redis import RedisBackend
from tests.a2a.conftest import make_app, text, user_message
from tests.support.bindings import V1
from tests.support.principals import keys_file

BASE = "/a2a/rest"
METHODS = {"get", "put", "post", "delete", "patch"}


def document(client: Any) -> dict[str, Any]:
    response = client.get(BASE + "/openapi.json")
    assert response.status_code == 200
    return response.get_json()


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


def operation_for(doc: dict[str, Any], method: str, url_path: str) -> tuple[str, dict[str, Any]]:
    """The documented operation a request goes to, matched as the server's router would (literal first)."""
    matches = []
    for path, item in doc["paths"].items():
        pattern = "^" + re.sub(r"\\\{[a-z_]+\\\}", "[^/]+", re.escape(path)) + "$"
        if method in item and re.match(pattern, url_path):
            literal = len(re.sub(r"\{[a-z_]+\}", "", path))
            matches.append((-literal, path, item[method]))
    assert matches, f"{method.upper()} {url_path} is not documented"
    _, path, operation = min(matches)  # werkzeug prefers the rule with more literal text
    return path, operation


def schema_validator(doc: dict[str, Any], schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    # The components ride along at the root so the document's own "#/components/..." references resolve.
    root = {**copy.deepcopy(schema), "components": doc["components"]}
    return jsonschema.Draft202012Validator(root)


def check_documented(doc: dict[str, Any], method: str, url_path: str, response: Any) -> str:
    """Assert ``response`` is one the document declares for this operation, valid against its schema;
    return the operation's path template."""
    path, operation = operation_for(doc, method, url_path)
    status = str(response.status_code)
    declared = operation["responses"]
    assert status in declared, f"{method.upper()} {path} answered {status}, documented: {sorted(declared)}"
    content = declared[status].get("content", {})
    media_type = response.mimetype
    assert media_type in content, f"{method.upper()} {path} {status}: {media_type} not in {sorted(content)}"
    if media_type != "text/event-stream":
        schema_validator(doc, content[media_type]["schema"]).validate(response.get_json())
    return path


# --- the document as a whole ---------------------------------------------------------------------------


@pytest.fixture
def doc(client: Any) -> dict[str, Any]:
    return document(client)


def test_document_is_valid_openapi(doc: dict[str, Any]) -> None:
    validate_openapi(doc)
    assert doc["openapi"].startswith("3.") and doc["info"]["version"] == "1.0"


def test_no_framework_error_responses_or_schemas(doc: dict[str, Any]) -> None:
    raw = json.dumps(doc)
    for name in ("UNPROCESSABLE", "DEFAULT_ERROR", '"Error"', "PaginationMetadata", "#/components/responses"):
        assert name not in raw
    assert set(doc["components"]) == {"schemas"}
    for method, path, operation in operations(doc):
        statuses = set(operation["responses"])
        assert "422" not in statuses and "default" not in statuses, (method, path)


def test_every_operation_is_described_with_an_example(doc: dict[str, Any]) -> None:
    ids = []
    for method, path, operation in operations(doc):
        where = f"{method.upper()} {path}"
        assert operation["summary"].strip() and operation["operationId"], where
        assert "**Example**" in operation["description"] and "curl" in operation["description"], where
        ids.append(operation["operationId"])
        names = {p["name"] for p in operation["parameters"] + doc["paths"][path].get("parameters", [])}
        assert "A2A-Version" in names, where
        for parameter in doc["paths"][path].get("parameters", []):
            assert parameter.get("example") and parameter.get("description"), (where, parameter["name"])
        if "requestBody" in operation:
            content = operation["requestBody"]["content"]
            assert set(content) == {"application/json", "application/a2a+json"}, where
            assert all("example" in media for media in content.values()), where
    assert len(ids) == len(set(ids)), "operationIds must be unique"
    assert len(ids) == 24  # 12 operations, each also under /{tenant}


def test_send_message_links_to_the_operations_on_its_task() -> None:
    doc = document(create_app(config={"tenants": "alpha"}).test_client())
    ids = {op["operationId"] for _, _, op in operations(doc)}
    for path, suffix in ((BASE + "/message:send", ""), (BASE + "/{tenant}/message:send", "ForTenant")):
        links = doc["paths"][path]["post"]["responses"]["200"]["links"]
        assert {link["operationId"] for link in links.values()} == {
            name + suffix for name in ("GetTask", "CancelTask", "SubscribeToTask", "SubscribeToTaskByPost")
        }
        for link in links.values():
            assert link["operationId"] in ids
            assert link["parameters"]["task_id"] == "$response.body#/task/id"
            assert link["parameters"].get("tenant") == ("$request.path.tenant" if suffix else None)


def test_error_schema_is_the_google_rpc_status_body(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    assert schemas["ErrorResponse"]["required"] == ["error"]
    assert schemas["ErrorResponse"]["properties"]["error"] == {"$ref": "#/components/schemas/Status"}
    assert set(schemas["Status"]["required"]) == {"code", "status", "message", "details"}
    info = schemas["ErrorInfo"]["properties"]
    # A2A's domain, and this server's own for the one reason the protocol lacks (a rate-limit refusal).
    assert info["@type"]["enum"] == [ERROR_INFO_TYPE]
    assert info["domain"]["enum"] == [ERROR_DOMAIN, RATE_LIMIT_DOMAIN]
    for method, path, operation in operations(doc):
        for status, response in operation["responses"].items():
            if status.startswith("2"):
                continue
            schema = response["content"]["application/json"]["schema"]
            assert schema["allOf"][0] == {"$ref": "#/components/schemas/ErrorResponse"}, (
                method,
                path,
                status,
            )
            # Each declared example is itself a valid body for that status.
            schema_validator(doc, schema).validate(response["content"]["application/json"]["example"])


def test_request_constraints_are_documented(doc: dict[str, Any]) -> None:
    send = doc["components"]["schemas"]["SendMessageRequest"]
    assert send["required"] == ["message"] and "nullable" not in send["properties"]["message"]
    listing = {p["name"]: p for p in doc["paths"][BASE + "/tasks"]["get"]["parameters"]}
    assert listing["pageSize"]["schema"] == {
        "type": "integer",
        "format": "int32",
        "minimum": 1,
        "maximum": 100,
        "default": 50,
    }
    assert listing["historyLength"]["schema"]["minimum"] == 0
    assert listing["status"]["schema"]["enum"][:2] == ["", "TASK_STATE_UNSPECIFIED"]
    get_task = {p["name"]: p for p in doc["paths"][BASE + "/tasks/{task_id}"]["get"]["parameters"]}
    assert get_task["historyLength"]["schema"]["minimum"] == 0
    assert get_task["historyLength"]["schema"]["maximum"] == 2**31 - 1
    header = get_task["A2A-Version"]
    assert header["in"] == "header" and header["required"] and header["schema"]["default"] == "1.0"
    message = doc["components"]["schemas"]["Message"]
    assert message["required"] == ["messageId"] and message["properties"]["messageId"]["minLength"] == 1
    assert send["properties"]["message"] == {"$ref": "#/components/schemas/Message"}
    cancel = doc["paths"][BASE + "/tasks/{task_id}:cancel"]["post"]["requestBody"]
    assert cancel["required"] is False


def test_documented_page_size_bounds_are_the_servers(client: Any) -> None:
    for size, status in ((0, 400), (1, 200), (100, 200), (101, 400)):
        assert client.get(f"{BASE}/tasks?pageSize={size}", headers=V1).status_code == status, size


def test_missing_message_is_invalid_params(client: Any) -> None:
    for body in ({}, {"message": None}, {"message": "hi"}):
        response = client.post(BASE + "/message:send", json=body, headers=V1)
        error = response.get_json()["error"]
        assert response.status_code == 400 and error["details"][0]["reason"] == "INVALID_PARAMS"
        assert "message" in error["message"]


# --- tenants -------------------------------------------------------------------------------------------


def test_tenants_served_are_the_documented_choices() -> None:
    doc = document(create_app(config={"tenants": "beta,alpha"}).test_client())
    path = doc["paths"][BASE + "/{tenant}/tasks"]
    tenant = next(p for p in path["parameters"] if p["name"] == "tenant")
    assert tenant["schema"]["enum"] == ["alpha", "beta"] and tenant["example"] == "alpha"
    query = next(p for p in doc["paths"][BASE + "/tasks"]["get"]["parameters"] if p["name"] == "tenant")
    assert query["schema"]["enum"] == ["", "alpha", "beta"]
    body = doc["components"]["schemas"]["SendMessageRequest"]["properties"]["tenant"]
    assert body["enum"] == ["", "alpha", "beta", None]


def test_tenant_routes_document_the_body_and_query_tenant_as_ignored() -> None:
    client = create_app(config={"tenants": "alpha"}).test_client()
    doc = document(client)
    send = doc["paths"][BASE + "/{tenant}/message:send"]["post"]["requestBody"]["content"]
    ref = send["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/SendMessageRequestInTenantRoute"
    tenant = doc["components"]["schemas"]["SendMessageRequestInTenantRoute"]["properties"]["tenant"]
    assert "enum" not in tenant and "Ignored" in tenant["description"]
    listing = doc["paths"][BASE + "/{tenant}/tasks"]["get"]["parameters"]
    query = next(p for p in listing if p["name"] == "tenant")
    assert "enum" not in query["schema"] and "Ignored" in query["description"]
    # ... and the server does ignore them there: a tenant it does not serve changes nothing.
    body = {"message": user_message(text("[1] | sum | report t")), "tenant": "nobody"}
    assert client.post(BASE + "/alpha/message:send", json=body, headers=V1).status_code == 200
    assert client.get(BASE + "/alpha/tasks?tenant=nobody", headers=V1).get_json()["totalSize"] == 1


def test_tenant_routes_are_left_out_when_no_tenant_is_served() -> None:
    client = create_app().test_client()  # the product default: only the default tenant
    doc = document(client)
    assert doc["paths"] and not [p for p in doc["paths"] if "{tenant}" in p]
    assert "only the default tenant" in doc["info"]["description"]
    assert {t["name"] for t in doc["tags"]} == {"Messages", "Tasks", "Push notifications", "Agent card"}
    # ... and the server indeed refuses every tenant there.
    response = client.get(BASE + "/acme/tasks", headers=V1)
    assert (
        response.status_code == 400
        and response.get_json()["error"]["details"][0]["reason"] == "INVALID_PARAMS"
    )


# --- real answers against the document -----------------------------------------------------------------


def _send(client: Any, body: dict[str, Any], tenant: str = "") -> Any:
    path = f"{BASE}/{tenant}/message:send" if tenant else BASE + "/message:send"
    return client.post(path, json=body, headers=V1)


def test_real_error_bodies_validate_against_the_declared_schemas(client: Any) -> None:
    doc = document(client)
    done = _send(client, {"message": user_message(text("[1] | sum | report t"))}).get_json()["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    waiting = _send(client, {"message": user_message(text(" "))}).get_json()["task"]
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    stale = {
        "message": user_message(text("x"), taskId=waiting["id"]),
        "configuration": {"ifGenerationMatch": 1},
    }
    small = make_app(request_limit_bytes=256).test_client()
    picky = make_app(config={"tenants": "alpha"}).test_client()
    message = {"message": user_message(text("x"))}
    cases: list[tuple[Any, str, str, dict[str, Any], int, str]] = [
        (client, "post", "/message:send", {"json": message, "headers": {}}, 400, "VERSION_NOT_SUPPORTED"),
        (client, "get", "/tasks", {"headers": {"A2A-Version": "9.9"}}, 400, "VERSION_NOT_SUPPORTED"),
        (client, "post", "/message:send", {"data": "{bad", "content_type": "application/json"}, 400, "INVALID_REQUEST"),
        (client, "post", "/tasks/t:cancel", {"data": "[1]", "content_type": "application/json"}, 400, "INVALID_REQUEST"),
        (client, "post", "/message:send", {"json": {}}, 400, "INVALID_PARAMS"),
        (client, "get", "/tasks?pageSize=101", {}, 400, "INVALID_PARAMS"),
        (client, "get", "/tasks?pageToken=nope", {}, 400, "INVALID_PARAMS"),
        (client, "get", "/tasks/t?historyLength=-1", {}, 400, "INVALID_PARAMS"),
        (picky, "get", "/beta/tasks", {}, 400, "INVALID_PARAMS"),
        (picky, "post", "/message:send", {"json": {**message, "tenant": "beta"}}, 400, "INVALID_PARAMS"),
        (client, "post", "/message:send", {"json": {"message": user_message(text("x"), taskId=done["id"])}}, 400, "UNSUPPORTED_OPERATION"),
        (client, "post", f"/tasks/{done['id']}:cancel", {}, 400, "TASK_NOT_CANCELABLE"),
        (client, "get", f"/tasks/{done['id']}:subscribe", {}, 400, "UNSUPPORTED_OPERATION"),
        (client, "post", f"/tasks/{done['id']}:subscribe", {}, 400, "UNSUPPORTED_OPERATION"),
        (client, "post", "/tasks/t/pushNotificationConfigs", {"json": {"url": "https://x.example"}}, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (client, "get", "/tasks/t/pushNotificationConfigs", {}, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (client, "get", "/tasks/t/pushNotificationConfigs/c", {}, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (client, "delete", "/tasks/t/pushNotificationConfigs/c", {}, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (client, "get", "/extendedAgentCard", {}, 400, "UNSUPPORTED_OPERATION"),
        (client, "get", "/acme/extendedAgentCard", {}, 400, "UNSUPPORTED_OPERATION"),
        (client, "post", "/message:send", {"json": {**message, "configuration": {"acceptedOutputModes": ["image/png"]}}}, 400, "CONTENT_TYPE_NOT_SUPPORTED"),
        (client, "post", "/message:send", {"json": stale}, 409, "TASK_GENERATION_MISMATCH"),
        (client, "post", "/message:stream", {"json": stale}, 409, "TASK_GENERATION_MISMATCH"),
        (client, "get", "/tasks/nope", {}, 404, "TASK_NOT_FOUND"),
        (client, "get", "/acme/tasks/nope", {}, 404, "TASK_NOT_FOUND"),
        (client, "post", "/tasks/nope:cancel", {}, 404, "TASK_NOT_FOUND"),
        (client, "get", "/tasks/nope:subscribe", {}, 404, "TASK_NOT_FOUND"),
        (client, "post", "/message:send", {"json": {"message": user_message(text("x"), taskId="nope")}}, 404, "TASK_NOT_FOUND"),
        (client, "post", "/message:stream", {"json": {"message": user_message(text("x"), taskId="nope")}}, 404, "TASK_NOT_FOUND"),
        (small, "post", "/message:send", {"json": {"message": user_message(text("x" * 300))}}, 413, "INVALID_REQUEST"),
        (small, "get", "/tasks", {"data": "x" * 300, "content_type": "application/json"}, 413, "INVALID_REQUEST"),
        (client, "post", "/message:send", {"data": "hi", "content_type": "text/plain"}, 415, "CONTENT_TYPE_NOT_SUPPORTED"),
        (client, "post", "/tasks/t:cancel", {"data": "hi", "content_type": "text/plain"}, 415, "CONTENT_TYPE_NOT_SUPPORTED"),
        (client, "post", "/tasks/t:cancel?A2A-Version=1.0", {"headers": {}}, 415, "CONTENT_TYPE_NOT_SUPPORTED"),
        (client, "get", "/tasks", {"headers": {"Origin": "https://elsewhere.example", **V1}}, 403, "INVALID_REQUEST"),
        (client, "post", "/message:send", {"json": message, "headers": {"Host": "elsewhere.example", **V1}}, 421, "INVALID_REQUEST"),
    ]  # fmt: skip
    seen: set[tuple[str, str]] = set()
    for who, method, path, kwargs, status, reason in cases:
        kwargs = {"headers": V1, **kwargs}
        response = who.open(BASE + path, method=method.upper(), **kwargs)
        assert response.status_code == status, (method, path, response.get_data(as_text=True))
        assert response.get_json()["error"]["details"][0]["reason"] == reason, (method, path)
        template = check_documented(doc, method, BASE + path.split("?")[0], response)
        seen.add((method, template))
    # Every error status the document declares is sent by at least one of these requests (500, 503: below).
    declared = {s for _, _, op in operations(doc) for s in op["responses"] if not s.startswith("2")}
    assert declared - {"500", "503"} <= {str(c[4]) for c in cases}


def test_storage_outage_answers_the_documented_503() -> None:
    server = fakeredis.FakeServer()
    backend = RedisBackend("redis://fake", client=fakeredis.FakeRedis(server=server), prefix="openapi")
    client = create_app(
        runtime=Runtime(store=backend.state_store()),
        task_store=backend.task_store(describe=describe_task),
        config={"tenants": "*"},
    ).test_client()
    doc = document(client)
    server.connected = False
    for method, path, kwargs in [
        ("post", "/message:send", {"json": {"message": user_message(text("[1] | sum | report t"))}}),
        ("post", "/message:stream", {"json": {"message": user_message(text("[1] | sum | report t"))}}),
        ("get", "/tasks", {}),
        ("get", "/acme/tasks/t", {}),
        ("post", "/tasks/t:cancel", {}),
        ("get", "/tasks/t:subscribe", {}),
    ]:
        response = client.open(BASE + path, method=method.upper(), headers=V1, **kwargs)
        assert response.status_code == 503, (method, path)
        assert response.headers["Retry-After"] == "1", (method, path)
        error = response.get_json()["error"]
        assert error["status"] == "UNAVAILABLE" and error["details"][0]["reason"] == "INTERNAL_ERROR"
        assert error["details"][0]["metadata"]["retryable"] == "true"
        _, operation = operation_for(doc, method, BASE + path)
        assert operation["responses"]["503"]["headers"]["Retry-After"]["required"] is True, (method, path)
        check_documented(doc, method, BASE + path, response)
    # Operations that never touch storage do not claim a 500 or a 503.
    responses = doc["paths"][BASE + "/extendedAgentCard"]["get"]["responses"]
    assert "500" not in responses and "503" not in responses


def _example_request(
    doc: dict[str, Any], path: str, operation: dict[str, Any], task_id: str
) -> tuple[str, dict[str, Any]]:
    """The request the operation's examples describe, with a real task id."""
    url = path
    for parameter in doc["paths"][path].get("parameters", []):
        value = task_id if parameter["name"] == "task_id" else parameter["example"]
        url = url.replace("{" + parameter["name"] + "}", str(value))
    query = {
        p["name"]: p["example"] for p in operation["parameters"] if p["in"] == "query" and "example" in p
    }
    headers = {p["name"]: p["example"] for p in operation["parameters"] if p["in"] == "header"}
    kwargs: dict[str, Any] = {"headers": headers}
    if "requestBody" in operation:
        kwargs["json"] = operation["requestBody"]["content"]["application/json"]["example"]
    return url + ("?" + urlencode(query) if query else ""), kwargs


def test_every_example_request_gets_a_documented_answer() -> None:
    """The examples, sent as documented to an app on the real runtime, succeed where the agent can."""
    client = create_app(config={"tenants": "acme"}).test_client()
    doc = document(client)
    successes = set()
    for method, path, operation in operations(doc):
        # A task the example can act on: live (not yet canceled) for cancel, in the example's tenant.
        tenant = "acme" if "{tenant}" in path else ""
        waiting = _send(client, {"message": user_message(text(""))}, tenant).get_json()["task"]
        assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        url, kwargs = _example_request(doc, path, operation, waiting["id"])
        response = client.open(url, method=method.upper(), **kwargs)
        check_documented(doc, method, url.split("?")[0], response)
        if response.status_code == 200:
            successes.add(operation["operationId"])
        response.close()
    assert successes == {
        f"{op}{suffix}"
        for op in ("SendMessage", "SendStreamingMessage", "ListTasks", "GetTask", "CancelTask", "SubscribeToTask", "SubscribeToTaskByPost")
        for suffix in ("", "ForTenant")
    }  # fmt: skip
    created = client.post(
        BASE + "/message:send",
        **_example_request(doc, BASE + "/message:send", doc["paths"][BASE + "/message:send"]["post"], "")[1],
    )
    result = created.get_json()["task"]["artifacts"][0]["parts"][0]["data"]
    assert result["result"]["status"] == "created"


# --- the page ------------------------------------------------------------------------------------------


def test_docs_page_loads_only_its_own_assets(client: Any, doc: dict[str, Any]) -> None:
    page = client.get(BASE + "/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert "//" not in re.sub(r"<script>.*?</script>", "", html, flags=re.S).replace("<!DOCTYPE html>", "")
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert {a.rsplit("/", 1)[-1] for a in assets} == {
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
    }
    for asset in assets:
        assert not asset.startswith(("http:", "https:", "//", "/")), asset  # relative to the page
        response = client.get(f"{BASE}/{asset}")
        assert response.status_code == 200 and len(response.data) > 10_000, asset
        assert response.mimetype in {"text/css", "text/javascript", "application/javascript"}, asset
        response.close()
    assert '"validatorUrl": null' in html  # Swagger UI would otherwise post the document to a web service
    assert 'url: "/a2a/rest/openapi.json"' in html
    assert doc["externalDocs"]["url"] == "http://127.0.0.1:8049/a2a/rest/docs"


def test_unknown_asset_is_an_a2a_404(client: Any) -> None:
    response = client.get(BASE + "/docs/assets/nope.js")
    assert response.status_code == 404 and response.get_json()["error"]["code"] == 404


def test_the_page_with_a_trailing_slash_redirects_to_it(tmp_path: Path) -> None:
    """``/a2a/rest/docs/`` as people type it: a 308 to the page, without credentials on a secured server."""
    keys, _tokens = keys_file(tmp_path, "alice")
    for app in (create_app(), create_app(config={"auth_keys_file": str(keys), "auth_jwks": ""})):
        client = app.test_client()
        response = client.get(BASE + "/docs/")
        assert response.status_code == 308 and response.headers["Location"].endswith(BASE + "/docs")
        page = client.get(BASE + "/docs/", follow_redirects=True)
        assert page.status_code == 200 and "swagger" in page.get_data(as_text=True).lower()


def test_try_it_out_prefills_no_query_value(doc: dict[str, Any]) -> None:
    """Swagger UI fills a parameter's `example` in on "Try it out": a query example would filter ListTasks
    (one state, ten tasks) instead of listing every task."""
    for method, path, operation in operations(doc):
        for parameter in operation["parameters"]:
            if parameter["in"] == "query":
                assert "example" not in parameter, (method, path, parameter["name"])


def test_nested_answer_fields_have_their_real_schemas(doc: dict[str, Any]) -> None:
    """No field of an answer is a bare free-form object, which the page shows as `additionalProp1`."""
    schemas = doc["components"]["schemas"]
    for name in ("Task", "TaskStatus", "SendMessageResponse", "StreamResponse", "Artifact", "Message"):
        for field, schema in schemas[name]["properties"].items():
            shown = schema.get("items", schema)
            loose = shown.get("type") == "object" and "properties" not in shown and "$ref" not in shown
            assert not loose or "example" in shown, (name, field, shown)
    task = schemas["Task"]["properties"]
    assert task["artifacts"]["items"] == {"$ref": "#/components/schemas/Artifact"}
    assert task["history"]["items"] == {"$ref": "#/components/schemas/Message"}
    stream = schemas["StreamResponse"]["properties"]
    assert stream["statusUpdate"] == {"$ref": "#/components/schemas/TaskStatusUpdateEvent"}


def test_paths_outside_the_bindings_answer_json(client: Any) -> None:
    missing = client.get("/no/such/page")
    assert missing.status_code == 404 and missing.mimetype == "application/json"
    assert missing.get_json()["error"]["code"] == 404 and "details" not in missing.get_json()["error"]
    wrong = client.post("/healthz")
    assert (
        wrong.status_code == 405
        and wrong.get_json()["error"]["code"] == 405
        and "GET" in wrong.headers["Allow"]
    )


def test_authenticated_server_documents_its_bearer_scheme(tmp_path: Path) -> None:
    """With credentials required, the document declares the card's bearer scheme and requires it on every
    operation (so the docs page's "Authorize" button sends the token); without, it declares none."""
    keys, _tokens = keys_file(tmp_path, "alice")
    app = create_app(config={"auth_keys_file": str(keys), "auth_jwks": ""})
    secured = document(app.test_client())
    validate_openapi(secured)
    scheme = secured["components"]["securitySchemes"][BEARER_SCHEME]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer" and "API key" in scheme["description"]
    assert "bearerFormat" not in scheme  # API keys only: not JWTs
    assert secured["security"] == [{BEARER_SCHEME: []}]
    anonymous = document(create_app().test_client())
    assert "security" not in anonymous and "securitySchemes" not in anonymous.get("components", {})


def test_a_rate_limited_server_documents_the_429_it_sends() -> None:
    """With ``QUINELING_RATE_LIMIT`` set every A2A operation declares the 429, its ``Retry-After`` and
    ``RateLimit-*`` headers, and the refusal really sent validates against it; without it none does."""
    unlimited = document(create_app(config={"tenants": "*"}).test_client())
    assert not any("429" in op["responses"] for _, _, op in operations(unlimited))

    client = create_app(config={"tenants": "*", "rate_limit": "2/minute"}).test_client()
    doc = document(client)
    validate_openapi(doc)
    for method, path, operation in operations(doc):
        refusal = operation["responses"].get("429")
        assert refusal is not None, (method, path)
        assert {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining"} <= set(refusal["headers"])
        assert "(2/minute)" in refusal["description"]
        example = refusal["content"]["application/json"]
        schema_validator(doc, example["schema"]).validate(example["example"])
    answers = [client.get(BASE + "/tasks", headers=V1) for _ in range(2)]  # the document took one
    assert [a.status_code for a in answers] == [200, 429]
    check_documented(doc, "get", BASE + "/tasks", answers[1])
    _, operation = operation_for(doc, "get", BASE + "/tasks")
    for name, header in operation["responses"]["429"]["headers"].items():
        assert header["required"] is True and name in answers[1].headers, name
