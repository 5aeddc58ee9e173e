"""repro.cost.fit: constants fitted to run records generated from known ones, the CPU share, the compute-rate guard."""

import dataclasses
import itertools

import pytest

from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.cost.fit import fit_device, fit_model
from repro.cost.measured import FolderTimes, MeasuredRun
from repro.plan.run_config import RunConfig

from .runs import synthetic_config

BASE = cal.Throughput("cpu", "cpu", 1e10, 0.004, "measured on this host's CPU (test)")
TRUE = dict(a=1 / 2e10, b=0.01, c=2e-9, o=0.3, k=1e-8)  # s/MAC, s/step, s/(param step), s/run, s/(param checkpoint)


@pytest.fixture
def sizes(monkeypatch):
    """Each config's work and parameters from its fields alone: no model is built or counted."""

    def work(self, cfg):
        macs = 1e9 * cfg.epochs * cfg.train_samples / 128 * (1 + (cfg.head["params"]["hidden"][0] / 512) ** 2)
        return est.RunWork(macs, cfg.epochs * cfg.train_samples // 32, 0.0, "synthetic data")

    def params(self, cfg):
        trainable = 1e6 * cfg.head["params"]["hidden"][0] / 128
        return trainable, 3 * trainable

    monkeypatch.setattr(est.CostModel, "run_work", work)
    monkeypatch.setattr(est.CostModel, "run_params", params)


def _seconds(cfg: RunConfig, t=TRUE) -> float:
    w, (p, held) = est.CostModel().run_work(cfg), est.CostModel().run_params(cfg)
    return t["a"] * w.macs + t["b"] * w.steps + t["c"] * w.steps * p + t["o"] + t["k"] * (cfg.epochs - 1) * held


def _runs(share: float | None = None, t=TRUE) -> list[MeasuredRun]:
    out = []
    for i, (epochs, samples, hidden) in enumerate(itertools.product((1, 3, 6), (128, 512), (128, 512, 1024))):
        cfg = synthetic_config(epochs, samples, hidden)
        s = _seconds(cfg, t)
        wall = s / share if share else s
        out.append(MeasuredRun(cfg.hash, cfg, "t", 0.9 * wall, wall, s if share else None, "cpu", 1, float(i)))
    return out


def test_the_constants_the_records_were_made_with_come_back(sizes):
    fit = fit_device(_runs(), est.CostModel(), BASE)
    d = fit.device
    assert d.macs_per_s == pytest.approx(2e10, rel=1e-6) and d.step_overhead_s == pytest.approx(0.01, rel=1e-6)
    assert d.step_param_s == pytest.approx(2e-9, rel=1e-6) and d.run_overhead_s == pytest.approx(0.3, rel=1e-6)
    assert d.checkpoint_param_s == pytest.approx(1e-8, rel=1e-6)
    assert fit.spread() == pytest.approx((1.0, 1.0, 1.0)) and fit.compute_rate == "fitted"
    assert d.basis == "fitted" and d.cpu_share == 1.0 and fit.seconds == "wall seconds"


def test_cpu_seconds_are_fitted_and_the_share_turns_them_into_wall_time(sizes):
    fit = fit_device(_runs(share=0.25), est.CostModel(), BASE)
    assert fit.device.cpu_share == pytest.approx(0.25) and fit.seconds == "CPU seconds"
    assert fit.device.macs_per_s == pytest.approx(2e10, rel=1e-6)  # the CPU time, not the loaded wall time
    model = est.CostModel(fitted={"cpu": dataclasses.replace(fit.device, parallel=1)})
    cfg = synthetic_config(3, 512, 1024)
    t = model.run_time(cfg, "t", model.fitted["cpu"])
    assert (t.compute_s + t.overhead_s) == pytest.approx(_seconds(cfg), rel=1e-6)  # CPU seconds
    assert model.cost([]).wall_seconds == 0.0


def test_records_with_too_little_arithmetic_keep_the_device_rate(sizes):
    overheads = dict(TRUE, a=1e-20)  # the runs' time is all per-step and per-run cost
    fast = dataclasses.replace(BASE, macs_per_s=1e13)  # at which their arithmetic is a small share of their time
    fit = fit_device(_runs(t=overheads), est.CostModel(), fast)
    assert fit.compute_rate == "measured" and fit.device.macs_per_s == fast.macs_per_s
    assert fit.device.step_overhead_s == pytest.approx(0.01, rel=0.05)
    implausible = fit_device(_runs(), est.CostModel(), dataclasses.replace(BASE, macs_per_s=1e8))  # 200x off the fit
    assert implausible.compute_rate == "measured" and implausible.device.macs_per_s == 1e8


def test_too_few_records_fit_nothing_and_fit_model_sets_each_kind(sizes):
    assert fit_device(_runs()[:2], est.CostModel(), BASE) is None
    model = est.CostModel()
    model._devices["cpu"] = BASE
    fits = fit_model(model, FolderTimes({r.hash: r for r in _runs()}))
    assert set(fits) == {"cpu"} and model.fitted["cpu"] is fits["cpu"].device and model.exact_sizes
    assert "fitted to 18 run records" in fits["cpu"].describe()


def test_a_gpu_fitted_to_records_prices_them_by_the_fit_alone(sizes):
    """The fit's per-run cost holds a run's data preparation and compilation: the calibration's are not added again."""
    gpu = dataclasses.replace(
        BASE, device="NVIDIA H200", kind="gpu", source="reference: test", compile_s={"x": 30.0}, data_s_per_value=1e-6
    )
    runs = [dataclasses.replace(r, device="cuda") for r in _runs()]
    d = fit_device(runs, est.CostModel(), gpu).device
    assert (d.compile_s, d.data_s_per_value) == ({}, 0.0)
    model = est.CostModel()
    for r in runs:
        t = model.run_time(r.cfg, "t", d)
        assert t.compute_s + t.overhead_s == pytest.approx(r.cpu_s or r.wall_s, rel=1e-6)


def test_a_gpu_plan_describes_the_gpu_fit_alone():
    """`repro plan` prices GPU runs: it printed a CPU folder's fit and start-up times ("startup 167 s") too."""
    from repro.cost.fit import FolderFit, RunFit
    from repro.cost.wall_time import Rates
    from repro.plan.table_plan import plan_all

    fit = {kind: RunFit(None, 5, (1.0,) * 5, f"{kind} seconds", "fitted") for kind in ("cpu", "gpu")}
    startup = dataclasses.replace(Rates().startup, seconds=167.0, basis="fitted")
    folder = FolderFit(None, fit, dataclasses.replace(Rates(), startup=startup), FolderTimes(), plan_all([]))
    every = folder.describe()
    assert [line[:4] for line in every] == ["CPU:", "GPU:", "phas"] and "startup 167 s" in every[2]
    assert folder.describe("gpu") == [every[1]]
