"""Each device's cost constants fitted to the run records a results folder already holds. Torch-free when cached.

A run's seconds s (its CPU seconds where the record has them, else its wall seconds) are modelled as

    s = a M + b S + c S P_t + o + k (E - 1) P_c

  M  training multiply-adds over its epochs (repro.cost.estimate.RunWork), S optimiser and evaluation steps,
  P_t trainable parameters (each step's optimiser update and gradient memory), E epochs, P_c the parameters a
  checkpoint holds (written after every epoch but the last), o the run's own set-up.

The five constants are a non-negative least-squares fit over every record of the device (every profile's:
smoke's tiny runs pin the per-step and per-run costs, a larger profile's the compute rate), each run
weighted by 1/sqrt(s): between the relative error of the many small runs and the absolute error of the
few large ones a table's time rests on. Where the records hold too little arithmetic to pin `a` (under
10% of their time at the device's measured or reference rate), or the fit puts it more than 20x from
that rate, `a` stays that rate and the rest is fitted. Wall seconds = s / the CPU share the records show (CPU seconds per wall second of the runs that
have both; 1 where none has), so a fit made on a busy machine still prices a quiet one by its CPU time.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from repro.cost.calibration import Throughput
from repro.cost.estimate import CostModel
from repro.cost.measured import FolderTimes, MeasuredRun, read_folder

if TYPE_CHECKING:
    from repro.cost.wall_time import Rates
    from repro.plan.table_plan import Plans

MIN_RUNS = 3
MIN_COMPUTE_SHARE = 0.10  # below this share of the runs' time, the records cannot pin the compute rate
RATE_BOUND = 20.0  # a fitted rate further than this factor from the device's measured or reference one is not believed


@dataclass(frozen=True)
class RunFit:
    """A device's fitted figures and how well they reproduce the records they were fitted to."""

    device: Throughput  # the fitted figures, used by CostModel in place of the measured or reference ones
    runs: int
    ratios: tuple[float, ...]  # predicted / measured seconds of each record fitted on
    seconds: str  # "CPU seconds" or "wall seconds": what the records gave
    compute_rate: str  # "fitted" or the base figure's basis when the records could not pin it
    sized: int = 0  # records priced by the model built at their resolution (the others: area-scaled counts)

    def spread(self) -> tuple[float, float, float]:
        """(10th percentile, median, 90th percentile) of the predicted / measured ratios."""
        r = sorted(self.ratios)
        def q(p: float) -> float:
            return r[min(len(r) - 1, int(p * len(r)))]
        return q(0.1), q(0.5), q(0.9)

    def describe(self) -> str:
        lo, mid, hi = self.spread()
        sized = "" if self.sized == self.runs else (
            f"; model sizes counted for {self.sized} of them, the others priced by area-scaled counts "
            "(`repro list --results-dir` counts them once)")
        return (f"fitted to {self.runs} run records ({self.seconds}; predicted / measured per run: median {mid:.2f}, "
                f"10-90% {lo:.2f}-{hi:.2f}; compute rate {self.compute_rate}{sized})")


def _nnls(rows: list[list[float]], target: list[float]):
    from scipy.optimize import nnls

    import numpy as np

    x, _ = nnls(np.asarray(rows, dtype=float), np.asarray(target, dtype=float))
    return [float(v) for v in x]


def _seconds(run: MeasuredRun) -> float:
    return run.cpu_s if run.cpu_s is not None else run.wall_s


def _features(model: CostModel, run: MeasuredRun) -> list[float] | None:
    work = model.run_work(run.cfg)
    trainable, held = model.run_params(run.cfg)
    if not math.isfinite(trainable):  # sizes not counted (a torch-free caller): priced without the parameter terms
        trainable = held = 0.0
    values = [work.macs, work.steps, work.steps * trainable, 1.0, (run.cfg.epochs - 1) * held]
    return values if all(math.isfinite(v) for v in values) else None


def fit_constants(data: list[tuple[list[float], float]], a0: float) -> tuple[list[float], bool]:
    """(a, b, c, o, k) fitted to (features, seconds) pairs, and whether `a` is the fit's (else a0, the device's
    seconds per multiply-add: kept where the records cannot pin it; 0: none to keep)."""
    scale = [max(sum(f[j] for f, _ in data) / len(data), 1e-30) for j in range(5)]  # conditioning
    rows = [[f[j] / scale[j] / math.sqrt(s) for j in range(5)] for f, s in data]
    target = [math.sqrt(s) for _, s in data]
    coef = [c / scale[j] for j, c in enumerate(_nnls(rows, target))]
    total = sum(s for _, s in data)
    little = sum(f[0] for f, _ in data) * (a0 or coef[0]) < MIN_COMPUTE_SHARE * total
    implausible = a0 > 0 and not a0 / RATE_BOUND <= coef[0] <= a0 * RATE_BOUND
    if a0 > 0 and (little or implausible):  # keep the device's own rate, fit the rest
        rest = _nnls([[f[j] / scale[j] / math.sqrt(s) for j in range(1, 5)] for f, s in data],
                     [(s - a0 * f[0]) / math.sqrt(s) for f, s in data])
        return [a0] + [c / scale[j + 1] for j, c in enumerate(rest)], False
    return coef, True


def fit_device(runs: list[MeasuredRun], model: CostModel, base: Throughput) -> RunFit | None:
    """The constants of the device the runs trained on, starting from `base` (its measured or reference figures);
    None with fewer than MIN_RUNS usable records."""
    data = [(f, _seconds(r), r) for r in runs if (f := _features(model, r)) is not None]
    if len(data) < MIN_RUNS:
        return None
    a0 = 1 / base.macs_per_s if base.macs_per_s > 0 and math.isfinite(base.macs_per_s) else 0.0
    coef, own_rate = fit_constants([(f, s) for f, s, _ in data], a0)
    rate = "fitted" if own_rate else base.basis
    ratios = tuple(sum(c * x for c, x in zip(coef, f)) / s for f, s, _ in data)
    with_cpu = [r for _, _, r in data if r.cpu_s is not None]
    share = sum(r.cpu_s for r in with_cpu) / sum(r.wall_s for r in with_cpu) if with_cpu else 1.0
    threads = sorted(r.threads or 1 for _, _, r in data)[len(data) // 2]
    parallel = max(1, (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
                   // threads) if base.kind == "cpu" else 1
    seconds = "CPU seconds" if len(with_cpu) == len(data) else "wall seconds" if not with_cpu else "CPU or wall seconds"
    fitted = dataclasses.replace(
        base, macs_per_s=1 / coef[0] if coef[0] > 0 else float("inf"), step_overhead_s=coef[1], step_param_s=coef[2],
        run_overhead_s=coef[3], checkpoint_param_s=coef[4], cpu_share=min(max(share, 0.02), float(threads)),
        parallel=parallel, fitted=True, images_per_s={}, run_seconds={}, compile_s={}, data_s_per_value=0.0,
        source=f"fitted to {len(data)} run records of this results folder ({base.device})")
    sized = sum(1 for f, _, _ in data if f[2] > 0 or f[4] > 0)
    return RunFit(fitted, len(data), ratios, seconds, rate, sized)


def fit_model(model: CostModel, times: FolderTimes) -> dict[str, RunFit]:
    """Fit every device kind the folder has records of; set the fitted figures on `model`. By kind ("cpu", "gpu")."""
    out = {}
    model.exact_sizes = True
    for kind, device in (("cpu", "cpu"), ("gpu", "cuda")):
        runs = times.runs_of(device)
        if not runs:
            continue
        base = model.fitted.pop(kind, None) or model.device(_probe(kind))
        fit = fit_device(runs, model, base)
        if fit is not None:
            model.fitted[kind] = fit.device
            out[kind] = fit
    return out


def _probe(kind: str):
    """A profile whose runs go to `kind`: CostModel.device reads only its device."""
    from repro.spec.profiles import Profile

    return Profile(description="", evidence="pipeline", device="cpu" if kind == "cpu" else "cuda")


@dataclass
class FolderFit:
    """A cost model fitted to one results folder: the device fits, the phase rates, what was measured, and the
    plans it priced them with."""

    model: CostModel
    fits: dict[str, RunFit]
    rates: Rates
    times: FolderTimes
    plans: Plans

    def describe(self, device: str | None = None) -> list[str]:
        """One line per fit; `device` ("gpu"): only the fits of that device's runs, and no command-phase rates
        (those are this machine's start-up, FLOP check and rendering, which a GPU plan does not price)."""
        lines = [f"{kind.upper()}: {fit.describe()}" for kind, fit in self.fits.items() if device in (None, kind)]
        rates = dataclasses.asdict(self.rates)
        fitted = [k for k, v in rates.items() if v["basis"] == "fitted"]
        if fitted and device is None:
            lines.append("phase rates fitted: " + ", ".join(f"{k} {rates[k]['seconds']:.3g} s" for k in fitted))
        return lines


def fit_folder(model: CostModel, results_dir, plans: Plans) -> FolderFit:
    """Fit `model` (in place) and the phase rates to what `results_dir` holds, pricing the tables as `plans` plan
    them; nothing fitted where it holds nothing. A command fits once and hands the FolderFit to what prices."""
    from repro.cost.wall_time import Rates, fit_rates

    times = read_folder(results_dir)
    fits = fit_model(model, times) if times.runs else {}
    rates = fit_rates(times, plans, model) if (times.commands or times.tables) else Rates()
    return FolderFit(model, fits, rates, times, plans)
