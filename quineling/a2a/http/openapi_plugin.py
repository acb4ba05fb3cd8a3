"""The apispec plugin that completes each operation of the HTTP+JSON binding's OpenAPI document.

flask-smorest generates each operation from its view in :mod:`quineling.a2a.http.rest`: the summary and
description from the view's docstring, the operation id and tag from its ``@blp.doc``, the request and answer
schemas (and the example request) from ``@blp.arguments`` and ``@blp.response``, and its own failures from
``@blp.doc(**answers(...))``. :class:`Documenter` adds what depends on the running agent or holds for every
operation: the ``A2A-Version`` header, both JSON media types, the tenant and paging constraints, a curl
example, the failures every operation shares (:mod:`quineling.a2a.http.error_answers`), and the tenant-route
variant of each operation. flask-smorest's own error schema and its 422, which this binding never sends, are
dropped.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from apispec import APISpec, BasePlugin

from quineling.a2a.card import BEARER_SCHEME, supported_versions
from quineling.a2a.http.binding import A2AState
from quineling.a2a.http.error_answers import (
    ANSWERS_KEY,
    EXAMPLE_TASK_ID,
    Answers,
    Failure,
    error_response,
    failures_of,
)
from quineling.a2a.http.openapi_schemas import (
    BODY_FIELDS,
    INT32_MAX,
    RESPONSE_FIELDS,
    enum_schema,
    stream_event_schema,
    version_pattern,
)
from quineling.a2a.wire import TASK_STATES

JSON = dict[str, Any]

JSON_MEDIA_TYPES = ("application/json", "application/a2a+json")
TENANT_TAG = "Tenant routes"
TENANT_ROUTE_SUFFIX = "InTenantRoute"  # the body schemas of tenant routes, whose body `tenant` is ignored
IGNORED_TENANT = "Ignored on this route: the tenant in the path wins."
EXAMPLE_PATH_VALUES = {"task_id": EXAMPLE_TASK_ID, "config_id": "cfg-1"}

TAGS = {
    "Messages": "Send messages; the work runs within the request.",
    "Tasks": "Read, list, cancel and follow tasks.",
    "Push notifications": "Webhooks for task updates.",
    "Agent card": "The extended agent card.",
    TENANT_TAG: "Every operation again, for a tenant named in the path (it wins over a `tenant` in the body "
    "or query).",
}


@dataclass(frozen=True, slots=True)
class Facts:
    """What the document needs to know about the running agent."""

    prefix: str
    base_url: str
    versions: tuple[str, ...]  # A2A versions HTTP+JSON serves, newest last
    tenants: frozenset[str] | None  # served besides the default one; None = any
    request_limit_bytes: int
    capabilities: Mapping[str, Any]
    bearer: Mapping[str, Any] | None  # the card's HTTP bearer scheme, when credentials are required
    rate_limit: str = ""  # QUINELING_RATE_LIMIT as configured; empty: no limit, so never a 429

    @classmethod
    def of(cls, prefix: str, state: A2AState) -> Facts:
        card = state.service.card("1.0")
        versions = sorted(supported_versions(card, "HTTP+JSON"), key=lambda v: [int(n) for n in v.split(".")])
        return cls(
            prefix=prefix,
            base_url=state.base_url.rstrip("/"),
            versions=tuple(versions),
            tenants=state.tenants,
            request_limit_bytes=state.request_limit_bytes,
            capabilities=card.get("capabilities", {}),
            bearer=card.get("securitySchemes", {}).get(BEARER_SCHEME, {}).get("httpAuthSecurityScheme"),
            rate_limit=getattr(state.extras.get("settings"), "rate_limit", ""),
        )

    @property
    def newest(self) -> str:
        return self.versions[-1] if self.versions else "1.0"

    @property
    def example_tenant(self) -> str:
        return sorted(self.tenants)[0] if self.tenants else "acme"


class Documenter(BasePlugin):
    """Completes each REST operation of the generated document (runs after flask-smorest's plugins)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.tenant_route_bodies: set[str] = set()  # body schemas a tenant route refers to

    def init_spec(self, spec: APISpec) -> None:
        self.spec = spec

    def path_helper(
        self, path: str | None = None, operations: Any = None, parameters: Any = None, **_kwargs: Any
    ) -> None:
        for parameter in parameters or []:
            if isinstance(parameter, dict) and parameter.get("in") == "path":
                parameter.update(self._path_parameter(parameter["name"]))

    def operation_helper(self, path: str | None = None, operations: Any = None, **_kwargs: Any) -> None:
        if not path or not path.startswith(self.facts.prefix + "/"):
            return
        tenant_route = path[len(self.facts.prefix) :].startswith("/{tenant}/")
        for method, operation in operations.items():
            doc = operation.pop(ANSWERS_KEY, None)
            if not isinstance(doc, Answers) or "operationId" not in operation or "summary" not in operation:
                raise LookupError(
                    f"{method.upper()} {path}: document its view with a docstring (summary, blank line, "
                    "description) and @blp.doc(operationId=..., tags=[...], **error_answers.answers(...))"
                )
            self._complete(operation, doc, method, path, tenant_route)

    # -- one operation --------------------------------------------------------------------------------

    def _complete(self, operation: JSON, doc: Answers, method: str, path: str, tenant_route: bool) -> None:
        facts = self.facts
        stream = any(
            "text/event-stream" in response.get("content", {})
            for response in operation.get("responses", {}).values()
            if isinstance(response, dict)
        )
        body = operation.get("requestBody")
        example = next(iter(body["content"].values())).get("example") if body else None
        if tenant_route:
            operation["operationId"] += "ForTenant"
            operation["tags"] = [TENANT_TAG]
        for key in ("tags", "operationId", "summary", "description"):  # the order the document has always had
            operation[key] = operation.pop(key)
        operation["description"] = self._description(
            doc, _unwrap(operation.get("description", "")), method, path, tenant_route, stream, example
        )

        parameters = [self._version_header()]
        for parameter in operation.get("parameters", []):
            if isinstance(parameter, dict) and parameter.get("in") == "query":
                self._query_parameter(parameter, doc, tenant_route)
            parameters.append(parameter)
        operation["parameters"] = parameters

        if body is not None:
            media = next(iter(body["content"].values()))
            if tenant_route:
                media = self._tenant_route_body(media)
            body["content"] = {media_type: copy.deepcopy(media) for media_type in JSON_MEDIA_TYPES}

        succeeds = doc.capability is None or bool(facts.capabilities.get(doc.capability))
        responses: JSON = {}
        for status, response in operation.get("responses", {}).items():
            if not str(status).startswith("2") or not succeeds:
                continue  # flask-smorest's 422 and default error: this binding sends neither
            responses[str(status)] = self._success(response, stream)
            if doc.links:
                responses[str(status)]["links"] = self._links(doc, tenant_route)
        by_status: dict[int, list[Failure]] = {}
        for failure in failures_of(doc, path, facts.versions, facts.request_limit_bytes, facts.rate_limit):
            by_status.setdefault(failure.status, []).append(failure)
        for status in sorted(by_status):
            responses[str(status)] = error_response(status, by_status[status])
        operation["responses"] = responses

    def _description(
        self, doc: Answers, text: str, method: str, path: str, tenant_route: bool, stream: bool, body: Any
    ) -> str:
        parts = [text]
        if tenant_route:
            parts.append(
                f"This route acts in the tenant named in the path, which wins over a `tenant` in the body or "
                f"query; `{path.replace('/{tenant}', '', 1)}` is the same operation for the default tenant."
            )
        if doc.capability and not self.facts.capabilities.get(doc.capability):
            parts.append(
                f"This agent's card declares `capabilities.{doc.capability}: false`, so this operation "
                f"always fails as documented below."
            )
        if stream:
            parts.append(
                "An error found before the stream starts is an ordinary error answer (below); one after it "
                "started is a final `event: error` frame whose data is an `ErrorResponse`."
            )
        parts.append("**Example**\n\n```sh\n" + self._curl(doc, method, path, stream, body) + "\n```")
        return "\n\n".join(parts)

    def _curl(self, doc: Answers, method: str, path: str, stream: bool, body: Any) -> str:
        url = self.facts.base_url + path.replace("{tenant}", self.facts.example_tenant)
        for name, value in EXAMPLE_PATH_VALUES.items():
            url = url.replace("{" + name + "}", value)
        if doc.query:
            url += "?" + urlencode(doc.query)
        words = ["curl", "-s"] + (["-N"] if stream else [])
        if method != "get" and not body:
            words += ["-X", method.upper()]
        words += [url, "-H", f"A2A-Version: {self.facts.newest}"]
        if body:
            words += ["-H", "Content-Type: application/json", "-d", json.dumps(body, ensure_ascii=False)]
        return " ".join(shlex.quote(word) for word in words)

    @staticmethod
    def _success(response: Any, stream: bool) -> Any:
        if not isinstance(response, dict) or "content" not in response:
            return response
        content = response["content"]
        if "application/json" in content:
            # The media type follows Accept: application/a2a+json unless the client prefers application/json.
            response["content"] = {
                media_type: copy.deepcopy(content["application/json"]) for media_type in JSON_MEDIA_TYPES
            }
        if stream:
            response["description"] = (
                "A stream of Server-Sent Events: each `data:` line holds one StreamResponse as JSON, the "
                "first one the task. Comment lines (`: keepalive`) may come between events."
            )
            response["content"] = {"text/event-stream": {"schema": stream_event_schema()}}
        return response

    @staticmethod
    def _links(doc: Answers, tenant_route: bool) -> JSON:
        suffix = "ForTenant" if tenant_route else ""
        parameters = {"task_id": "$response.body#/task/id"}
        if tenant_route:
            parameters["tenant"] = "$request.path.tenant"
        return {
            target: {
                "operationId": target + suffix,
                "parameters": dict(parameters),
                "description": f"{target} on the task this answer carries",
            }
            for target in doc.links
        }

    def _tenant_route_body(self, media: JSON) -> JSON:
        """On a tenant route the body's ``tenant`` is ignored (the path's wins), so such a route refers to
        a copy of the body schema whose ``tenant`` takes any string (made in :meth:`finish`)."""
        ref = media.get("schema", {}).get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
        if not name:
            return media
        self.tenant_route_bodies.add(name)
        return {**media, "schema": {"$ref": f"#/components/schemas/{name}{TENANT_ROUTE_SUFFIX}"}}

    # -- parameters -----------------------------------------------------------------------------------

    def _version_header(self) -> JSON:
        return {
            "in": "header",
            "name": "A2A-Version",
            "required": True,
            "description": f"The A2A protocol version of the request: {', '.join(self.facts.versions)} (a "
            "patch part is ignored, and `1` means `1.0`). Without it a request is taken as v0.3, which this "
            "binding does not serve. The query parameter `A2A-Version` is accepted instead.",
            # A pattern, not an enum: `1` and `1.0.2` are taken as 1.0 too.
            "schema": {
                "type": "string",
                "pattern": version_pattern(self.facts.versions),
                "default": self.facts.newest,
            },
            "example": self.facts.newest,
        }

    def _path_parameter(self, name: str) -> JSON:
        if name == "tenant":
            schema: JSON = {"type": "string", "minLength": 1, "pattern": "^[^/]+$"}
            if self.facts.tenants is None:
                description = "Any tenant: this agent serves every tenant (`QUINELING_TENANTS=*`)."
            else:
                schema["enum"] = sorted(self.facts.tenants)
                description = (
                    "One of the tenants this agent serves (`QUINELING_TENANTS`); any other is 400 "
                    "`INVALID_PARAMS`."
                )
            return {"schema": schema, "description": description, "example": self.facts.example_tenant}
        if name == "task_id":
            # One path segment without ':' (rest.TaskIdConverter): ':' starts the custom method.
            return {
                "schema": {"type": "string", "minLength": 1, "pattern": "^[^/:]+$"},
                "description": "The task's id.",
                "example": EXAMPLE_TASK_ID,
            }
        if name == "config_id":
            return {"description": "The push notification config's id.", "example": "cfg-1"}
        return {}

    def _query_parameter(self, parameter: JSON, doc: Answers, tenant_route: bool) -> None:
        schema = parameter.setdefault("schema", {})
        schema.pop("nullable", None)  # a query value is a string or absent, never null
        name = parameter["name"]
        if name == "tenant":
            if tenant_route:
                parameter["description"] = IGNORED_TENANT
            else:
                schema.update(self.body_tenant_schema(nullable=False))
                parameter["description"] = self.tenant_description()
        elif name == "status":
            # A TaskState name or number; empty is no filter (wire.enum).
            schema["enum"] = ["", *enum_schema(TASK_STATES, nullable=False)["anyOf"][0]["enum"]]
        elif schema.get("type") == "integer":
            schema.setdefault("format", "int32")
            schema.setdefault("maximum", INT32_MAX)
        # No `example` on a query parameter: Swagger UI pre-fills it on "Try it out", which would filter
        # ListTasks down to one state and page size. The operation's curl example shows the values instead.

    def tenant_description(self) -> str:
        if self.facts.tenants is None:
            return "The tenant to act in (any; empty is the default tenant). A tenant in the path wins."
        return (
            "The tenant to act in: empty for the default tenant, or one this agent serves "
            "(`QUINELING_TENANTS`); any other is 400 `INVALID_PARAMS`. A tenant in the path wins."
        )

    def body_tenant_schema(self, *, nullable: bool) -> JSON:
        if self.facts.tenants is None:
            return {}
        values: list[Any] = ["", *sorted(self.facts.tenants)]
        return {"enum": values + [None] if nullable else values}

    # -- the whole document ---------------------------------------------------------------------------

    def finish(self) -> None:
        """What only the whole document can say: tenant fields of body schemas, which tenant routes exist,
        and the tags in use. Paths and tags live in apispec's ``_paths`` and ``_tags`` (no public setter)."""
        schemas = self.spec.components.schemas
        for (name, field_name), component in BODY_FIELDS.items():
            if name in schemas:
                schemas[name]["properties"][field_name] = {"$ref": f"#/components/schemas/{component}"}
        for (name, field_name), schema in RESPONSE_FIELDS.items():
            if name in schemas:
                schemas[name]["properties"][field_name] = copy.deepcopy(schema)
        for schema in schemas.values():
            tenant = schema.get("properties", {}).get("tenant")
            if isinstance(tenant, dict):
                tenant.update(self.body_tenant_schema(nullable=bool(tenant.get("nullable"))))
                tenant["description"] = self.tenant_description()
        for name in sorted(self.tenant_route_bodies):
            variant = copy.deepcopy(schemas[name])
            tenant = variant.get("properties", {}).get("tenant")
            if isinstance(tenant, dict):
                tenant.pop("enum", None)
                tenant["description"] = IGNORED_TENANT
            schemas[name + TENANT_ROUTE_SUFFIX] = variant
        paths: dict[str, Any] = self.spec._paths
        if self.facts.tenants is not None and not self.facts.tenants:
            # This agent serves no tenant besides the default: every tenant route would only answer 400.
            for path in [p for p in paths if p.startswith(self.facts.prefix + "/{tenant}/")]:
                del paths[path]
        self._prune_schemas(paths)
        used = {
            tag
            for item in paths.values()
            for op in item.values()
            if isinstance(op, dict)
            for tag in op.get("tags", [])
        }
        self.spec._tags[:] = [
            {"name": name, "description": text} for name, text in TAGS.items() if name in used
        ]

    def _prune_schemas(self, paths: Mapping[str, Any]) -> None:
        """Drop component schemas nothing refers to: flask-smorest registers its own error and pagination
        schemas up front, and this binding sends neither."""
        schemas = self.spec.components.schemas
        prefix = "#/components/schemas/"
        reached: set[str] = set()
        pending = list(_refs(paths))
        while pending:
            ref = pending.pop()
            name = ref[len(prefix) :] if ref.startswith(prefix) else None
            if name is None or name in reached or name not in schemas:
                continue
            reached.add(name)
            pending.extend(_refs(schemas[name]))
        for name in [n for n in schemas if n not in reached]:
            del schemas[name]


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


def _unwrap(text: str) -> str:
    """A docstring's description as one line per paragraph, as the document had it before docstrings
    carried it (Markdown reads both alike)."""
    return "\n\n".join(
        " ".join(line.strip() for line in para.splitlines()) for para in text.strip().split("\n\n")
    )
