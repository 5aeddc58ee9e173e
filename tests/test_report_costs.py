"""repro.cost.taken and repro.report.costs: device time taken per claim and table from run records, beside the
estimate, computed from the plans and rendered."""

import json

import pytest
from fake_records import record, write_result  # tests/fake_records.py

from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.plan.manifest import find_manifest
from repro.plan.run_config import planned_runs
from repro.plan.table_plan import build_plan
from repro.cost.taken import ComputeTaken, compute_by_claim
from repro.report.costs import compute_section


def render_compute(lines, profile, source):
    return compute_section(ComputeTaken(tuple(lines), source, (), ()), profile)


@pytest.fixture
def table5_records(tmp_path, monkeypatch):
    monkeypatch.setattr(est, "gpu_throughput", lambda *a: cal.Throughput("A100", "gpu", 1e12, 0.0, "ref"))
    monkeypatch.setattr(est, "estimate_macs", lambda *a, **k: {"backbone_macs": 1e9, "head_macs": 0})
    m = find_manifest("table5")
    runs = tmp_path / "runs"
    runs.mkdir()
    planned = planned_runs(m, m.profiles["full"])
    for p in planned:
        if p.row == "dense":  # 5 seeds, an hour each on a GPU
            r = record(p.cfg, wall_seconds=3600.0, provenance={"device_type": "cuda", "device": "cuda: A100"})
        elif p.row == "k2_moe" and p.seed < 2:  # 2 seeds, half an hour each on a CPU
            r = record(p.cfg, wall_seconds=1800.0, train_seconds=1.0)
        elif p.row == "k2_moe" and p.seed == 2:  # an hour, but edited after it was written: `repro run` refuses it
            r = {**record(p.cfg, wall_seconds=1800.0), "wall_seconds": 3600.0}
        elif p.row == "k2_moe" and p.seed == 3:  # a valid digest over a word: refused too (issue 41, item 5)
            r = record(p.cfg, wall_seconds="fast")
        else:
            continue
        (runs / f"{p.cfg.hash}.json").write_text(json.dumps(r))
    (runs / f"{next(p for p in planned if p.row == 'k1_moe').cfg.hash}.json").write_text("{truncated")
    return m, tmp_path


def test_hours_taken_per_claim_and_per_table(table5_records):
    m, results = table5_records
    lines = {
        c.label: c for c in compute_by_claim(results, [build_plan(m, "full")], est.CostModel(data_dir=results / "data"))
    }
    k2 = lines["table5/bb_moe_k2_positive"]  # rows k2_moe and dense
    assert (k2.runs, k2.recorded, k2.gpu_hours, k2.cpu_hours) == (10, 7, 5.0, 1.0)
    k1 = lines["table5/bb_moe_k1_negative"]  # rows k1_moe and dense: the damaged record does not count
    assert (k1.runs, k1.recorded, k1.gpu_hours, k1.cpu_hours) == (10, 5, 5.0, 0.0)
    table = lines["table5"]  # every run once, though all three claims read dense; the 4 [[sensitivity]] rows too
    assert (table.runs, table.recorded, table.gpu_hours, table.cpu_hours) == (35, 7, 5.0, 1.0)
    per_run = 30 * (3 * 1e9 * 1_281_167 + 1e9 * 50_000) / 1e12 / 3600  # ImageNet, paper's sizes (no data here)
    assert table.estimate_hours == pytest.approx(35 * per_run) and table.estimate_kind == "GPU"
    text = render_compute(list(lines.values()), "full", "ref")
    assert "| **table5** | 35 | 7 | 5.0 GPU-h | 1.0 CPU-h |" in text and "`table5/bb_moe_k_reversal`" in text


def test_times_under_a_hundredth_of_an_hour_read_in_seconds():
    from repro.cost.taken import Compute

    text = render_compute([Compute("table1", 8, 8, 0.0, 20 / 3600, 31 / 3600, "CPU")], "smoke", "fitted")
    assert "| **table1** | 8 | 8 | 0 GPU-s | 20 CPU-s | 31 CPU-s |" in text and "0.00 " not in text.split("\n", 1)[1]


def test_the_report_never_counts_or_measures(table5_records, monkeypatch):
    from repro.measure import flop_check as mflops

    m, results = table5_records
    monkeypatch.setattr(est, "estimate_macs", mflops.estimate_macs)
    empty = results / "empty-cache"
    monkeypatch.setattr(mflops, "_shape_macs", lambda key: pytest.fail("the report counted FLOPs"))

    def cold():
        return est.CostModel(cached_only=True, data_dir=results / "data", cache=empty)

    lines = compute_by_claim(results, [build_plan(m, "full")], cold())
    assert all(c.estimate_hours > 0 for c in lines)  # the shipped models' counts (repro.measure.model_macs)
    monkeypatch.setattr(mflops, "shipped_macs", lambda key: None)  # a manifest of one's own, nothing cached
    lines = compute_by_claim(results, [build_plan(m, "full")], cold())
    assert all(c.estimate_hours != c.estimate_hours for c in lines)  # NaN: not estimated
    assert "not estimated" in render_compute(lines, "full", "ref")


def test_repro_report_plans_each_table_once_and_fits_the_cost_model_once(tmp_path, monkeypatch):
    """The report reads the plans and what the cost stage computed from them, passed down: it never plans a table
    again on the way (report/costs -> cost/fit -> planned runs was the path) nor fits the cost model twice."""
    from collections import Counter

    from typer.testing import CliRunner

    from repro.cli import app
    from repro.cost import fit, taken
    from repro.plan import table_plan
    from repro.plan.manifest import load_all

    built, fitted = Counter(), []
    real_build, real_fit = table_plan.build_plan, fit.fit_folder

    def build(manifest, name, profile=None):
        built[(manifest.id, name)] += 1
        return real_build(manifest, name, profile)

    def fit_once(*args, **kwargs):
        fitted.append(args)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(table_plan, "build_plan", build)
    monkeypatch.setattr(taken, "fit_folder", fit_once)
    monkeypatch.setattr(fit, "fit_folder", fit_once)
    results = tmp_path / "results"
    write_result(results, "table6", {})
    path = results / "smoke" / "table6" / "results.json"
    stored = json.loads(path.read_text())
    path.write_text(
        json.dumps(
            {**stored, "provenance": {"git_commit": "0123456789ab", "time": "t", "device": "cpu", "packages": {}}}
        )
    )
    out = CliRunner().invoke(app, ["report", "--results-dir", str(results), "--profile", "smoke"])
    assert out.exit_code == 0, out.output
    assert set(built) == {(m.id, name) for m in load_all() for name in m.profiles}
    assert set(built.values()) == {1} and len(fitted) == 1
