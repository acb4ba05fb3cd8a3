"""``README.md`` is executable and its configuration table is the code's.

* Every ``curl`` in an ``sh`` fence is parsed (method, URL, headers, body; ``$VAR`` expanded as a shell
  would, outside single quotes) and sent over HTTP to a served app; the `` ```json answer `` after it must be
  contained in the real body, and the `` ```text answer `` of a stream must match its ``data:`` events.
  ``VAR=$(curl … | python3 -c '…')`` runs the Python with the body on stdin and keeps its output in ``VAR``,
  as the shell would; answers may use ``{{VAR}}``.
* The configuration table lists exactly the ``QUINELING_*`` variables the server reads (``Settings`` plus any
  direct environment read in the product code), each with its real default; variables read only by tests and
  CI are listed in the Tests section instead.
"""

from __future__ import annotations

import ast
import dataclasses
import http.client
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from quineling.config import ENV_PREFIX, Settings, load_settings
from tests.docs.examples import ROOT, DocError, Document, Fence, fill, mismatches, parse_json
from tests.docs.helper import served_app

README = "README.md"
ORIGIN = "http://127.0.0.1:8049"  # what the README's commands address; the test serves the app elsewhere
VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
CAPTURE = re.compile(r"([A-Z_][A-Z0-9_]*)=\$\((.*)\)", re.DOTALL)


# ------------------------------------------------------------------------------------------ shell parsing


def shell_commands(fence: Fence) -> list[tuple[int, str]]:
    """``(line, command)`` of each command in an ``sh`` fence: newlines inside quotes and after a backslash
    continue a command (the backslash-newline is dropped, as the shell does); ``#`` lines are comments."""
    commands: list[tuple[int, str]] = []
    current, quote, start = "", "", 0
    lines = fence.body.split("\n")
    for offset, line in enumerate(lines):
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not current:
            start = fence.line + 1 + offset
        for char in line:
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            current += char
        if quote:
            current += "\n"
        elif current.endswith("\\"):
            current = current[:-1]
        else:
            commands.append((start, current.strip()))
            current = ""
    if current:
        raise DocError(f"line {start}: unterminated quote in an sh fence")
    return commands


def expand(text: str, variables: dict[str, str], where: str) -> str:
    """``$VAR`` and ``${VAR}`` replaced outside single quotes, as the shell expands them."""
    out, quote, i = [], "", 0
    while i < len(text):
        char = text[i]
        if char == "'" and quote != '"':
            quote = "" if quote == "'" else "'"
        elif char == '"' and quote != "'":
            quote = "" if quote == '"' else '"'
        if char == "$" and quote != "'":
            match = VARIABLE.match(text, i)
            if match:
                name = match[1] or match[2]
                if name not in variables:
                    raise DocError(f"{where}: ${name} is used before a command sets it")
                out.append(variables[name])
                i = match.end()
                continue
        out.append(char)
        i += 1
    return "".join(out)


@dataclass(slots=True)
class Curl:
    line: int
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    stream: bool = False
    capture: tuple[str, str] | None = None  # (variable, python code) of VAR=$(curl … | python3 -c '…')


def parse_curl(line: int, command: str, variables: dict[str, str], where: str) -> Curl:
    """The request a ``curl`` command line sends (only the options the README uses are understood)."""
    capture_name = None
    match = CAPTURE.fullmatch(command)
    if match:
        capture_name, command = match[1], match[2]
    tokens = shlex.split(expand(command, variables, where))
    capture = None
    if "|" in tokens:
        cut = tokens.index("|")
        tokens, pipe = tokens[:cut], tokens[cut + 1 :]
        if capture_name is None or len(pipe) != 3 or pipe[:2] != ["python3", "-c"]:
            raise DocError(f"{where}: only VAR=$(curl … | python3 -c '…') may use a pipe")
        capture = (capture_name, pipe[2])
    elif capture_name is not None:
        raise DocError(f"{where}: a $(…) capture must pipe into python3 -c")
    if not tokens or tokens[0] != "curl":
        raise DocError(f"{where}: not a curl command: {command[:60]!r}")
    curl = Curl(line, "", "", capture=capture)
    method, rest = None, tokens[1:]
    while rest:
        token = rest.pop(0)
        if token in ("-X", "-H", "-d") and not rest:
            raise DocError(f"{where}: {token} needs a value")
        if token == "-X":
            method = rest.pop(0)
        elif token == "-H":
            name, _, value = rest.pop(0).partition(":")
            curl.headers[name.strip()] = value.strip()
        elif token == "-d":
            curl.body = rest.pop(0)
        elif re.fullmatch(r"-[sN]+", token):
            curl.stream = curl.stream or "N" in token
        elif token.startswith(ORIGIN + "/") and not curl.url:
            curl.url = token
        else:
            raise DocError(f"{where}: curl option or argument {token!r} is not one the test understands")
    if not curl.url:
        raise DocError(f"{where}: curl without a {ORIGIN}/… URL")
    curl.method = method or ("POST" if curl.body is not None else "GET")
    return curl


# ------------------------------------------------------------------------------------------------ running


@dataclass(slots=True)
class Reply:
    curl: Curl
    status: int
    headers: dict[str, str]
    body: str


class Stream:
    """An open SSE response: the first event is read at once, the rest when the README shows them."""

    def __init__(self, curl: Curl, connection: http.client.HTTPConnection, response: Any) -> None:
        self.curl, self.connection, self.response = curl, connection, response
        self.events: list[Any] = []
        self.read(until_first=True)

    def read(self, until_first: bool = False) -> None:
        while True:
            raw = self.response.readline()
            if not raw:
                return
            text = raw.decode("utf-8").rstrip("\n")
            if text.startswith("data: "):
                self.events.append(json.loads(text[len("data: ") :]))
                if until_first:
                    return

    def finish(self) -> list[Any]:
        self.read()
        self.connection.close()
        return self.events


def _send(origin: str, curl: Curl, where: str) -> tuple[Reply | None, Stream | None]:
    target = urlsplit(origin)
    path = curl.url[len(ORIGIN) :]
    connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
    body = curl.body.encode("utf-8") if curl.body is not None else None
    connection.request(curl.method, path, body=body, headers=curl.headers)
    response = connection.getresponse()
    if response.status != 200:
        text = response.read().decode("utf-8", "replace")
        connection.close()
        raise DocError(f"{where}: {curl.method} {path} answered HTTP {response.status}: {text[:300]}")
    if response.getheader("Content-Type", "").startswith("text/event-stream"):
        if not curl.stream:
            raise DocError(f"{where}: a stream needs curl -N, or curl buffers it")
        return None, Stream(curl, connection, response)
    reply = Reply(curl, response.status, dict(response.getheaders()), response.read().decode("utf-8"))
    connection.close()
    return reply, None


@dataclass(slots=True)
class ReadmeRun:
    replies: list[Reply] = field(default_factory=list)
    streams: list[tuple[Curl, list[Any]]] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)
    answers_checked: int = 0


def run_readme(doc: Document, origin: str, variables: dict[str, str] | None = None) -> ReadmeRun:
    """Run every curl of ``doc`` against ``origin``; ``variables`` are set before the first, as a reader's
    shell would have them (docs/security.md's ``TOKEN``)."""
    run = ReadmeRun(variables=dict(variables or {}))
    last: Reply | None = None
    stream: Stream | None = None
    for fence in doc.fences:
        where = doc.where(fence.line)
        if fence.language == "sh":
            commands = shell_commands(fence)
            curls = [c for c in commands if c[1].startswith("curl ") or CAPTURE.fullmatch(c[1])]
            if not curls:
                last = None
                continue
            if len(curls) != len(commands):
                raise DocError(f"{where}: a fence with curl commands holds only curl commands")
            for line, command in curls:
                here = doc.where(line)
                curl = parse_curl(line, command, run.variables, here)
                reply, opened = _send(origin, curl, here)
                if opened is not None:
                    if stream is not None:
                        raise DocError(f"{here}: the earlier stream's events were never shown")
                    stream, last = opened, None
                    continue
                assert reply is not None
                run.replies.append(reply)
                last = reply
                if curl.capture is not None:
                    name, code = curl.capture
                    done = subprocess.run(
                        [sys.executable, "-c", code],
                        input=reply.body,
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )
                    if done.returncode != 0:
                        raise DocError(f"{here}: the python3 -c step failed: {done.stderr}")
                    run.variables[name] = done.stdout.strip()
                    last = None  # its output went into the variable, not to the reader
        elif "answer" in fence.tags and fence.language in ("json", "text"):
            shown_vars: dict[str, Any] = dict(run.variables)
            if fence.language == "json":
                if last is None:
                    raise DocError(f"{where}: a json answer must follow a curl whose output is printed")
                shown = fill(parse_json(fence.body, where), shown_vars)
                problems = mismatches(
                    shown, parse_json(last.body, f"the answer to {doc.where(last.curl.line)}")
                )
                last = None
            else:
                if stream is None:
                    raise DocError(f"{where}: a text answer shows the events of an open stream")
                shown = [
                    fill(parse_json(line[len("data: ") :], where), shown_vars)
                    for line in fence.body.splitlines()
                    if line.startswith("data: ")
                ]
                events = stream.finish()
                run.streams.append((stream.curl, events))
                problems = mismatches(shown, events)
                stream = None
            if problems:
                raise DocError(
                    f"{where}: the answer shown differs from the real one:\n  " + "\n  ".join(problems)
                )
            run.answers_checked += 1
        else:
            last = None
    if stream is not None:
        stream.connection.close()
        raise DocError(f"{doc.path.name}: a stream was opened but its events are never shown")
    return run


@pytest.fixture(scope="module")
def readme() -> Document:
    return Document.load(README)


@pytest.fixture(scope="module")
def readme_run(readme: Document) -> Iterator[ReadmeRun]:
    # Short keep-alives and stream lifetime only bound how long a wrong example could hang the test.
    with served_app({"keepalive_seconds": 1, "subscribe_max_seconds": 20}) as origin:
        yield run_readme(readme, origin)


@pytest.mark.slow  # serves the app over HTTP
def test_every_curl_in_the_readme_gives_the_answer_shown(readme_run: ReadmeRun) -> None:
    methods = {(r.curl.method, urlsplit(r.curl.url).path.rsplit(":", 1)[-1]) for r in readme_run.replies}
    # The HTTP+JSON examples the README promises: send, get, list, cancel and subscribe.
    assert ("POST", "send") in methods and ("POST", "cancel") in methods
    assert any(r.curl.method == "GET" and "/a2a/rest/tasks/" in r.curl.url for r in readme_run.replies)
    assert any(r.curl.url.startswith(f"{ORIGIN}/a2a/rest/tasks?") for r in readme_run.replies)
    assert [c.url.endswith(":subscribe") for c, _ in readme_run.streams] == [True]
    rest = [r for r in readme_run.replies if "/a2a/" in r.curl.url]
    assert rest and all(r.curl.headers.get("A2A-Version") == "1.0" for r in rest)
    assert readme_run.answers_checked >= 10


def _card(readme_run: ReadmeRun, versioned: bool) -> Reply:
    (reply,) = [
        r
        for r in readme_run.replies
        if r.curl.url.endswith("/.well-known/agent-card.json")
        and ("A2A-Version" in r.curl.headers) == versioned
    ]
    return reply


@pytest.mark.slow  # serves the app over HTTP
def test_bare_discovery_is_the_superset_card_with_protocol_version_first(readme_run: ReadmeRun) -> None:
    reply = _card(readme_run, versioned=False)
    card = json.loads(reply.body)
    assert next(iter(card)) == "protocolVersion" and card["protocolVersion"] == "0.3"
    assert "supportedInterfaces" in card
    assert reply.headers["Cache-Control"] == "public, max-age=3600"
    assert reply.headers["Vary"] == "A2A-Version" and reply.headers["ETag"]


@pytest.mark.slow  # serves the app over HTTP
def test_a2a_version_1_0_discovery_is_the_pure_card(readme_run: ReadmeRun) -> None:
    card = json.loads(_card(readme_run, versioned=True).body)
    assert not {"protocolVersion", "url", "preferredTransport"} & set(card)


@pytest.mark.slow  # serves the app over HTTP
def test_card_etag_revalidates_and_other_ways_to_the_pure_card() -> None:
    """What the README says in prose around the card examples."""
    with served_app() as origin:
        host = urlsplit(origin)

        def get(path: str, headers: dict[str, str]) -> http.client.HTTPResponse:
            connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            connection.close()
            return response

        etag = get("/.well-known/agent-card.json", {}).getheader("ETag")
        assert get("/.well-known/agent-card.json", {"If-None-Match": etag}).status == 304
        # The query parameter selects the pure card as the header does.
        query = get("/.well-known/agent-card.json?A2A-Version=1.0", {})
        header = get("/.well-known/agent-card.json", {"A2A-Version": "1.0"})
        assert query.getheader("ETag") == header.getheader("ETag") != etag
    for config in ({"card_superset": False}, {"legacy_compat": False}):
        with served_app(config) as origin:
            host = urlsplit(origin)
            connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
            connection.request("GET", "/.well-known/agent-card.json")
            card = json.loads(connection.getresponse().read())
            connection.close()
            assert "protocolVersion" not in card and "supportedInterfaces" in card, config
            versions = {i["protocolVersion"] for i in card["supportedInterfaces"]}
            assert ("0.3" in versions) == config.get("legacy_compat", True), config


def test_readyz_reports_an_unreachable_store() -> None:
    from quineling.app import create_app

    app = create_app(config={"store_url": "redis://127.0.0.1:1/0"})  # nothing listens on port 1
    client = app.test_client()
    assert client.get("/healthz").get_json()["status"] == "ok"
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.get_json() == {"status": "unavailable", "error": "StoreUnavailable"}


# ------------------------------------------------------------------------------------------ configuration


def _section(doc: Document, heading: str) -> str:
    text = doc.text.split(f"\n{heading}\n", 1)[1]
    level = heading.split(" ", 1)[0]
    return re.split(rf"\n#{{1,{len(level)}}} ", text, maxsplit=1)[0]


def _config_table(doc: Document) -> dict[str, str]:
    """``variable -> default cell`` of the configuration table."""
    rows = [line for line in _section(doc, "### Configuration").splitlines() if line.startswith("| `")]
    table: dict[str, str] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        names = re.findall(r"`(QUINELING_[A-Z0-9_]+)`", cells[0])
        assert len(names) == 1, f"one variable per row: {row}"
        assert names[0] not in table, f"{names[0]} is listed twice"
        table[names[0]] = cells[1]
    return table


def _environment_reads(paths: list[Path]) -> set[str]:
    """``QUINELING_*`` names read from the environment by Python code (``os.environ[…]``, ``.get``,
    ``getenv``) — besides what ``Settings`` reads through its prefix."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            args: list[ast.expr] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
                if called in ("get", "getenv", "pop", "setdefault"):
                    args = node.args[:1]
            elif isinstance(node, ast.Subscript):
                args = [node.slice]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    if re.fullmatch(r"QUINELING_[A-Z0-9_]+", arg.value):
                        names.add(arg.value)
    return names


def _product_files() -> list[Path]:
    return [*sorted((ROOT / "quineling").rglob("*.py")), *sorted((ROOT / "stores").rglob("*.py")),
            ROOT / "wsgi.py", *sorted((ROOT / "deploy").glob("*.py"))]  # fmt: skip


def test_configuration_table_lists_every_variable_the_server_reads(readme: Document) -> None:
    settings = {ENV_PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
    read = settings | _environment_reads(_product_files())
    table = _config_table(readme)
    assert sorted(read - set(table)) == [], "read by the server but missing from the README table"
    assert sorted(set(table) - read) == [], "in the README table but not read by the server"
    # Deployment files set variables for the server: each must be one it reads.
    deployed = set()
    for path in sorted(
        p for p in (ROOT / "deploy").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    ):
        deployed |= set(re.findall(r"QUINELING_[A-Z0-9_]+", path.read_text()))
    assert sorted(deployed - read) == []


def test_configuration_table_defaults_are_the_settings_defaults(readme: Document) -> None:
    defaults = Settings()
    for variable, cell in _config_table(readme).items():
        name = variable.removeprefix(ENV_PREFIX).lower()
        if cell == "(none)":
            assert getattr(defaults, name) == "", f"{variable} has a default, the README says none"
            continue
        shown = re.match(r"`([^`]*)`", cell)
        assert shown, f"{variable}: write the default in backticks, or (none): {cell!r}"
        documented = getattr(load_settings(env={variable: shown[1]}), name)
        assert documented == getattr(defaults, name), f"{variable}: README says {shown[1]}"


def _test_only_reads() -> set[str]:
    python = [*sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "bench").rglob("*.py"))]
    names = _environment_reads(python)
    for script in (ROOT / ".ci" / "run", ROOT / "dev"):
        names |= set(re.findall(r"\$\{?(QUINELING_[A-Z0-9_]+)", script.read_text()))
        names |= set(re.findall(r"export (QUINELING_[A-Z0-9_]+)=", script.read_text()))
    return names


def test_test_only_variables_are_in_the_tests_section_not_the_table(readme: Document) -> None:
    settings = {ENV_PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
    test_only = _test_only_reads() - settings
    assert {"QUINELING_TEST_REDIS_URL", "QUINELING_REQUIRE_REDIS", "QUINELING_REQUIRE_INTEROP"} <= test_only
    table = set(_config_table(readme))
    assert not test_only & table
    tests_section = _section(readme, "## Tests") + _section(readme, "## Development")
    missing = sorted(n for n in test_only if f"`{n}`" not in tests_section)
    assert missing == [], "variables read by tests, CI or ./dev must be explained in Tests or Development"
