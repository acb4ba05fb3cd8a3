"""The HTTP+JSON document is written where the operations are: each view's docstring gives its operation's
summary and description, its ``@blp.doc`` the operation id, tag and its own failures, and a view left
undocumented stops the app from starting rather than serving an operation the document says nothing of."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from flask.views import MethodView
from flask_smorest import Blueprint

from quineling.a2a.http import rest
from quineling.a2a.http.error_answers import ANSWERS_KEY, Answers
from quineling.app import create_app

BASE = "/a2a/rest"


def view_methods() -> Iterator[Any]:
    """Every method function of the binding's views."""
    for _, view in inspect.getmembers(rest, inspect.isclass):
        if issubclass(view, MethodView) and view is not MethodView and view.__module__ == rest.__name__:
            for method in sorted(view.methods or ()):
                yield getattr(view, method.lower())


def served_operations() -> dict[str, dict[str, Any]]:
    doc = create_app().test_client().get(BASE + "/openapi.json").get_json()
    return {
        op["operationId"]: op for item in doc["paths"].values() for op in item.values() if "operationId" in op
    }


def test_each_operation_is_described_by_its_view() -> None:
    served = served_operations()
    seen = set()
    for function in view_methods():
        manual = function._apidoc["manual_doc"]
        name = manual["operationId"]
        seen.add(name)
        operation = served[name]
        summary, _, description = inspect.cleandoc(function.__doc__).partition("\n\n")
        assert operation["summary"] == summary, name
        # The docstring's lines come as one paragraph, then what the document adds (the curl example...).
        assert operation["description"].startswith(" ".join(description.split()) + "\n\n"), name
        assert operation["tags"] == manual["tags"], name
        answers = manual[ANSWERS_KEY]
        assert isinstance(answers, Answers)
        for failure in answers.failures:  # every failure the view names is a documented answer
            response = served[name]["responses"][str(failure.status)]
            line = next(line for line in response["description"].splitlines() if failure.when in line)
            assert line.startswith(f"- `{failure.error.reason}`: "), (
                name,
                failure,
            )  # (maybe after a shared one)
        assert ANSWERS_KEY not in operation  # the view's notes to the document are not part of it
    assert seen == {name for name in served if not name.endswith("ForTenant")}


def test_an_undocumented_view_stops_the_app_from_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    blp = Blueprint("a2a_rest", __name__, url_prefix=BASE)

    @blp.route("/undocumented")
    class Undocumented(MethodView):
        @blp.response(200)
        def get(self) -> dict[str, Any]:
            return {}

    monkeypatch.setattr(rest, "blp", blp)
    with pytest.raises(LookupError, match="GET /a2a/rest/undocumented: document its view"):
        create_app()
