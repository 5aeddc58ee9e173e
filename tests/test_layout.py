"""The architecture as tests: no import cycle inside repro/ (function-level imports included), and the light
entry points stay torch-free."""

import subprocess
import sys

import pytest
from import_graph import cycles, import_graph  # tests/import_graph.py

from repro import REPO_ROOT


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_cycle_inside_repro():
    found = cycles(import_graph())
    assert found == [], "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", ["repro.cli", "repro.report", "repro.report.summary", "repro.manifest",
                                    "repro.claims", "repro.results", "repro.cost.estimate", "repro.cost.plan",
                                    "repro.cost.tables", "repro.execution", "repro.execution.options"])
@pytest.mark.slow
def test_light_modules_do_not_import_torch(module):
    code = f"import sys, {module}; bad = [m for m in ('torch', 'torchvision') if m in sys.modules]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"importing {module} pulls in {out.stdout.strip()}"
