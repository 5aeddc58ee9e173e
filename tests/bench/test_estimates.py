"""repro bench estimates: estimate / measured per table, the held-out tables together, the goal."""

import datetime as dt
import json

import pytest

from repro.bench.estimates import bench_estimates, held_out_times
from repro.plan.table_plan import plan_all
from repro.cost import estimate as est
from repro.cost.measured import read_folder
from repro.plan.run_config import planned_runs
from inline_manifests import inline_manifest

PROFILES = {
    "smoke": {
        "description": "s",
        "evidence": "pipeline",
        "device": "cpu",
        "seeds": 2,
        "epochs": 1,
        "data": "synthetic",
        "train_samples": 128,
        "test_samples": 64,
        "batch_size": 32,
        "max_image_size": 16,
        "pretrained": False,
    },
    "full": {"description": "f", "evidence": "paper", "seeds": 2},
}
T0 = dt.datetime(2026, 12, 1, 12, 0, 0, tzinfo=dt.timezone.utc)


def _manifest(mid, rows):
    return inline_manifest(
        {
            "id": mid,
            "title": mid,
            "paper_ref": "Table 1",
            "description": "d",
            "paper_table": "table1",
            "profiles": PROFILES,
            "rows": [
                {
                    "id": r,
                    "label": r,
                    "dataset": "cifar10",
                    "measures": ["flops", "accuracy"],
                    "backbone": {"name": "cifar_standard"},
                    "head": {"name": "dense", "hidden": [h]},
                }
                for r, h in rows
            ],
        },
        f"{mid}.toml",
    )


def _iso(s):
    return (T0 + dt.timedelta(seconds=s)).isoformat(timespec="seconds")


def _phases(table, flops, training, rest):
    return [
        {"phase": "FLOP counting", "table": table, "wall_s": flops, "cpu_s": flops, "count": 1},
        {"phase": "training", "table": table, "wall_s": training, "cpu_s": training, "count": 1},
        {"phase": "tables", "table": table, "wall_s": rest, "cpu_s": rest, "count": 1},
    ]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """t1 then t2 (`repro run`), every run 2 CPU-s at a full core; t2's measured time is `slow` x its model's."""
    monkeypatch.setattr(est.CostModel, "run_work", lambda self, cfg: est.RunWork(1.0, 0, 0.0, "synthetic data"))
    monkeypatch.setattr(est.CostModel, "run_params", lambda self, cfg: (0.0, 0.0))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)  # 2 cores (repro.cost.calibration)
    t1, t2 = _manifest("t1", [("a", 128), ("b", 256)]), _manifest("t2", [("c", 512), ("d", 1024)])

    def write(slow: float):
        runs = tmp_path / "runs"
        runs.mkdir(exist_ok=True)
        for i, (m, start) in enumerate(((t1, 0), (t2, 100))):
            for p in planned_runs(m, m.profiles["smoke"]):
                (runs / f"{p.cfg.hash}.json").write_text(
                    json.dumps(
                        {
                            "config": p.cfg.to_dict(),
                            "config_hash": p.cfg.hash,
                            "label": p.label,
                            "train_seconds": 1.9,
                            "wall_seconds": 2.0,
                            "cpu_seconds": 2.0,
                            "provenance": {
                                "time": _iso(start + 10),
                                "device_type": "cpu",
                                "device": "cpu: x86_64, 1 intra-op thread(s)",
                            },
                        }
                    )
                )
        # per command: start-up 5 s; per table: its 2 models' counts 1 s, 4 runs on 2 slots 4 s + 3 s of workers,
        # 1 s rest
        commands = {
            f"run {m.id}": {
                "command": f"run {m.id}",
                "profile": "smoke",
                "started": _iso(start),
                "wall_s": 5 + (1 + 7 + 1) * (slow if m.id == "t2" else 1.0),
                "cpu_s": 0.0,
                "phases": [
                    {"phase": "start-up and imports", "table": "", "wall_s": 5.0, "cpu_s": 5.0, "count": 1},
                    *_phases(m.id, *(x * (slow if m.id == "t2" else 1.0) for x in (1, 7, 1))),
                ],
                "runs": [],
            }
            for m, start in ((t1, 0), (t2, 100))
        }
        (tmp_path / "smoke").mkdir(exist_ok=True)
        (tmp_path / "smoke" / "timings.json").write_text(json.dumps({"schema": 1, "commands": commands}))
        return tmp_path, [t1, t2]

    return write


def test_a_held_out_table_is_estimated_from_the_others(folder):
    results, manifests = folder(1.0)
    r = bench_estimates(results, "smoke", plan_all(manifests), fit_on=("t1",), model=est.CostModel())
    by = {c.what: c for c in r.tables}
    assert by["t2"].ratio == pytest.approx(1.0) and by["t1"].ratio == pytest.approx(1.0)
    assert r.held_out.ratio == pytest.approx(1.0) and r.within_goal
    assert r.run_ratios == pytest.approx([1.0] * 4)  # t2's runs, predicted from t1's
    times = held_out_times(read_folder(results), plan_all(manifests), "smoke", ("t1",))
    assert len(times.runs) == 4 and set(times.commands["smoke"]) == {"run t1"}  # nothing of t2 was fitted on


def test_a_table_far_off_its_estimate_misses_the_goal(folder):
    results, manifests = folder(3.0)
    r = bench_estimates(results, "smoke", plan_all(manifests), fit_on=("t1",), model=est.CostModel())
    assert r.held_out.ratio == pytest.approx(1 / 3) and r.within_goal is False


def test_repro_bench_estimates_prints_each_table_and_the_held_out_ones_together(folder, monkeypatch):
    from typer.testing import CliRunner

    from repro.cli import app

    results, manifests = folder(1.0)
    monkeypatch.setattr("repro.cli.common.load_every", lambda *args, **kwargs: manifests)
    argv = ["bench", "estimates", "--profile", "smoke", "--results-dir", str(results), "--fit-on", "t1"]
    out = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    rows = {line.split("│")[1].strip(): line for line in out.output.splitlines() if line.count("│") > 2}
    assert {"t1", "t2 (held out)", "1 table held out"} <= set(rows)
    assert "1.00" in rows["t2 (held out)"] and "1.00" in rows["1 table held out"]
    assert "goal 0.7-1.3 (held-out tables and verify-all): met" in out.output


def test_a_total_measured_at_no_time_prints_no_ratio(folder, monkeypatch):
    """A total whose measured time is 0 (a timings.json edited by hand) has no ratio: its row said
    TypeError 'unsupported format string passed to NoneType', where a table's row printed '-'."""
    import dataclasses

    from typer.testing import CliRunner

    from repro.cli import app

    def measured_at_zero(*args, **kwargs):
        r = bench_estimates(*args, **kwargs)
        r.held_out = dataclasses.replace(r.held_out, measured_s=0.0)
        return r

    results, manifests = folder(1.0)
    monkeypatch.setattr("repro.cli.common.load_every", lambda *args, **kwargs: manifests)
    monkeypatch.setattr("repro.bench.estimates.bench_estimates", measured_at_zero)
    argv = ["bench", "estimates", "--profile", "smoke", "--results-dir", str(results), "--fit-on", "t1"]
    out = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    (row,) = [line for line in out.output.splitlines() if "1 table held out" in line]
    assert row.split("│")[4].strip() == "-"
