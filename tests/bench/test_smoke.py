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
    for e in (_entry(300, time="t1"), _entry(200, m=THERE, time="t2"), _entry(250, time="t3"),
              _entry(90, cold=False, time="t4")):
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
