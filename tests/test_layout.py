"""The architecture as tests: the layer order pyproject.toml's import-linter contract writes (run here with
`lint-imports`), one top-level module besides the entry point, no import cycle inside repro/ (function-level
imports included), and the light entry points stay torch-free."""

import functools
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from import_graph import cycles, import_graph  # tests/import_graph.py

from checkout import REPO_ROOT

# On PATH, else beside the interpreter running the suite (a venv that is not activated, a git worktree's checkout)
LINT_IMPORTS = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")


def lint_imports(config: str | None = None) -> subprocess.CompletedProcess:
    # --config: import-linter 2.6 refuses a positional config file; 2.17 takes either
    args = [LINT_IMPORTS, "--no-cache"] + (["--config", config] if config else [])
    return subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


def test_every_import_keeps_the_layer_order_of_the_contract():
    out = lint_imports()
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "1 kept, 0 broken" in out.stdout


def test_the_contract_breaks_on_an_import_up_a_layer(tmp_path):
    """The same contract with two layers swapped (the command line below the building blocks) must fail."""
    doc = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    contract = doc["tool"]["importlinter"]["contracts"][0]
    layers = contract["layers"]
    top, bottom = layers.index("repro.cli"), layers.index("repro.core")
    layers[top], layers[bottom] = layers[bottom], layers[top]
    config = tmp_path / "swapped.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "repro"\n\n[[tool.importlinter.contracts]]\n'
        'name = "swapped"\ntype = "layers"\nlayers = [\n' + "".join(f'"{layer}",\n' for layer in layers) + "]\n"
    )
    out = lint_imports(str(config))
    assert out.returncode == 1 and "BROKEN" in out.stdout, out.stdout[-2000:]
    assert "repro.cli" in out.stdout


def test_the_contract_places_every_package_and_one_top_level_module():
    """Every package of repro/ is in a layer, and pipeline.py is the only module at the top level."""
    layers = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {f"repro.{p.name}" for p in (REPO_ROOT / "repro").iterdir() if (p / "__init__.py").exists()}
    assert packages - placed == set(), f"packages in no layer: {sorted(packages - placed)}"
    modules = sorted(p.name for p in (REPO_ROOT / "repro").glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "pipeline.py"]


# Where the package may write the environment: only for the processes it starts (issue: settings reach code as
# typed arguments). Each entry: the module, and why.
ENVIRONMENT_WRITERS = {
    "repro/runtime/memory.py": "glibc's allocator thresholds, read by every process this one starts",
    "repro/runtime/numerics.py": "cuBLAS's workspace, read when CUDA starts here or in a child",
    "repro/runtime/compile_cache.py": "inductor's cache folder while a run trains, read by torch.compile here and "
    "by the compile workers it starts",
    "repro/execution/workers.py": "a worker sets its own environment as it starts, before CUDA",
    "repro/bench/kill_resume.py": "the environment of the child process it spawns",
    "repro/cli/common.py": "removes an inherited COLUMNS or LINES of 0, which rich (here and in every child) "
    "would take as a terminal zero cells wide",
}
WRITE = re.compile(
    r"os\.environ\[[^]]+\]\s*=(?!=)|os\.environ\.(?:update|setdefault|pop)\(|os\.(?:putenv|unsetenv)\(|"
    r"\bdel os\.environ\[|"
    r"\benv\[[^]]+\]\s*=(?!=)"
)


def test_the_environment_is_written_only_where_a_child_process_starts():
    writers = {}
    for path in sorted((REPO_ROOT / "repro").rglob("*.py")):
        found = [n for n, line in enumerate(path.read_text().splitlines(), 1) if WRITE.search(line)]
        if found:
            writers[str(path.relative_to(REPO_ROOT))] = found
    assert set(writers) <= set(ENVIRONMENT_WRITERS), {k: v for k, v in writers.items() if k not in ENVIRONMENT_WRITERS}
    assert WRITE.search('os.environ["X"] = "1"') and WRITE.search("os.environ.update(env)")
    assert WRITE.search('del os.environ["X"]')
    assert not WRITE.search('os.environ.get("X")') and not WRITE.search('os.environ["X"] == "1"')


# ---------------------------------------------------------------- prose that names code

DOTTED = re.compile(r"\brepro(?:\.[A-Za-z_]\w*)+")
# "repro.<x>" that are file names, not modules: the log, the Apptainer image, a marker, the container's base image.
NOT_MODULES = {"repro.log", "repro.sif", "repro.bytes", "repro.base"}
NAMING = [
    "repro/**/*.py",
    "repro/**/*.toml",
    "repro/**/*.j2",
    "tests/**/*.py",
    "docs/**/*.md",
    "README.md",
    "pyproject.toml",
]


@functools.cache
def _top_level_names(path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments, imports)."""
    import ast

    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def unresolved(dotted: str) -> str | None:
    """Why `repro.a.b[.name]` names nothing in this checkout (None when it names a module, or a name the
    longest module it starts with defines at its top level)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):  # the longest prefix that is a module; repro/__init__.py at last
        base = REPO_ROOT.joinpath(*parts[:end])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            break
    rest = parts[end:]
    if rest and rest[0] not in _top_level_names(module):
        return f"{'.'.join(parts[:end])} defines no {rest[0]}"
    return None


def _prose(path) -> list[tuple[int, str]]:
    """(line, text) of what a file says in words: a Python file's comments and strings (code that names a
    missing attribute fails when it runs), every line of any other file."""
    import io
    import tokenize

    if path.suffix != ".py":
        return list(enumerate(path.read_text(errors="replace").splitlines(), 1))
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [(t.start[0], t.string) for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def test_every_dotted_name_in_comments_and_docs_names_code_that_exists():
    stale = {}
    files = {f for pattern in NAMING for f in REPO_ROOT.glob(pattern)} - {REPO_ROOT / "tests" / "test_layout.py"}
    for path in sorted(files):
        for n, text in _prose(path):
            for name in DOTTED.findall(text):
                if ".".join(name.split(".")[:2]) not in NOT_MODULES and (why := unresolved(name)):
                    stale[f"{path.relative_to(REPO_ROOT)}:{n}: {name}"] = why
    assert not stale, "\n".join(f"{k} ({v})" for k, v in stale.items())


def test_a_stale_dotted_name_is_found():
    assert unresolved("repro.plan.manifest.with_profiles") is None and unresolved("repro.cli") is None
    assert unresolved("repro.manifest.load_profiles") == "repro defines no manifest"
    assert unresolved("repro.plan.manifest.load_profiles") == "repro.plan.manifest defines no load_profiles"


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_cycle_inside_repro():
    found = cycles(import_graph())
    assert found == [], "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    "module",
    [
        "repro.cli",
        "repro.report",
        "repro.report.summary",
        "repro.plan.manifest",
        "repro.claims",
        "repro.results.measurements",
        "repro.results",
        "repro.results.frames",
        "repro.report.compare",
        "repro.cost.estimate",
        "repro.cost.plan",
        "repro.cost.tables",
        "repro.execution",
        "repro.execution.options",
    ],
)
@pytest.mark.slow
def test_light_modules_do_not_import_torch(module):
    code = f"import sys, {module}; bad = [m for m in ('torch', 'torchvision') if m in sys.modules]; print(bad)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"importing {module} pulls in {out.stdout.strip()}"
