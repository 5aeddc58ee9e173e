"""Each option the commands share is declared once (repro/cli/options.py, repro/cli/execution.py), with one
default: no command declares --profile, --results-dir, --executor or any other of them again with its own."""

import ast
from pathlib import Path

import repro.cli

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
