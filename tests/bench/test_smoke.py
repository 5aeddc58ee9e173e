"""`repro bench smoke` (repro.bench.smoke): the ratio is to this machine's previous run, and a run measures a
verify-all in a fresh folder with an empty cache, its timings.json beside the results."""

import pytest

from repro.bench.smoke import append_history, previous, read_history, run_smoke
from repro.results.timings import machine

HERE = machine()
THERE = {**HERE, "cpu": "another CPU"}


def _entry(cpu_s, m=HERE, cold=True, time="2026-12-01T00:00:00+00:00"):
    return {"machine": m, "cold": cold, "cpu_s": cpu_s, "time": time, "commit": "abc"}


def test_the_previous_run_is_the_latest_of_the_same_machine_and_cache_state(tmp_path):
    path = tmp_path / "bench" / "smoke.json"
    assert read_history(path) == [] and previous([], _entry(1)) is None
    for e in (
        _entry(300, time="t1"),
        _entry(200, m=THERE, time="t2"),
        _entry(250, time="t3"),
        _entry(90, cold=False, time="t4"),
    ):
        append_history(path, e)
    history = read_history(path)
    assert [e["time"] for e in history] == ["t1", "t2", "t3", "t4"]
    assert previous(history, _entry(120))["time"] == "t3"
    assert previous(history, _entry(120, cold=False))["time"] == "t4"
    assert previous(history, _entry(120, m={**HERE, "cores": HERE["cores"] + 1})) is None
    path.write_text("{damaged")
    assert read_history(path) == []


@pytest.mark.slow
def test_a_run_measures_verify_all_in_a_fresh_folder_with_an_empty_cache(tmp_path, monkeypatch):
    from execution.minitable import write_manifest  # tests/execution/minitable.py

    env = write_manifest(tmp_path, epochs=2, train_samples=64)  # manifests/mini.toml and its profiles file
    for name in ("REPRO_MANIFESTS", "REPRO_PROFILES"):
        monkeypatch.setenv(name, env[name])
    run = run_smoke(tmp_path / "run", extra=["--jobs", "1"])
    assert run.returncode == 0, (tmp_path / "run" / "verify-all.log").read_text()
    assert run.cpu_s > 1 and run.wall_s > 0 and run.max_rss_mb > 10
    assert run.timings is not None and run.timings["command"] == "verify-all" and len(run.timings["runs"]) == 4
    phases = {p["phase"] for p in run.timings["phases"]}
    assert {"start-up and imports", "FLOP check", "training", "claims", "tables", "report"} <= phases
    # cold: repro's cache is the fresh folder's, and matplotlib (imported only where a figure is drawn) builds its
    # font list anew there
    figures = list((tmp_path / "run" / "results" / "smoke" / "figures").glob("*.png"))
    assert bool(list((tmp_path / "run" / "xdg-cache" / "matplotlib").glob("fontlist-*.json"))) == bool(figures)
    assert any((tmp_path / "run" / "cache").iterdir())
    # Run again into the same folder: every run reused, torch never imported, and timings.json accounts for the
    # child's wall time but the crate written after it and the interpreter's start and exit (not a speed test:
    # the tolerance holds at any load).
    again = run_smoke(tmp_path / "run", extra=["--jobs", "1", "--verbose"], log="again.log")
    assert again.returncode == 0 and again.timings is not None and again.timings["runs"] == []
    assert again.wall_s * 0.75 - 1.0 <= again.timings["wall_s"] <= again.wall_s
    assert sum(p["wall_s"] for p in again.timings["phases"]) <= again.timings["wall_s"] + 0.01


@pytest.mark.slow
def test_a_reused_verify_all_imports_no_torch(tmp_path, monkeypatch):
    """Every run recorded, every count cached, every figure drawn: nothing is trained, counted or drawn again, so
    neither torch, torchvision nor matplotlib is imported (their imports were most of a reused verify-all)."""
    import os
    import subprocess
    import sys

    from execution.minitable import write_manifest  # tests/execution/minitable.py

    env = {
        **os.environ,
        **write_manifest(tmp_path, epochs=1, train_samples=32),
        "REPRO_CACHE": str(tmp_path / "c"),
        "REPRO_RESULTS": str(tmp_path / "results"),
    }
    first = subprocess.run(
        [sys.executable, "-m", "repro", "verify-all", "--jobs", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stdout + first.stderr
    watch = (
        "import atexit, runpy, sys; atexit.register(lambda: print('IMPORTED', sorted(m for m in "
        "('torch', 'torchvision', 'matplotlib') if m in sys.modules))); sys.argv = ['repro', 'verify-all', "
        "'--jobs', '1']; runpy.run_module('repro', run_name='__main__')"
    )
    again = subprocess.run([sys.executable, "-c", watch], env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "IMPORTED []" in again.stdout, again.stdout[-2000:]
