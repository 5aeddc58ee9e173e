"""repro.cost.wall_time: a command's wall time by phase, runs shared between tables paid once; repro.cost.fit: rates
fitted to timings."""

import pytest

from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.cost.fit import fit_rates
from repro.cost.wall_time import Rate, Rates, command_time, table_line
from repro.cost.measured import FolderTimes, MeasuredCommand
from repro.plan.table_plan import build_plan, build_plans, plan_all
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
# 1 s of arithmetic a run and nothing else, two runs at a time
CPU = cal.Throughput("cpu", "cpu", 1.0, 0.0, "fitted (test)", parallel=2, fitted=True)
# Reference rates of round sizes (the shipped ones come from repro/cost/cpu_reference.json: test_reference.py)
GUESS = Rates(*(Rate(s, "reference", "test") for s in (6.0, 0.5, 6.0, 1.0, 1.0, 15.0)))


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


@pytest.fixture
def tables(monkeypatch):
    monkeypatch.setattr(est.CostModel, "run_work", lambda self, cfg: est.RunWork(1.0, 0, 0.0, "synthetic data"))
    t1 = _manifest("t1", [("a", 128), ("b", 256)])
    t2 = _manifest("t2", [("a_again", 128), ("c", 512)])  # a_again is t1's a: the same runs
    return t1, t2, est.CostModel(fitted={"cpu": CPU})


def _parts(t):
    return {(p.phase, p.table): p.seconds for p in t.parts}


def test_verify_all_counts_every_model_once_and_trains_a_shared_run_once(tables):
    t1, t2, model = tables
    t = command_time(build_plans([t1, t2], "smoke"), model, GUESS)
    parts = _parts(t)
    assert parts[("start-up", "")] == 6.0 and parts[("FLOP check", "")] == 3 * 0.5  # models a, b, c
    assert parts[("FLOP counting", "t1")] == parts[("FLOP counting", "t2")] == 0.0  # counted by the check
    assert parts[("training", "t1")] == 2.0 + 6.0  # 4 runs of 1 s on 2 slots, and its worker processes
    assert parts[("training", "t2")] == 1.0 + 6.0  # only c's 2 runs: a's were t1's
    assert parts[("report", "")] == 15.0 and t.seconds == pytest.approx(sum(parts.values()))
    assert t.basis() == "reference" and t.basis("t1") == "reference"  # the workers' figure is a reference


def test_run_counts_its_own_models_and_skips_recorded_runs(tables):
    t1, t2, model = tables
    recorded = frozenset(p.cfg.hash for p in planned_runs(t1, t1.profiles["smoke"]))
    t = command_time(build_plans([t2], "smoke"), model, GUESS, verify_all=False, recorded=recorded)
    parts = _parts(t)
    assert parts[("FLOP counting", "t2")] == 2 * 0.5 and ("FLOP check", "") not in parts
    assert parts[("training", "t2")] == 1.0 + 6.0 and ("report", "") not in parts
    fitted = Rates(
        workers=Rate(6.0, "fitted", "test"), rest=Rate(1.0, "fitted", "test"), flop_model=Rate(0.5, "fitted", "test")
    )
    assert command_time(build_plans([t2], "smoke"), model, fitted, verify_all=False).basis("t2") == "fitted"
    assert table_line(build_plan(t2, "smoke"), model, fitted).startswith(
        "~10 s (fitted: FLOP counting 1 s, training 8 s, rest 1 s"
    )


def test_rates_come_back_from_a_measured_verify_all(tables):
    t1, t2, model = tables
    phases = {
        "start-up and imports": 4.0,
        "FLOP check": 9.0,
        "FLOP counting": 0.0,
        "training": 3.0 + 2 * 10.0,
        "tables": 2.0,
        "claims": 2.0,
        "figures": 8.0,
        "report": 4.0,
    }
    times = FolderTimes(
        commands={
            "smoke": {"verify-all": MeasuredCommand("verify-all", sum(phases.values()) + 1.0, phases, ("t1", "t2"))}
        }
    )
    rates = fit_rates(times, plan_all([t1, t2]), model)
    assert rates.startup.seconds == 4.0 and rates.flop_model.seconds == 3.0  # 9 s over 3 models
    assert rates.workers.seconds == 10.0  # training less the runs' 3 s, over 2 tables
    assert rates.rest.seconds == pytest.approx((4.0 + 1.0) / 2)  # claims, tables and what no phase covers, per table
    assert rates.report.seconds == 12.0 and rates.latency.basis == "reference"  # no latency measured
    assert all(getattr(rates, k).basis == "fitted" for k in ("startup", "flop_model", "workers", "rest", "report"))
    again = command_time(build_plans([t1, t2], "smoke"), model, rates)
    assert again.seconds == pytest.approx(times.commands["smoke"]["verify-all"].wall_s)


def test_a_command_that_reused_every_run_or_ran_under_load_fits_no_rate(tables):
    """A reused verify-all finds its runs recorded and its counts kept (start-up 1 s, FLOP check 0 s): not the work
    an estimate prices; a command measured above the cores is stretched by the load. Neither fits a rate."""
    import dataclasses

    from repro.cost.fit import FolderFit
    from repro.cost.measured import MeasuredRun

    t1, t2, model = tables
    plans = plan_all([t1, t2])
    phases = {"start-up and imports": 1.0, "FLOP check": 0.0, "training": 0.5, "report": 2.0}
    reused = MeasuredCommand("verify-all", 4.0, phases, ("t1", "t2"), started=100.0)
    runs = {
        p.cfg.hash: MeasuredRun(p.cfg.hash, p.cfg, m.id, 1.0, 1.0, 1.0, "cpu", 1, 50.0)
        for m in (t1, t2)
        for p in planned_runs(m, m.profiles["smoke"])
    }  # every run recorded before it started
    assert fit_rates(FolderTimes(runs, {}, {"smoke": {"verify-all": reused}}), plans, model) == Rates()
    busy = dataclasses.replace(reused, started=None, load=4.3, busy=True)
    assert fit_rates(FolderTimes({}, {}, {"smoke": {"verify-all": busy}}), plans, model) == Rates()
    cold = dataclasses.replace(reused, started=None)  # the same phases, its runs trained: fitted
    assert fit_rates(FolderTimes({}, {}, {"smoke": {"verify-all": cold}}), plans, model).startup.basis == "fitted"
    said = FolderFit(model, {}, Rates(), FolderTimes(runs, {}, {"smoke": {"verify-all": reused}}), plans).describe()
    assert said == ["left out of the phase rates, every run reused (no cold work measured): smoke `verify-all`"]


def test_latency_is_priced_on_the_device_the_profile_times_it_on():
    """Table 7's latency is timed on the device its profile trains on: at full, a GPU's, not this CPU's (it was
    priced at the CPU's rate: ~2.7 h of `repro list`'s wall time for timings a GPU takes minutes over)."""
    from repro.cost.wall_time import estimate_latency
    from repro.plan.manifest import find_manifest

    cpu = cal.Throughput("cpu", "cpu", 1e9, 0.0, "test", label="test CPU")
    gpu = cal.Throughput("H200", "gpu", 1e12, 0.0, "test", label="test GPU")
    on_gpu, cpu_only = est.CostModel(fitted={}, kind=None), est.CostModel(fitted={}, kind="cpu")
    for model in (on_gpu, cpu_only):
        model._devices.update(cpu=cpu, gpu=gpu)
    table7 = find_manifest("table7")
    full, functional = build_plan(table7, "full"), build_plan(table7, "functional")

    def latency(plan, model):
        (part,) = [p for p in command_time([plan], model, GUESS, verify_all=False).parts if p.phase == "latency"]
        assert part.seconds == pytest.approx(estimate_latency(plan, model)[0])
        return part

    assert latency(functional, on_gpu).origin == latency(functional, cpu_only).origin == "test CPU"
    assert latency(functional, on_gpu).seconds == latency(functional, cpu_only).seconds
    gpu_part, cpu_part = latency(full, on_gpu), latency(full, cpu_only)
    assert (gpu_part.origin, cpu_part.origin) == ("test GPU", "test CPU")
    dispatch = len(full.latency_rows) * 3 * (full.latency.warmup + full.latency.min_reps) * 0.002
    assert (cpu_part.seconds - dispatch) / (gpu_part.seconds - dispatch) == pytest.approx(1000, rel=1e-6)
