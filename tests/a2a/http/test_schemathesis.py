"""schemathesis over the HTTP+JSON OpenAPI document, every check on: requests generated from the document
(its examples, boundary values of every constraint, then fuzzed valid and invalid ones) go to the app in
process, on the real runtime and the memory store, and every answer must be what the document says —
documented status, media type, headers and schema, `Allow` on 405, never a 5xx, valid requests accepted
and invalid ones refused. A stateful run then follows the document's links (SendMessage's task to GetTask,
CancelTask, SubscribeToTask), so those run on real tasks too.

Bounded for CI (a fixed number of examples per operation, derandomized so a run is reproducible); set
``QUINELING_SCHEMATHESIS_EXAMPLES`` for a larger run, which then draws new random examples each time, e.g.
``QUINELING_SCHEMATHESIS_EXAMPLES=1000 ./dev test tests/a2a/http/test_schemathesis.py``.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import jsonschema
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from quineling.app import create_app
from tests.support.sse import sse_events

EXAMPLES = int(os.environ.get("QUINELING_SCHEMATHESIS_EXAMPLES", "0") or 0)
BOUNDED = EXAMPLES == 0
DOCUMENT = "/a2a/rest/openapi.json"


def load_schema(app: Any) -> Any:
    # One served tenant besides the default, so the tenant routes are in the document too. (Loaded at
    # import: schemathesis.pytest.from_fixture does not work with pytest 9.2.)
    loaded = schemathesis.openapi.from_wsgi(DOCUMENT, app)

    @loaded.hook
    def map_query(context: Any, query: dict[str, Any] | None) -> dict[str, Any] | None:
        # A page token is opaque: any string but one the server issued is refused (400, documented), and
        # a schema cannot say which those are. tests/a2a/test_listing.py covers real tokens.
        if query:
            query.pop("pageToken", None)
        return query

    return loaded


# A subscription to a live task ends after a second (instead of an hour), so the stateful run's
# SubscribeToTask calls come back.
app = create_app(config={"tenants": "alpha", "subscribe_max_seconds": 1, "keepalive_seconds": 0.5})
schema = load_schema(app)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES or 25,
    derandomize=BOUNDED,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
def test_document_describes_the_server(case: Any) -> None:
    response = case.call()
    case.validate_response(response, excluded_checks=excluded_checks(case, response))
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        check_stream(case, response)


# Answers that depend on the task's state, not on the request: a valid CancelTask, SubscribeToTask or
# follow-up message on a task that is already final. Only the stateful run (real task ids) meets them.
STATE_REASONS = {"TASK_NOT_CANCELABLE", "UNSUPPORTED_OPERATION"}
# A refusal a schema cannot rule out: acceptedOutputModes naming no producible type is any list of strings that
# lacks the two (OpenAPI 3.0 has no "contains"); the document declares it.
SEMANTIC_REASONS = {"CONTENT_TYPE_NOT_SUPPORTED"}


class Workflow(schema.as_state_machine()):
    """The stateful phase: SendMessage, then the operations its answer links to (GetTask, CancelTask,
    SubscribeToTask) on the task it created, every check on each step."""

    def validate_response(
        self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any
    ) -> None:
        case.validate_response(
            response,
            additional_checks=additional_checks,
            excluded_checks=excluded_checks(case, response),
            transport_kwargs=kwargs or None,
            recorder=self.recorder,
        )
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            check_stream(case, response)


def excluded_checks(case: Any, response: Any) -> list[Any]:
    """ "A valid request is accepted" does not apply to an operation whose capability this agent's card
    declares off (it documents no success and always fails as documented, which status_code_conformance
    holds it to), nor to a state-dependent refusal (STATE_REASONS). Every other check always runs."""
    declared = case.operation.definition.raw["responses"]
    if not any(status.startswith("2") for status in declared):
        return [positive_data_acceptance]
    if response.status_code == 400 and (
        _reason(response) in STATE_REASONS | SEMANTIC_REASONS or _foreign_context(case)
    ):
        return [positive_data_acceptance]
    return []


def _foreign_context(case: Any) -> bool:
    """A follow-up whose ``contextId`` is not its task's, which the document says is refused (400
    INVALID_PARAMS): whether it is depends on the stored task, so it is looked up."""
    message = case.body.get("message") if isinstance(case.body, dict) else None
    if not isinstance(message, dict):
        return False
    task_id, context_id = message.get("taskId"), message.get("contextId")
    if not (isinstance(task_id, str) and task_id and isinstance(context_id, str) and context_id):
        return False
    tenant = (case.path_parameters or {}).get("tenant") or case.body.get("tenant") or ""
    path = (
        f"/a2a/rest/{tenant}/tasks/{quote(task_id, safe='')}"
        if tenant
        else f"/a2a/rest/tasks/{quote(task_id, safe='')}"
    )
    found = app.test_client().get(path, headers={"A2A-Version": "1.0"})
    return found.status_code == 200 and found.get_json()["contextId"] != context_id


def _reason(response: Any) -> str | None:
    try:
        return str(response.json()["error"]["details"][0]["reason"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


TestWorkflow = Workflow.TestCase
TestWorkflow.settings = settings(
    max_examples=EXAMPLES or 10,
    stateful_step_count=6,
    derandomize=BOUNDED,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def check_stream(case: Any, response: Any) -> None:
    """Each event's data is the JSON object the document's ``x-data-schema`` names for its event type (an
    OpenAPI 3.0 tool checks only the event's fields)."""
    raw = case.operation.schema.raw_schema
    content = case.operation.definition.raw["responses"][str(response.status_code)]["content"]
    by_event = content["text/event-stream"]["schema"]["x-data-schema"]
    events = sse_events(response.content)
    assert events, "a stream answer carries at least one event"
    for kind, data in events:
        target = {**by_event[kind], "components": raw["components"]}
        jsonschema.Draft202012Validator(target).validate(data)
