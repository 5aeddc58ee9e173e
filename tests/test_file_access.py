"""Every place the package writes a file, loads a pickle or parses JSON from a file, found by walking its source:
each goes through the one way of doing it (repro.core.fsutil.FolderWriter, repro.data.pickles.load_pickle,
repro.core.jsonfile), or is listed below with why it may not. A new writer, pickle load or JSON read fails here
until it uses the shared one or says why it need not."""

from __future__ import annotations

import ast
from pathlib import Path

import repro

PACKAGE = Path(repro.__file__).parent

# (module, function) -> why it writes without FolderWriter. Everything inside a results folder goes through it.
WRITERS_OUTSIDE = {
    ("repro/core/fsutil.py", "*"): "the writers themselves",
    ("repro/core/cache.py", "write_json"): "the cache folder ($REPRO_CACHE), outside any results folder",
    ("repro/core/cache.py", "write_torch"): "the decoded-dataset and synthetic-data caches, outside any results folder",
    ("repro/train/digit_weights.py", "_pretrain_on"): "the stand-in weights in the cache folder",
    ("repro/execution/files.py", "set_aside"): "renames a file within its own folder; it writes no content",
    ("repro/results/package.py", "build_package"): "the package's temporary staging folder (the archive itself goes "
    "through FolderWriter)",
    ("repro/results/package.py", "_stage"): "copies into the package's temporary staging folder",
    ("repro/cost/plan.py", "write_plan"): "`repro plan --write FILE`: the file the user names",
    ("repro/rho/figure.py", "draw"): "`repro rho --figure FILE`: the file the user names",
    ("repro/measure/model_macs.py", "write_table"): "a maintainer's tool regenerating the package's model_macs.json",
    ("repro/bench/gpu.py", "_run_checks.write"): "`repro bench gpu --out FILE`: the file the user names",
    ("repro/cli/bench_costs.py", "fixed_costs_cmd"): "`repro bench fixed-costs --out FILE`: the file the user names",
    ("repro/bench/smoke.py", "run_smoke"): "the benchmark's own scratch folder",
    ("repro/bench/smoke.py", "append_history"): "the benchmark's history file in docs/",
    ("repro/bench/kill_resume.py", "_spawn"): "the benchmark's own scratch folder",
    ("repro/bench/kill_resume.py", "run_kill_resume"): "the benchmark's own scratch folder",
}

# (module, function) -> why it parses a file's JSON without repro.core.jsonfile (results folders always use it).
JSON_OUTSIDE = {
    ("repro/measure/model_macs.py", "*"): "the package's own model_macs.json",
    ("repro/cost/cpu_reference.py", "*"): "the package's own cpu_reference.json",
    ("repro/cost/gpu_reference.py", "*"): "the package's GPU reference, a maintainer's build of it from "
    "docs/measurements, and device-check files the user names",
    ("repro/data/input_choice.py", "read_choices"): "the package's own input_paths.json",
    ("repro/bench/gpu_calibration.py", "read_calibration"): "a device-check file the user names",
    ("repro/bench/smoke.py", "read_history"): "the benchmark's history file in docs/",
    ("repro/bench/kill_resume.py", "*"): "the benchmark's own scratch files",
}

WRITE_METHODS = {"savefig", "to_csv", "to_parquet", "to_json", "to_pickle", "to_feather", "to_excel"}
ATOMIC = {"atomic_write_bytes", "atomic_write_text", "atomic_write_json"}


def _name(call: ast.Call) -> tuple[str, str]:
    """(the called name, the name it is an attribute of, or "")."""
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr, f.value.id if isinstance(f.value, ast.Name) else ""
    return (f.id if isinstance(f, ast.Name) else ""), ""


def _buffers(function: ast.AST) -> set[str]:
    """Names bound to io.BytesIO() / StringIO() in a function: writing into one writes no file."""
    out = set()
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _name(node.value)[0] in ("BytesIO", "StringIO")
        ):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def _mode(call: ast.Call, at: int) -> str:
    mode = call.args[at] if len(call.args) > at else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return str(mode.value) if isinstance(mode, ast.Constant) else ""


def _writes(call: ast.AST, buffers: set[str]) -> str | None:
    """What kind of file write `call` is, or None."""
    if not isinstance(call, ast.Call):
        return None
    name, owner = _name(call)
    target = (
        call.args[1 if (name, owner) == ("save", "torch") else 0]
        if len(call.args) > 1 or name != "save" and call.args
        else None
    )
    to_buffer = isinstance(target, ast.Name) and target.id in buffers
    if name == "open" and owner in ("", "io", "builtins") and set(_mode(call, 1)) & set("wax+"):
        return "open for writing"
    if name == "open" and owner == "os" and any(f in ast.unparse(call) for f in ("O_WRONLY", "O_RDWR", "O_CREAT")):
        return "os.open for writing"
    if name == "fdopen" and owner == "os" and set(_mode(call, 1)) & set("wax+"):
        return "os.fdopen for writing"
    moves = (name, owner) in (("replace", "os"), ("rename", "os"))
    if moves or (owner == "shutil" and name.startswith(("copy", "move"))):
        return f"{owner}.{name}"
    if name in ("write_text", "write_bytes") and len(call.args) == 1:  # Path's; FolderWriter's take (path, data)
        return f"Path.{name}"
    if name in WRITE_METHODS and call.args and not to_buffer:
        return name
    if (name, owner) == ("save", "torch") and not to_buffer:
        return "torch.save"
    return name if name in ATOMIC else None


def _pickle_load(node: ast.AST) -> str | None:
    """A use of pickle's loaders (a call, a reference, a subclass, an import), or an unsafe load elsewhere."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "pickle"
        and node.attr in ("load", "loads", "Unpickler")
    ):
        return f"pickle.{node.attr}"
    if isinstance(node, ast.ImportFrom) and node.module in ("pickle", "_pickle", "dill", "cloudpickle"):
        return f"from {node.module} import"
    if not isinstance(node, ast.Call):
        return None
    call = node
    name, owner = _name(call)
    if (name, owner) == ("load", "torch"):
        weights_only = next((k.value for k in call.keywords if k.arg == "weights_only"), None)
        return None if isinstance(weights_only, ast.Constant) and weights_only.value is True else "torch.load"
    if name in ("load", "read_pickle") and owner in ("np", "numpy", "pd", "pandas"):
        allow = next((k.value for k in call.keywords if k.arg == "allow_pickle"), None)
        return f"{owner}.{name}" if name == "read_pickle" or isinstance(allow, ast.Constant) and allow.value else None
    return None


def _json_from_file(call: ast.AST) -> str | None:
    if not isinstance(call, ast.Call):
        return None
    name, owner = _name(call)
    if owner != "json" or name not in ("load", "loads"):
        return None
    if name == "load":
        return "json.load"
    text = ast.unparse(call.args[0]) if call.args else ""
    return "json.loads of a file" if any(r in text for r in (".read_text(", ".read_bytes(", ".read(")) else None


def _find(kind) -> list[tuple[str, str, str, int]]:
    """(module, function, what, line) for every call `kind` names, in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).as_posix()

        def walk(node: ast.AST, where: list[str], buffers: set[str]) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    inner = _buffers(child) if not isinstance(child, ast.ClassDef) else buffers
                    walk(child, [*where, child.name], inner)
                    continue
                if what := kind(child, buffers):
                    found.append((module, ".".join(where) or "<module>", what, child.lineno))
                walk(child, where, buffers)

        walk(ast.parse(path.read_text(encoding="utf-8")), [], set())
    return found


def _unlisted(found, allowed: dict) -> list[str]:
    return [
        f"{m}:{line} {function}: {what}"
        for m, function, what, line in found
        if (m, function) not in allowed and (m, "*") not in allowed
    ]


def test_every_writer_goes_through_the_folder_writer_or_says_why_not():
    found = _find(_writes)
    assert _unlisted(found, WRITERS_OUTSIDE) == []
    used = {(m, f) for m, f, _, _ in found} | {(m, "*") for m, _, _, _ in found}
    assert [k for k in WRITERS_OUTSIDE if k not in used] == []  # no entry outlives its writer


def test_no_pickle_is_loaded_but_by_the_restricted_unpickler():
    found = _find(lambda call, _: _pickle_load(call))
    assert [f"{m}:{line} {what}" for m, _, what, line in found if m != "repro/data/pickles.py"] == []
    assert {what for m, _, what, _ in found} == {"pickle.Unpickler"}  # the restricted one subclasses it


def test_every_json_file_read_is_bounded_or_says_why_not():
    found = _find(lambda call, _: _json_from_file(call))
    assert _unlisted(found, JSON_OUTSIDE) == []
    used = {(m, f) for m, f, _, _ in found} | {(m, "*") for m, _, _, _ in found}
    assert [k for k in JSON_OUTSIDE if k not in used] == []


def test_the_scan_finds_what_it_looks_for():
    """The detectors, on code written the ways this package must not write."""

    def kinds(source: str, detector) -> list[str]:
        tree = ast.parse(source)
        buffers = _buffers(tree)
        return [w for node in ast.walk(tree) if (w := detector(node, buffers))]

    assert kinds(
        'open(p, "a"); open(p); p.write_text(t); w.write_text(p, t); os.replace(a, b); '
        "buf = io.BytesIO(); fig.savefig(buf); fig.savefig(p); torch.save(x, buf); torch.save(x, p)",
        _writes,
    ) == ["open for writing", "Path.write_text", "os.replace", "savefig", "torch.save"]
    loads = (
        "pickle.load(f); pickle.loads(b); torch.load(p); torch.load(p, weights_only=True); "
        "np.load(p, allow_pickle=True); np.load(p); from pickle import loads"
    )
    assert sorted(kinds(loads, lambda c, _: _pickle_load(c))) == [
        "from pickle import",
        "np.load",
        "pickle.load",
        "pickle.loads",
        "torch.load",
    ]
    assert kinds("json.loads(p.read_text()); json.loads(key); json.load(fh)", lambda c, _: _json_from_file(c)) == [
        "json.loads of a file",
        "json.load",
    ]
