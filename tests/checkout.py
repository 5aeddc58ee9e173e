"""The checkout the suite tests: its root, for the files that are not package data (docs, the Dockerfile, CI's
scripts), the package data it reads by path (the manifests, the paper's tables), and the checkout's tools."""

import importlib.util
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = REPO_ROOT / "repro" / "manifests"
PAPER_TABLES = REPO_ROOT / "repro" / "paper_tables"


@cache
def tool(name: str):
    """tools/<name>.py as a module (the writers of the shipped references live there, outside the package)."""
    spec = importlib.util.spec_from_file_location(f"tools_{name}", REPO_ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
