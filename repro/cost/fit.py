"""The cost model fitted to what a results folder measured: each device's run constants and the phase rates.

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
that rate, `a` stays that rate and the rest is fitted.

Load: every estimate is a quiet machine's, so a measurement taken under load (load average above the cores at its
start or end, repro.cost.measured) is left out of the fit: a run record, a command's phases, a table's time. Its
wall time is stretched by the load, and its CPU seconds too, if less (docs/cost-model.md). Wall seconds = s / the
CPU share of the records (CPU seconds per wall second). Where the CPU reference lists a run, the fit prices it at
its CPU seconds there times what the folder's records of listed runs took here over there.

The phase rates (`fit_rates`) are the command's wall seconds the run model does not price (start-up, FLOP
counting, worker processes, latency, the rest, the report), fitted to the quiet commands of `timings.json`
(else to the tables' wall times its files show) by repro.cost.wall_time's units.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from repro.core.settings import Settings
from repro.cost.calibration import Throughput, cores
from repro.cost.estimate import CostModel
from repro.cost.measured import FolderTimes, MeasuredRun, read_folder
from repro.cost.wall_time import Rate, Rates, command_time

if TYPE_CHECKING:
    from repro.plan.table_plan import Plans

MIN_RUNS = 3
MIN_COMPUTE_SHARE = 0.10  # below this share of the runs' time, the records cannot pin the compute rate
# each kind of device the records fit, with the Profile.device its runs train on
_DEVICES: tuple[tuple[str, Literal["cpu", "cuda"]], ...] = (("cpu", "cpu"), ("gpu", "cuda"))
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
    busy: int = 0  # records measured under load, left out
    listed: int = 0  # records of runs the CPU reference lists
    factor: float = 0.0  # their CPU seconds here over there: what the reference's listed runs are priced at

    def spread(self) -> tuple[float, float, float]:
        """(10th percentile, median, 90th percentile) of the predicted / measured ratios."""
        r = sorted(self.ratios)
        low, median, high = (r[min(len(r) - 1, int(p * len(r)))] for p in (0.1, 0.5, 0.9))
        return low, median, high

    def describe(self) -> str:
        lo, mid, hi = self.spread()
        notes = [f"compute rate {self.compute_rate}"]
        if self.sized != self.runs:
            notes.append(
                f"model sizes counted for {self.sized} of them, the others priced by area-scaled counts "
                "(`repro list --results-dir` counts them once)"
            )
        if self.busy:
            notes.append(f"{self.busy} more measured under load left out")
        if self.listed:
            notes.append(
                f"the runs the CPU reference lists at its CPU seconds x {self.factor:.2f}, "
                f"what {self.listed} of them took here over there"
            )
        return (
            f"fitted to {self.runs} run records ({self.seconds}; predicted / measured per run: median {mid:.2f}, "
            f"10-90% {lo:.2f}-{hi:.2f}; {'; '.join(notes)})"
        )


def _nnls(rows: list[list[float]], target: list[float]):
    from scipy.optimize import nnls

    import numpy as np

    x, _ = nnls(np.asarray(rows, dtype=float), np.asarray(target, dtype=float))
    return [float(v) for v in x]


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
    coef = [c / scale[j] for j, c in enumerate(_nnls(rows, [math.sqrt(s) for _, s in data]))]
    little = sum(f[0] for f, _ in data) * (a0 or coef[0]) < MIN_COMPUTE_SHARE * sum(s for _, s in data)
    implausible = a0 > 0 and not a0 / RATE_BOUND <= coef[0] <= a0 * RATE_BOUND
    if a0 > 0 and (little or implausible):  # keep the device's own rate, fit the rest
        rest = _nnls([row[1:] for row in rows], [(s - a0 * f[0]) / math.sqrt(s) for f, s in data])
        return [a0] + [c / scale[j + 1] for j, c in enumerate(rest)], False
    return coef, True


def fit_device(runs: list[MeasuredRun], model: CostModel, base: Throughput) -> RunFit | None:
    """The constants of the device the runs trained on, starting from `base` (its measured or reference figures);
    None with fewer than MIN_RUNS usable records measured quiet."""
    quiet = [(f, r) for r in runs if not r.busy if (f := _features(model, r)) is not None]
    data = [(f, r.cpu_s if r.cpu_s is not None else r.wall_s, r) for f, r in quiet]
    if len(data) < MIN_RUNS:
        return None
    a0 = 1 / base.macs_per_s if base.macs_per_s > 0 and math.isfinite(base.macs_per_s) else 0.0
    coef, own_rate = fit_constants([(f, s) for f, s, _ in data], a0)
    ratios = tuple(sum(c * x for c, x in zip(coef, f)) / s for f, s, _ in data)
    with_cpu = [(r, r.cpu_s) for _, _, r in data if r.cpu_s is not None]
    share = sum(c for _, c in with_cpu) / sum(r.wall_s for r, _ in with_cpu) if with_cpu else 1.0
    # The runs the CPU reference lists keep their own seconds there, times what this folder's records of them took
    # over what they took there: a speed factor measured on real runs, where the run model is only a model.
    listed = [(r, c) for r, c in with_cpu if r.hash in base.run_seconds]
    factor = sum(c for _, c in listed) / sum(base.run_seconds[r.hash] for r, _ in listed) if listed else 0.0
    threads = sorted(r.threads or 1 for _, _, r in data)[len(data) // 2]
    seconds = "CPU seconds" if len(with_cpu) == len(data) else "wall seconds" if not with_cpu else "CPU or wall seconds"
    fitted = dataclasses.replace(
        base,
        macs_per_s=1 / coef[0] if coef[0] > 0 else float("inf"),
        step_overhead_s=coef[1],
        step_param_s=coef[2],
        run_overhead_s=coef[3],
        checkpoint_param_s=coef[4],
        cpu_share=min(max(share, 0.02), float(threads)),
        parallel=max(1, cores() // threads) if base.kind == "cpu" else 1,
        fitted=True,
        images_per_s={},
        run_seconds={h: s * factor for h, s in base.run_seconds.items()} if factor else {},
        compile_s={},
        data_s_per_value=0.0,
        source=f"fitted to {len(data)} run records of this results folder ({base.device})",
    )
    sized = sum(1 for f, _, _ in data if f[2] > 0 or f[4] > 0)
    basis, busy = "fitted" if own_rate else base.basis, sum(r.busy for r in runs)
    return RunFit(fitted, len(data), ratios, seconds, basis, sized, busy, len(listed), factor)


def fit_model(model: CostModel, times: FolderTimes) -> dict[str, RunFit]:
    """Fit every device kind the folder has records of; set the fitted figures on `model`. By kind ("cpu", "gpu").
    A fitted model prices every run by the model built at its resolution, as its records were fitted."""
    from repro.spec.profiles import Profile

    out, exact = {}, model.exact_sizes
    model.exact_sizes = True
    for kind, device in _DEVICES:
        runs = times.runs_of(device)
        if not runs:
            continue
        probe = Profile(description="", evidence="pipeline", device=device)
        base = model.fitted.pop(kind) if kind in model.fitted else model.device(probe)
        fit = fit_device(runs, model, base)
        if fit is not None:
            model.fitted[kind] = fit.device
            out[kind] = fit
    model.exact_sizes = exact or bool(out)
    return out


# What fit_rates prices a command with to read each phase's units back (models counted, latency estimated,
# runs priced), whatever the reference rates are: one second a model, the latency estimate as it is, no
# worker start-up.
_UNITS = Rates(flop_model=Rate(1.0, "", ""), workers=Rate(0.0, "", ""), latency=Rate(1.0, "", ""))


def fit_rates(times: FolderTimes, plans: Plans, model: CostModel) -> Rates:
    """Each rate fitted to what the folder measured quiet (timings.json's phases; else the tables' wall times from
    the file times, for the per-table rest), the others left at their reference. `model` carries the fitted
    run figures already (fit_model)."""
    units: dict[str, list[tuple[float, float]]] = defaultdict(list)  # rate -> (measured seconds, units) each

    for profile, commands in times.commands.items():
        for name, cmd in commands.items():
            mine = cmd.plans(plans, profile)
            if cmd.busy or _all_reused(cmd, mine, times):
                continue
            estimate = command_time(
                mine, model, _UNITS, verify_all=name == "verify-all", recorded=cmd.reused(times.runs)
            )
            measured, priced = defaultdict(float, cmd.phases), defaultdict[str, float](float)
            for p in estimate.parts:
                priced[p.phase] += p.seconds
            units["startup"].append((measured["start-up and imports"], 1.0))
            flops = ("FLOP check", "FLOP counting")
            units["flop_model"].append((sum(measured[k] for k in flops), sum(priced[k] for k in flops)))
            if priced["latency"]:
                units["latency"].append((measured["latency"], priced["latency"]))
            training = sum(1 for p in estimate.parts if p.phase == "training" and p.seconds > 0)
            if training:  # training less the runs (_UNITS: no worker term)
                spent = measured["training"] + measured["stand-in pretraining"] - priced["training"]
                units["workers"].append((max(0.0, spent), training))
            rest = sum(measured[k] for k in ("data checks", "claims", "tables"))
            units["rest"].append((rest + max(0.0, cmd.wall_s - sum(cmd.phases.values())), max(1, len(mine))))
            if name == "verify-all":
                units["report"].append((sum(measured[k] for k in ("figures", "report", "timings")), 1.0))
    if "rest" not in units:  # no timings.json: the tables' wall times less what the model prices in them
        bare = dataclasses.replace(_UNITS, rest=Rate(0.0, "", ""))
        residuals: dict[bool, list[float]] = {True: [], False: []}  # by whether the table trained runs
        for profile, tables in times.tables.items():
            for manifest_id, table in tables.items():
                plan = plans.by_key.get((manifest_id, profile))
                if plan is None or table.phases or table.busy:
                    continue
                own = command_time([plan], model, bare, verify_all=False)
                priced_s = sum(p.seconds for p in own.parts if p.table == plan.id and p.phase != "FLOP counting")
                trains = any(p.phase == "training" and p.seconds > 0 for p in own.parts)
                residuals[trains].append(max(0.0, table.wall_s - priced_s))
        units["rest"] += [(s, 1.0) for s in residuals[False]]
        rest = sum(residuals[False]) / len(residuals[False]) if residuals[False] else Rates().rest.seconds
        units["workers"] += [(max(0.0, s - rest), 1.0) for s in residuals[True]]
    fitted = {
        name: Rate(sum(s for s, _ in obs) / count, "fitted", f"{len(obs)} measurement(s) in this results folder")
        for name, obs in units.items()
        if (count := sum(n for _, n in obs)) > 0
    }
    return dataclasses.replace(Rates(), **fitted)


def _all_reused(cmd, plans: list, times: FolderTimes) -> bool:
    """A command that reused every run it planned measured no training, and found its counts kept: not the work
    an estimate prices (a cold command's), so its phases fit no rate."""
    planned = {h for plan in plans for h in plan.configs()}
    return bool(planned) and planned <= cmd.reused(times.runs)


@dataclass
class FolderFit:
    """The estimate of one command: a cost model fitted to one results folder (the device fits, the phase rates),
    what was measured there, and the plans it priced them with. A command builds it once (`fit_folder`) and every
    figure it prints or writes comes from it."""

    model: CostModel
    fits: dict[str, RunFit]
    rates: Rates
    times: FolderTimes
    plans: Plans

    def describe(self, device: str | None = None) -> list[str]:
        """One line per fit; `device` ("gpu"): only the fits of that device's runs, and no command-phase rates
        (those are this machine's start-up, FLOP check and rendering, which a GPU plan does not price)."""
        lines = [f"{kind.upper()}: {fit.describe()}" for kind, fit in self.fits.items() if device in (None, kind)]
        if device is not None:
            return lines
        rates = dataclasses.asdict(self.rates)
        if fitted := [k for k, v in rates.items() if v["basis"] == "fitted"]:
            lines.append("phase rates fitted: " + ", ".join(f"{k} {rates[k]['seconds']:.3g} s" for k in fitted))
        busy_runs = sum(r.busy for r in self.times.runs.values())
        busy = [f"{busy_runs} run records"] if busy_runs else []
        reused: list[str] = []
        for profile, commands in self.times.commands.items():
            for name, cmd in commands.items():
                if cmd.busy or _all_reused(cmd, cmd.plans(self.plans, profile), self.times):
                    (busy if cmd.busy else reused).append(f"{profile} `{name}`")
        if busy:
            lines.append(f"left out of the fit, measured under load (load average above the cores): {', '.join(busy)}")
        if reused:
            lines.append(f"left out of the phase rates, every run reused (no cold work measured): {', '.join(reused)}")
        return lines


def fit_folder(model: CostModel, results_dir, plans: Plans) -> FolderFit:
    """Fit `model` (in place) and the phase rates to what `results_dir` holds, pricing the tables as `plans` plan
    them; nothing fitted where it holds nothing. A command fits once and hands the FolderFit to what prices."""
    times = read_folder(results_dir)
    fits = fit_model(model, times) if times.runs else {}
    rates = fit_rates(times, plans, model) if (times.commands or times.tables) else Rates()
    return FolderFit(model, fits, rates, times, plans)


def folder_estimate(settings: Settings, results_dir, plans: Plans, **given) -> FolderFit:
    """The estimate a command gives: the cost model under its settings (and `given`, its options: executor, data
    root, GPU calibration, reference GPU) fitted to its results folder. `repro list`, `repro plan`, `repro
    appendix` and the line a table prints before it trains all start here."""
    return fit_folder(CostModel.under(settings, **given), results_dir, plans)
