"""schemathesis over the HTTP+JSON OpenAPI document, every check on: requests generated from the document
(its examples, boundary values of every constraint, then fuzzed valid and invalid ones) go to the app in
process, on the real runtime and the memory store, and every answer must be what the document says —
documented status, media type, headers and schema, `Allow` on 405, never a 5xx, valid requests accepted
and invalid ones refused.

Bounded for CI (a fixed number of examples per operation, derandomized so a run is reproducible); set
``QUINELING_SCHEMATHESIS_EXAMPLES`` for a larger run, which then draws new random examples each time, e.g.
``QUINELING_SCHEMATHESIS_EXAMPLES=1000 ./dev test tests/a2a/test_schemathesis.py``.
"""

from __future__ import annotations

import os
from typing import Any

import jsonschema
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from quineling.app import create_app
from tests.support.sse import sse_events

EXAMPLES = int(os.environ.get("QUINELING_SCHEMATHESIS_EXAMPLES", "0") or 0)
BOUNDED = EXAMPLES == 0
DOCUMENT = "/a2a/rest/openapi.json"


def load_schema() -> Any:
    # One served tenant besides the default, so the tenant routes are in the document too. (Loaded at
    # import: schemathesis.pytest.from_fixture does not work with pytest 9.2.)
    app = create_app(config={"tenants": "alpha"})
    loaded = schemathesis.openapi.from_wsgi(DOCUMENT, app)

    @loaded.hook
    def map_query(context: Any, query: dict[str, Any] | None) -> dict[str, Any] | None:
        # A page token is opaque: any string but one the server issued is refused (400, documented), and
        # a schema cannot say which those are. tests/a2a/test_listing.py covers real tokens.
        if query:
            query.pop("pageToken", None)
        return query

    return loaded


schema = load_schema()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES or 25,
    derandomize=BOUNDED,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
def test_document_describes_the_server(case: Any) -> None:
    declared = case.operation.definition.raw["responses"]
    # An operation whose capability this agent's card declares off documents no success: it always fails
    # as documented (status_code_conformance holds it to that), so "a valid request is accepted" does not
    # apply to it.
    excluded = [] if any(s.startswith("2") for s in declared) else [positive_data_acceptance]
    response = case.call_and_validate(excluded_checks=excluded)
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        check_stream(case, response)


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
