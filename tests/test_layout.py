"""The architecture as tests: the layer order the README writes, no import cycle inside repro/ (function-level
imports included), and the light entry points stay torch-free."""

import re
import subprocess
import sys

import pytest
from import_graph import cycles, import_graph, module_names  # tests/import_graph.py

from repro import REPO_ROOT

LAYER_LINE = re.compile(r"^(\d+)\s+(repro/\S.*)$")


def readme_layers(text: str) -> dict[str, int]:
    """'repro/cli/' or 'repro/flops.py' -> its layer, from the README's layer list (How it is organised)."""
    block = text.split("layer  modules (from the top)", 1)[1].split("```", 1)[0]
    layers = {}
    for line in block.strip().splitlines():
        found = LAYER_LINE.match(line.strip())
        assert found, f"README layer list: cannot read {line!r}"
        for place in found[2].split():
            layers[place] = int(found[1])
    return layers


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of a module (repro.cli.tables -> repro/cli/; repro.flops -> repro/flops.py), or None."""
    parts = module.split(".")
    for depth in range(len(parts), 0, -1):
        stem = "/".join(parts[:depth])
        for place in (f"{stem}/", f"{stem}.py"):
            if place in layers:
                return layers[place]
    return layers.get("repro/__init__.py") if module == "repro" else None


def layer_violations(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    out = []
    for module, imported in sorted(graph.items()):
        here = layer_of(module, layers)
        for target in sorted(imported):
            there = layer_of(target, layers)
            if here is not None and there is not None and there > here:
                out.append(f"{module} (layer {here}) imports {target} (layer {there})")
    return out


def test_the_layer_check_finds_an_import_up_a_layer():
    layers = {"repro/a.py": 1, "repro/b/": 2, "repro/__init__.py": 1}
    assert layer_violations({"repro.a": {"repro.b.x"}, "repro.b.x": {"repro.a", "repro"}}, layers) == [
        "repro.a (layer 1) imports repro.b.x (layer 2)"]
    assert layer_of("repro.b.x.y", layers) == 2 and layer_of("repro.c", layers) is None


def test_every_module_imports_only_from_its_layer_or_below_as_the_readme_writes():
    layers = readme_layers((REPO_ROOT / "README.md").read_text())
    unplaced = [m for m in module_names() if layer_of(m, layers) is None]
    assert unplaced == [], f"modules the README's layer list leaves out: {', '.join(unplaced)}"
    broken = layer_violations(import_graph(), layers)
    assert broken == [], "imports up a layer: " + "; ".join(broken)


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
