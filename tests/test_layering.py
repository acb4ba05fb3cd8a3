"""Dependencies point one way: stores know nothing of quineling; the runtime imports no backend, Flask or
marshmallow; the protocol layer never reaches into a backend. Only app.py and wsgi.py know every layer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RULES = {
    "stores": ("quineling", "flask", "flask_smorest", "marshmallow"),
    "quineling/runtime": ("flask", "flask_smorest", "marshmallow", "redis", "stores.memory", "stores.redis",
                          "quineling.a2a", "quineling.app"),
    "quineling/a2a": ("redis", "stores.memory", "stores.redis", "fakeredis"),
}  # fmt: skip
# The runtime's zero-argument default store is the embedded memory backend, imported lazily in one place.
ALLOWED = {("quineling/runtime/runtime.py", "stores.memory")}


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def forbidden(module: str, banned: tuple[str, ...]) -> bool:
    return any(module == b or module.startswith(b + ".") for b in banned)


@pytest.mark.parametrize("package", sorted(RULES))
def test_package_respects_layering(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"{package} has no modules"
    violations = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in files
        for module in imports_of(path)
        if forbidden(module, RULES[package]) and (str(path.relative_to(ROOT)), module) not in ALLOWED
    ]
    assert violations == []
