"""Dependencies point one way. Layers, lowest first: ``stores`` (knows nothing of quineling); the protocol's
vocabulary (``quineling.protocol``: states, the error table, the v0.3 names; standard library only) beside
the runtime (pure: no backend, Flask or marshmallow), the syntax of hosts and origins (``quineling.network``)
and what the app may ask of its worker (``quineling.worker_state``); authentication and observation; the
settings; the protocol server and the client (never reaching into a backend); the composition root
(``quineling.app``); the gunicorn process (``quineling.server``), which loads the app and which only the
command line imports; then the command line and ``wsgi.py``. A module never imports a higher layer, and no
package has an import cycle, counting imports inside functions too (an import moved into a function to dodge a
cycle is still a cycle)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    *sorted((ROOT / "stores").rglob("*.py")),
    *sorted((ROOT / "quineling").rglob("*.py")),
    ROOT / "wsgi.py",
]

RULES = {
    "stores": ("quineling", "flask", "flask_smorest", "marshmallow"),
    # The vocabulary the server, the client and the command line share: nothing of any of them, no web
    # framework, no HTTP client, no store.
    "quineling/protocol": ("flask", "werkzeug", "flask_smorest", "marshmallow", "httpx", "httpx_sse", "redis",
                           "fakeredis", "stores", "quineling.a2a", "quineling.client", "quineling.cli",
                           "quineling.cli_a2a", "quineling.app", "quineling.auth", "quineling.settings",
                           "quineling.observe", "quineling.runtime", "quineling.server"),
    "quineling/runtime": ("flask", "flask_smorest", "marshmallow", "redis", "stores.memory", "stores.redis",
                          "quineling.a2a", "quineling.app", "quineling.server"),
    "quineling/a2a": ("redis", "stores.memory", "stores.redis", "fakeredis", "gunicorn", "gevent",
                      "quineling.server"),
    # Metrics and logs know nothing of the settings or the process: the gunicorn master's part in them is the
    # process layer's (quineling.server.metrics_dir, quineling.server.gunicorn_log).
    # The JSON-RPC core both adapters (the Flask view, the lean WSGI path) stand on: no web framework of its own.
    "quineling/a2a/rpc.py": ("flask", "werkzeug", "flask_smorest", "marshmallow"),
    # The gRPC edge: no web framework, nothing of the HTTP edge (what both need is below them, once).
    "quineling/a2a/grpc": ("flask", "werkzeug", "flask_smorest", "marshmallow", "quineling.a2a.http"),
    "quineling/observe": ("flask", "werkzeug", "flask_smorest", "marshmallow", "redis", "stores.memory",
                          "stores.redis", "quineling.a2a", "quineling.app", "quineling.settings", "quineling.server",
                          "gunicorn", "gevent"),
    "quineling/auth": ("flask", "werkzeug", "flask_smorest", "marshmallow", "redis", "stores", "quineling.a2a",
                       "quineling.app", "quineling.settings", "quineling.runtime", "quineling.server"),
    # The settings: values, their validation and what they build (an authenticator); no process code, no web
    # framework, no store, nothing above them.
    "quineling/settings.py": ("flask", "werkzeug", "flask_smorest", "marshmallow", "redis", "gunicorn", "gevent",
                              "stores", "quineling.a2a", "quineling.app", "quineling.client", "quineling.cli",
                              "quineling.observe", "quineling.runtime", "quineling.server", "quineling.worker_state"),
    # The client calls other agents: no web framework and nothing of this server; shared state goes through
    # the stores layer's public surface (never a backend module, never the Redis driver itself).
    "quineling/client": ("flask", "werkzeug", "flask_smorest", "marshmallow", "redis", "fakeredis",
                         "stores.memory", "stores.redis", "stores.redis.connection", "quineling.a2a",
                         "quineling.app", "quineling.auth", "quineling.settings", "quineling.runtime", "quineling.cli",
                         "quineling.server"),
}  # fmt: skip
# The runtime's zero-argument default store is the embedded memory backend, imported lazily in one place.
ALLOWED = {("quineling/runtime/runtime.py", "stores.memory")}
# Modules of the standard library only: read by the gunicorn master, the lean worker and every layer above.
# (quineling.worker_state too, but for gevent, which it imports only once a gevent worker has patched it in.)
STANDARD_LIBRARY_ONLY = {
    "quineling/network.py": (),
    "quineling/worker_state.py": ("gevent",),
    "quineling/server/request_head.py": (),
}
# Who may import what: the process layer only itself and the command line (the entry of `quineling serve`;
# deploy/gunicorn.conf.py too, outside the package), gunicorn only the process layer, and gevent besides it only
# quineling.worker_state, where the app asks for a read deadline in the worker's model.
IMPORTED_ONLY_BY = {
    "quineling.server": ("quineling.server", "quineling.cli"),
    "gunicorn": ("quineling.server",),
    "gevent": ("quineling.server", "quineling.worker_state"),
    # grpcio and the generated code: the gRPC edge and the process that serves it, nothing else (the grpc
    # extra is optional for everything else).
    "grpc": ("quineling.a2a.grpc", "quineling.server.grpc_server"),
    "grpc_status": ("quineling.a2a.grpc",),
    "grpc_health": ("quineling.server.grpc_server",),
    "a2a": ("quineling.a2a.grpc", "quineling.server.grpc_server"),
}

# Layer of each module by its longest matching name prefix; an import may only point to the same or a lower
# layer (the same layer only inside one package, which the cycle check covers).
LAYERS = {
    "stores": 0,
    "quineling.version": 0,  # the package version: a constant, imports nothing; any layer may report it
    "quineling.protocol": 1,  # the shared vocabulary: standard library only
    "quineling.runtime": 1,
    "quineling.network": 1,  # hosts, origins, loopback: standard library only
    "quineling.worker_state": 1,  # what the app asks of its worker, recorded by the process layer's hooks
    "quineling.auth": 2,  # authentication: no web framework, no store, nothing of the protocol
    "quineling.observe": 2,  # metrics and logs: no web framework, nothing of the protocol, no settings
    "quineling.settings": 3,  # the settings: the auth policy and the network syntax below them
    "quineling.a2a": 4,
    "quineling.client": 4,  # calls other agents; only the stores layer below it
    "quineling.app": 5,
    "quineling.server": 6,  # the gunicorn process: options, hooks, the lean worker; loads the app
    "quineling.cli": 7,
    "quineling": 7,  # the package's public surface re-exports create_app
    "wsgi": 8,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in SOURCES}


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth of the file, as absolute names; ``from pkg import x``
    names ``pkg.x`` when that is a module of ours."""
    names: set[str] = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                names.add(candidate if candidate in MODULES else base)
    return names


def forbidden(module: str, banned: tuple[str, ...]) -> bool:
    return any(module == b or module.startswith(b + ".") for b in banned)


def layer(module: str) -> int | None:
    matches = [prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")]
    return LAYERS[max(matches, key=len)] if matches else None


def internal_graph() -> dict[str, set[str]]:
    return {
        name: {m for m in imports_of(path) if m in MODULES and m != name} for name, path in MODULES.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", sorted(RULES))
def test_package_respects_layering(package: str) -> None:
    where = ROOT / package
    files = [where] if where.is_file() else sorted(where.rglob("*.py"))
    assert files, f"{package} has no modules"
    violations = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in files
        for module in imports_of(path)
        if forbidden(module, RULES[package]) and (str(path.relative_to(ROOT)), module) not in ALLOWED
    ]
    assert violations == []


@pytest.mark.parametrize("path", sorted(STANDARD_LIBRARY_ONLY))
def test_module_imports_the_standard_library_only(path: str) -> None:
    outside = sorted(
        module
        for module in imports_of(ROOT / path)
        if module.partition(".")[0] not in sys.stdlib_module_names
        and module != "__future__"
        and not forbidden(module, STANDARD_LIBRARY_ONLY[path])
    )
    assert outside == []


@pytest.mark.parametrize("imported", sorted(IMPORTED_ONLY_BY))
def test_the_process_layer_is_imported_only_from_above(imported: str) -> None:
    """The app never imports the gunicorn process, nor gunicorn: what it asks of its worker goes through
    quineling.worker_state."""
    importers = [
        f"{name} imports {module}"
        for name, path in MODULES.items()
        if not forbidden(name, IMPORTED_ONLY_BY[imported])
        for module in imports_of(path)
        if forbidden(module, (imported,))
    ]
    assert importers == []


# The JSON-RPC envelope is judged and answered in one place: each adapter imports the core and leaves the
# envelope's parsing to it (no adapter parses a body as an envelope itself).
RPC_CORE = "quineling.a2a.rpc"
RPC_ADAPTERS = ("quineling/a2a/http/jsonrpc.py", "quineling/a2a/http/lean_jsonrpc.py")


def parses_envelopes(path: Path) -> bool:
    """Whether the file calls some ``parse(..., envelope=...)`` itself."""
    return any(
        isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "parse"
        and any(keyword.arg == "envelope" for keyword in node.keywords)
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
    )


@pytest.mark.parametrize("adapter", RPC_ADAPTERS)
def test_jsonrpc_adapters_stand_on_one_core(adapter: str) -> None:
    path = ROOT / adapter
    assert RPC_CORE in imports_of(path)
    assert not parses_envelopes(path)
    assert parses_envelopes(MODULES[RPC_CORE])


# The protocol layer knows no transport: Flask, werkzeug, flask-smorest and marshmallow are its HTTP edge's
# (quineling/a2a/http/), and nothing below the edge reaches up into it. One exception: the errors module maps a
# werkzeug HTTPException (a 413 raised while a view reads its body) to the A2A error of the same status,
# wherever it is caught — the transport-free JSON-RPC core included.
WEB_FRAMEWORK = ("flask", "werkzeug", "flask_smorest", "marshmallow")
HTTP_EDGE = "quineling.a2a.http"
WEB_ALLOWED = {("quineling.a2a.errors", "werkzeug.exceptions")}


def test_only_the_http_edge_knows_the_web_framework() -> None:
    offenders = [
        f"{name} imports {module}"
        for name, path in MODULES.items()
        if name.startswith("quineling.a2a.") and not forbidden(name, (HTTP_EDGE,))
        for module in imports_of(path)
        if (forbidden(module, WEB_FRAMEWORK) and (name, module) not in WEB_ALLOWED)
        or forbidden(module, (HTTP_EDGE,))
    ]
    assert offenders == []
    assert any(forbidden(module, WEB_FRAMEWORK) for module in imports_of(MODULES[HTTP_EDGE + ".jsonrpc"]))


def test_no_import_cycles() -> None:
    assert cycles(internal_graph()) == []


def test_no_import_points_up() -> None:
    upward = [
        f"{importer} (layer {layer(importer)}) imports {imported} (layer {layer(imported)})"
        for importer, imported_modules in internal_graph().items()
        for imported in imported_modules
        if (layer(importer) or 0) < (layer(imported) or 0)
    ]
    assert upward == []


def test_the_checks_can_fail() -> None:
    """The cycle finder and the layer map see what they must: a two-module cycle, and every module placed."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert [name for name in MODULES if layer(name) is None] == []
    assert layer("quineling.a2a.service") > layer("stores.base")  # type: ignore[operator]
    assert forbidden("quineling.a2a.service", RULES["quineling/client"])
    assert forbidden("flask", RULES["quineling/client"])
    assert not forbidden("stores", RULES["quineling/client"])
    assert forbidden("quineling.client.v03", RULES["quineling/protocol"])
    assert forbidden("httpx", RULES["quineling/protocol"])
    assert layer("quineling.protocol.v03") < layer("quineling.a2a.errors")  # type: ignore[operator]
    assert (
        layer("quineling.settings") < layer("quineling.a2a.http.binding") < layer("quineling.server.options")
    )  # type: ignore[operator]
    assert layer("quineling.app") < layer("quineling.server.lean_worker") < layer("quineling.cli")  # type: ignore[operator]
    process = IMPORTED_ONLY_BY["quineling.server"]
    assert forbidden("quineling.server.hooks", ("quineling.server",)) and forbidden(
        "gevent.socket", ("gevent",)
    )
    assert not forbidden("quineling.serverless", ("quineling.server",))
    assert forbidden("quineling.cli", process) and not forbidden("quineling.cli_a2a", process)
    assert forbidden("werkzeug.exceptions", RULES["quineling/a2a/rpc.py"])
