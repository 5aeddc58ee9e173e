"""The claims package as a whole: its registry, and its imports (torch-free, never the manifest)."""

import subprocess
import sys

import pytest

from repro.claims import RULES
from repro.claims.core import Outcome, Rule
from repro.claims.rules import FAMILIES, build_rules

from import_graph import REPO, import_graph  # tests/import_graph.py


def test_every_family_rule_is_registered_once():
    names = [rule.name for family in FAMILIES for rule in family]
    assert len(names) == len(set(names)) == 29  # 28 for the paper's claims, 1 for the extension
    assert RULES.names() == sorted(names)
    assert all(RULES.get(r.name).config is r.config for family in FAMILIES for r in family)


def test_the_registry_refuses_a_duplicate(monkeypatch):
    rules = build_rules()
    with pytest.raises(KeyError, match="claim rule 'compare' is already registered"):
        rules.register("compare", config=object, doc="")(lambda p, ev: Outcome("reproduced", ""))
    twice = (FAMILIES[0], (Rule("compare", object, lambda p, ev: None, "a second 'compare'"),))
    monkeypatch.setattr("repro.claims.rules.FAMILIES", twice)
    with pytest.raises(KeyError, match="already registered"):
        build_rules()


@pytest.mark.slow  # spawns a Python process (about a second)
def test_importing_claims_leaves_torch_out():
    code = "import sys, repro.claims; print('torch' in sys.modules, 'repro.plan.manifest' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_manifest_imports_the_claims_and_never_the_reverse():
    graph = import_graph()  # no cycle anywhere in repro/: tests/test_layout.py
    assert "repro.claims.core" in graph and "repro.claims" in graph["repro.plan.manifest"]
    assert all("repro.plan.manifest" not in graph[m] for m in graph if m.startswith("repro.claims"))
