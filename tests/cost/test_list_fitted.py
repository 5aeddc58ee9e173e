"""`repro list --results-dir`: the cost model fitted to the records there, each figure saying what it is."""

import json
import shutil

from typer.testing import CliRunner

from checkout import MANIFESTS
from repro.cli import app
from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.plan.manifest import find_manifest
from repro.plan.run_config import planned_runs


def test_list_fits_the_records_in_the_results_folder(tmp_path, monkeypatch):
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    shutil.copy(MANIFESTS / "temperature_ablation.toml", manifests)
    monkeypatch.setenv("REPRO_MANIFESTS", str(manifests))
    monkeypatch.setattr(est, "cpu_throughput", lambda speed=None: cal.Throughput("cpu", "cpu", 1e9, 0.0, "bench"))
    # No model is counted: each run's work from its own settings
    monkeypatch.setattr(
        est.CostModel,
        "run_work",
        lambda self, cfg: est.RunWork(1e9 * cfg.epochs * (cfg.train_samples or 1000), cfg.epochs, 0.0, "data"),
    )
    monkeypatch.setattr(est.CostModel, "run_params", lambda self, cfg: (0.0, 0.0))
    m = find_manifest("temperature_ablation", manifests)
    results = tmp_path / "results"
    (results / "runs").mkdir(parents=True)
    for p in planned_runs(m, m.profiles["smoke"]):
        seconds = 2e-9 * 1e9 * p.cfg.epochs * p.cfg.train_samples  # twice the benchmark's time: the fit must see it
        (results / "runs" / f"{p.cfg.hash}.json").write_text(
            json.dumps(
                {
                    "config": p.cfg.to_dict(),
                    "config_hash": p.cfg.hash,
                    "label": p.label,
                    "train_seconds": seconds,
                    "wall_seconds": seconds,
                    "cpu_seconds": seconds,
                    "provenance": {
                        "time": "2026-12-01T12:00:00+00:00",
                        "device_type": "cpu",
                        "device": "cpu: x86_64, 1 intra-op thread(s)",
                    },
                }
            )
        )
    listed = CliRunner().invoke(app, ["list", "-v", "--results-dir", str(results)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output  # -v: the fit's own lines (without it, the From column says "fitted")
    text = " ".join(listed.output.split())
    assert "CPU: fitted to 8 run records (CPU seconds; predicted / measured per run: median 1.00" in text
    assert "smoke: 8 of 8 runs recorded" in text and "From" in text and "fitted" in text
    cold = CliRunner().invoke(app, ["list", "--results-dir", str(tmp_path / "empty")], env={"COLUMNS": "200"})
    assert cold.exit_code == 0 and "fitted to" not in cold.output and "CPU reference" in cold.output


def test_a_command_measured_at_no_time_prints_no_ratio(monkeypatch):
    """`repro list -v` beside a command timings.json records at 0 s (a file edited by hand) prints '-' for the
    ratio, as `repro bench estimates` does: formatting the missing ratio raised TypeError."""
    from types import SimpleNamespace

    from repro.cost import taken

    zero = taken.Compared("smoke", "verify-all", 88.0, "CPU reference", 0.0, "timings.json", load=0.4)
    monkeypatch.setattr(taken, "compare_commands", lambda *args, **kwargs: [zero])
    plans = SimpleNamespace(profiles=lambda: ["smoke"], at=lambda profile: [])
    folder = SimpleNamespace(plans=plans, model=None, times=SimpleNamespace(runs={}), rates=None)
    (line,) = taken.lines(folder)
    assert line.endswith("estimate / measured -"), line
    assert "measured ~0 s (timings.json, load 0.4)" in line, line
