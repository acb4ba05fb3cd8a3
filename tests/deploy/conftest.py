"""The deploy/ tests: the manifests, and the several-host topology of deploy/local/topology.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def load_topology() -> ModuleType:
    """deploy/local/topology.py, the script an operator runs, imported as it is (it is no package)."""
    name = "quineling_local_topology"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DEPLOY / "local" / "topology.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[name]
