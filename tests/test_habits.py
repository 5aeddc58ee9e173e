"""The lint, format and type checks as tests: .ci/run runs `ruff check`, `ruff format --check` and mypy after
installing the dev extra and before the suite, with the settings pyproject.toml gives (lines of at most 120
characters, pycodestyle and pyflakes; mypy on the whole package, TYPED), and .pre-commit-config.yaml
runs the same three. Where ruff is installed, the tree passes `ruff check` and the limit
is the one configured."""

import importlib.util
import re
import subprocess
import sys
import tomllib

import pytest
import yaml

from checkout import REPO_ROOT

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# the packages mypy must check
TYPED = ("repro",)  # the whole package
CI = REPO_ROOT / ".ci" / "run"
NO_RUFF = "ruff is not installed here (pip install -e '.[dev]' installs it)"


def _top_level_lines() -> list[str]:
    """.ci/run's lines that the script runs unconditionally: not indented, not comments, not blank."""
    return [
        line.rstrip()
        for line in CI.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith((" ", "\t", "#"))
    ]


def test_ci_runs_the_three_checks_after_the_install_and_before_the_suite():
    lines = _top_level_lines()
    assert "set -euo pipefail" in lines  # a check that fails stops CI
    install, suite = lines.index("pip install -e '.[dev]'"), lines.index("python -m pytest")
    for check in ("ruff check .", "ruff format --check .", "mypy"):
        assert check in lines, f".ci/run does not run `{check}`"
        assert install < lines.index(check) < suite, f"`{check}` is not between the install and the tests"


def test_mypy_checks_the_configured_packages():
    config = PYPROJECT["tool"]["mypy"]
    assert set(TYPED) <= set(config["files"]), config["files"]  # what a bare `mypy` (and pre-commit's) checks
    assert config["python_version"] == "3.11" and config["check_untyped_defs"] is True
    (command,) = [line.split() for line in _top_level_lines() if line.split()[0] == "mypy"]
    assert set(TYPED) <= set(command[1:] or config["files"]), command


def test_ruff_allows_lines_of_120_characters_and_checks_pycodestyle_and_pyflakes():
    ruff = PYPROJECT["tool"]["ruff"]
    assert ruff["line-length"] == 120 and ruff["target-version"] == "py311"
    assert {"E", "F", "W"} <= set(ruff["lint"]["select"])
    assert not {"E", "E5", "E501"} & set(ruff["lint"].get("ignore", []) + ruff["lint"].get("extend-ignore", []))
    assert "format" in ruff  # `ruff format` is the formatter (.ci/run: ruff format --check)


def test_the_dev_extra_installs_the_tools_ci_runs():
    dev = PYPROJECT["project"]["optional-dependencies"]["dev"]
    names = {re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0] for req in dev}
    assert {"ruff", "mypy", "pytest"} <= names


def test_pre_commit_runs_the_same_checks_with_the_environment_s_tools():
    config = yaml.safe_load((REPO_ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert [repo["repo"] for repo in config["repos"]] == ["local"]  # nothing to fetch: no network needed
    entries = {h["entry"].split(" --")[0] for h in hooks.values()}
    assert {"ruff check", "ruff format", "mypy"} <= entries
    mypy = next(h for h in hooks.values() if h["entry"] == "mypy")
    assert mypy["pass_filenames"] is False  # the configured packages, not only the files a commit changes


def _ruff(*args: str, cwd=REPO_ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason=NO_RUFF)
def test_the_configured_limit_is_120_characters(tmp_path):
    (tmp_path / "pyproject.toml").write_text((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (tmp_path / "fits.py").write_text(f"X = {'1' * 116}\n")  # 120 characters
    (tmp_path / "over.py").write_text(f"X = {'1' * 117}\n")  # 121
    out = _ruff("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "over.py:1:121: E501" in out.stdout and "fits.py" not in out.stdout, out.stdout


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason=NO_RUFF)
def test_the_tree_passes_ruff_check():
    out = _ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
