"""The console's routes in process: the page and its files under a strict CSP that refuses framing, nothing else
of the package served, the Host guard in front, the operator view for QUINELING_OPERATORS only (401 without
a credential when authentication is on), and the page's form of operations is the runtime's sixteen."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from quineling.a2a.http.console import STATIC
from quineling.app import create_app
from quineling.auth.keyfile import add_key
from quineling.runtime.product_operations import ALL_OPERATIONS
from tests.support.messages import SQUARE_SUM, text, user_message

FILES = ("/ui", "/ui/", "/ui/console.js", "/ui/viewer.js", "/ui/console.css")


def client(**config: Any) -> Any:
    return create_app(config={"tenants": "*", **config}).test_client()


@pytest.mark.parametrize("path", FILES)
def test_every_file_is_served_under_a_policy_that_refuses_framing(path: str) -> None:
    answer = client().get(path)
    assert answer.status_code == 200
    policy = answer.headers["Content-Security-Policy"]
    assert (
        "default-src 'self'" in policy
        and "script-src 'self'" in policy
        and "frame-ancestors 'none'" in policy
    )
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_has_no_inline_script_or_style_and_names_no_other_origin() -> None:
    page = client().get("/ui").get_data(as_text=True)
    assert re.findall(r"<script[^>]*>", page) == [
        '<script src="/ui/viewer.js" defer>',
        '<script src="/ui/console.js" defer>',
    ]
    assert "<style" not in page and re.findall(r"<[^>]*\s(?:on\w+|style)=", page) == []
    for name in ("index.html", "console.js", "viewer.js", "console.css"):
        source = (STATIC / name).read_text()
        assert re.findall(r"https?://(?!www\.w3\.org/2000/svg)", source) == [], name
        assert "innerHTML" not in source and "insertAdjacentHTML" not in source and "eval(" not in source, (
            name
        )


@pytest.mark.parametrize("path", ["/ui/index.html", "/ui/../console.py", "/ui/console.py", "/ui/nothing.js"])
def test_nothing_else_of_the_package_is_served(path: str) -> None:
    answer = client().get(path)
    assert answer.status_code == 404
    assert b"import" not in answer.get_data()


def test_a_foreign_host_is_refused_before_the_console() -> None:
    answer = client().get("/ui", headers={"Host": "evil.example"})
    assert answer.status_code == 421


def test_the_operator_view_is_for_the_listed_principals_only(tmp_path: Path) -> None:
    assert client().get("/ui/api/operator").status_code == 403  # nobody by default, even anonymous
    report = client(operators="anonymous").get("/ui/api/operator")
    assert report.status_code == 200
    body = report.get_json()
    assert body["ready"] == {"status": "ok"} and body["limits"]["tasks"] > 0 and body["agents"] == []
    assert report.headers["Content-Security-Policy"]

    keys = tmp_path / "keys"
    alice, bob = add_key(keys, "alice"), add_key(keys, "bob")
    app = client(auth_keys_file=str(keys), operators="alice")
    assert app.get("/ui/api/operator").status_code == 401
    assert app.get("/ui/api/operator", headers={"Authorization": f"Bearer {bob}"}).status_code == 403
    sent = app.post(
        "/a2a/rest/message:send",
        json={"message": user_message(text(SQUARE_SUM))},
        headers={"Authorization": f"Bearer {alice}", "A2A-Version": "1.0"},
    )
    assert sent.status_code == 200
    seen = app.get("/ui/api/operator", headers={"Authorization": f"Bearer {alice}"}).get_json()
    (scope,) = seen["scopes"]
    assert scope["scope"].startswith("alice") and scope["counters"]["tasks"]["used"] == 1
    # The page itself holds no data: it loads without a credential.
    assert app.get("/ui").status_code == 200


def test_same_origin_calls_of_the_page_pass_the_origin_guard() -> None:
    app = client()
    origin = {"Origin": "http://localhost", "Host": "localhost", "A2A-Version": "1.0"}
    sent = app.post(
        "/a2a/rest/message:send", json={"message": user_message(text(SQUARE_SUM))}, headers=origin
    )
    assert sent.status_code == 200
    foreign = app.post(
        "/a2a/rest/message:send",
        json={"message": user_message(text(SQUARE_SUM))},
        headers={**origin, "Origin": "http://evil.example"},
    )
    assert foreign.status_code == 403


def test_the_operation_form_offers_the_sixteen_runtime_operations() -> None:
    source = (STATIC / "console.js").read_text()
    table = source[
        source.index("const OPERATIONS = {") : source.index("};", source.index("const OPERATIONS = {"))
    ]
    assert re.findall(r"^\s+(\w+): \[", table, re.MULTILINE) == list(ALL_OPERATIONS)
    # Each field the form offers for frame is one frame takes.
    frame = json.loads("[" + re.search(r"^\s+frame: \[(.*)\],$", table, re.MULTILINE).group(1) + "]")  # type: ignore[union-attr]
    assert [f[0] for f in frame] == ["artifactId", "phase", "options.budget", "options.crests"]
