"""The package installs without the checkout: a wheel built from the source, installed into a fresh environment
outside it, runs `repro list` and `repro flops table6` from a folder elsewhere, its files all package data.

The fresh environment sees this one's packages (torch and the rest, through a .pth file) so that nothing is
downloaded; the wheel itself is installed with --no-deps, and nothing of the checkout is on its path.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from checkout import REPO_ROOT

ENV_DROPPED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def _run(args, cwd, env, timeout=300):
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{args}: exit {out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out.stdout


def _package_files() -> set[str]:
    """Every file of the package in the checkout, as the wheel names it (repro/...), bytecode aside."""
    return {
        p.relative_to(REPO_ROOT).as_posix()
        for p in (REPO_ROOT / "repro").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@pytest.mark.slow
def test_the_wheel_runs_outside_the_checkout(tmp_path):
    source = tmp_path / "source"  # a copy: the build writes build/ and *.egg-info beside its sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, source / name)
    shutil.copytree(REPO_ROOT / "repro", source / "repro", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROPPED}
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        tmp_path,
        env,
    )
    (wheel,) = (tmp_path / "dist").glob("repro_moe_rho-*.whl")
    with zipfile.ZipFile(wheel) as z:
        missing = _package_files() - set(z.namelist())
    assert not missing, f"package files the wheel lacks (pyproject.toml's package-data): {sorted(missing)}"

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env).strip()
    # this environment's torch, typer, ... after the wheel on the fresh one's path: nothing to download
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        tmp_path,
        env,
    )

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env.update(REPRO_CACHE=str(tmp_path / "cache"), REPRO_RESULTS=str(tmp_path / "results"), COLUMNS="100")
    where = _run([str(python), "-c", "import repro as r; print(r.__file__)"], elsewhere, env).strip()
    assert where.startswith(site) and not where.startswith(str(REPO_ROOT)), where
    repro = str(venv / "bin" / "repro")
    listed = _run([repro, "list"], elsewhere, env)
    for table in ("table1", "table6", "table9", "temperature_ablation"):
        assert f"{table} — " in listed, listed
    assert "Totals over every manifest" in listed
    flops = _run([repro, "flops", "table6"], elsewhere, env)
    assert "table6" in flops and "analytic = fvcore = torch/2 for every module" in flops, flops
    assert "FLOP check failed" not in flops
    assert any((tmp_path / "cache" / "flops").glob("*.json"))  # the counts went to $REPRO_CACHE, read at the start
    commit = _run(
        [str(python), "-c", "from repro.results.provenance import git_commit; print(git_commit())"], elsewhere, env
    ).strip()
    assert commit == "not a git checkout"
