"""Each option the commands share is declared once (repro/cli/options.py, repro/cli/execution.py), with one
default: no command declares --profile, --results-dir, --executor or any other of them again with its own."""

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

import repro.cli
from repro.cli import app

CLI = Path(repro.cli.__file__).parent
SHARED = ("options.py", "execution.py")


def declarations(source: str) -> list[tuple[str, int]]:
    """(flag, line) of every --flag a typer.Option(...) call (or execution's _opt) names in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("Option", "_opt"):
                found += [
                    (a.value, node.lineno)
                    for a in node.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--")
                ]
    return found


def test_a_shared_option_is_declared_in_one_place_only():
    shared = {flag for f in SHARED for flag, _ in declarations((CLI / f).read_text())}
    assert {"--profile", "--results-dir", "--executor", "--runs-per-gpu", "--slurm-max-parallel"} <= shared
    again = [
        f"{path.name}:{line} declares {flag}"
        for path in sorted(CLI.glob("*.py"))
        if path.name not in SHARED
        for flag, line in declarations(path.read_text())
        if flag in shared
    ]
    assert not again, again


def test_a_second_declaration_is_found():
    """compare's --profile as it was declared before it took options.profile_option."""
    again = 'def compare(profile = typer.Option(None, "--profile", "-p", help="Only this profile.")): ...'
    assert declarations(again) == [("--profile", 1)]


# An empty value, as `-p "$PROFILE"` or `-o "$RESULTS"` with the variable unset gives: --profile '' ran the
# default profile and --results-dir '' wrote into the current folder, both exiting 0 (an evaluator's walk-through).
EMPTY = [
    (["run", "table6"], "--profile"),
    (["run", "table6"], "--results-dir"),
    (["run", "table6"], "--data-dir"),
    (["status"], "--profile"),
    (["status"], "--results-dir"),
    (["report"], "--results-dir"),
]


@pytest.mark.parametrize("args, flag", EMPTY, ids=lambda x: " ".join(x) if isinstance(x, list) else x)
def test_an_empty_shared_option_is_a_usage_error_naming_the_flag_before_any_work(args, flag, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, [*args, flag, ""], env={"COLUMNS": "200"})
    assert done.exit_code == 2, done.output
    assert flag in done.output and "empty" in done.output, done.output
    assert list(tmp_path.iterdir()) == []  # nothing written where it would have landed


def test_a_profile_name_with_text_in_it_is_let_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["status", "--profile", "smoke", "-o", "r"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
