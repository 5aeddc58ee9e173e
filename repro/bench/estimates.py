"""How well the fitted cost model predicts what a results folder measured: estimate / measured ratios.

The model is fitted (repro.cost.fit) to the folder's records, but, with `fit_on`,
not to the runs and tables of `profile` outside those tables: they are held out, as the tables still to
run are when `repro list --results-dir` estimates them after the first ones ran. Each table of the profile
with a measured time gets its estimate / measured ratio, each held-out run its predicted / measured
seconds, and the profile's command its ratio where its wall time is known (timings.json, or `wall_s`
measured outside, e.g. with GNU time). The goal (issue: estimates fitted to the runs) is 0.7-1.3 for the
tables held out together and for the whole command.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from repro.cost.estimate import CostModel
from repro.cost.fit import fit_model, fit_rates
from repro.cost.taken import Compared, compare_commands, compare_tables
from repro.cost.wall_time import BASES, command_time
from repro.cost.measured import FolderTimes, read_folder
from repro.plan.table_plan import Plans, TablePlan

GOAL = (0.7, 1.3)


@dataclass
class EstimateBench:
    profile: str
    fit_on: tuple[str, ...]  # the profile's tables fitted on; empty: all (in-sample)
    fitted: list[str]  # the fit, in words
    tables: list[Compared] = field(default_factory=list)
    held_out: Compared | None = None  # the held-out tables together
    command: Compared | None = None
    run_ratios: list[float] = field(default_factory=list)  # predicted / measured seconds of each held-out run

    @property
    def within_goal(self) -> bool | None:
        checked = [c.ratio for c in (self.held_out, self.command) if c is not None and c.ratio is not None]
        return all(GOAL[0] <= r <= GOAL[1] for r in checked) if checked else None


def _hashes(plans: list[TablePlan]) -> set[str]:
    return {h for plan in plans for h in plan.configs()}


def held_out_times(times: FolderTimes, plans: Plans, profile: str, fit_on: tuple[str, ...]) -> FolderTimes:
    """The folder's measurements without the profile's runs, tables and commands outside `fit_on`."""
    mine = plans.at(profile)
    kept, out = [p for p in mine if p.id in fit_on], [p for p in mine if p.id not in fit_on]
    drop = _hashes(out) - _hashes(kept)
    runs = {h: r for h, r in times.runs.items() if h not in drop}
    tables = dict(times.tables)
    tables[profile] = {k: v for k, v in times.tables.get(profile, {}).items() if k in fit_on}
    commands = dict(times.commands)
    commands[profile] = {
        k: v for k, v in times.commands.get(profile, {}).items() if k != "verify-all" and set(v.tables) <= set(fit_on)
    }
    return FolderTimes(runs, tables, commands)


def bench_estimates(
    results_dir: Path,
    profile: str,
    plans: Plans,
    fit_on: tuple[str, ...] = (),
    wall_s: float | None = None,
    model: CostModel | None = None,
) -> EstimateBench:
    times = read_folder(results_dir)
    training = held_out_times(times, plans, profile, fit_on) if fit_on else times
    model = model or CostModel()
    fits = fit_model(model, training)
    rates = fit_rates(training, plans, model)
    fitted = [f"{kind.upper()}: {fit.describe()}" for kind, fit in fits.items()]
    fitted += [f"rate {k}: {v['seconds']:.3g} s ({v['basis']})" for k, v in dataclasses.asdict(rates).items()]
    out = EstimateBench(profile, fit_on, fitted)
    out.tables = [c for c in compare_tables(plans, profile, model, times, rates) if c.measured_s is not None]
    if fit_on:
        rest = [c for c in out.tables if c.what not in fit_on]
        if rest:
            out.held_out = Compared(
                profile,
                f"{len(rest)} table{'' if len(rest) == 1 else 's'} held out",
                sum(c.estimated_s for c in rest),
                max((c.basis for c in rest), key=BASES.index),
                sum(c.measured_s for c in rest if c.measured_s is not None),  # every one: out.tables are measured
                "the tables' measured wall times",
            )
        mine = plans.at(profile)
        held = _hashes([p for p in mine if p.id not in fit_on]) - _hashes([p for p in mine if p.id in fit_on])
    else:
        held = _hashes(plans.at(profile))
    for h in sorted(held & set(times.runs)):
        run = times.runs[h]
        device = model.fitted.get("cpu" if run.device == "cpu" else "gpu")
        if device is not None:
            t = model.run_time(run.cfg, run.manifest, device)
            seconds = run.cpu_s if run.cpu_s is not None else run.wall_s
            out.run_ratios.append((t.compute_s + t.overhead_s) / seconds)
    commands = compare_commands(plans, profile, model, times, rates)
    out.command = next((c for c in commands if c.what == "verify-all"), None)
    if out.command is None and wall_s:
        estimate = command_time(plans.at(profile), model, rates)
        out.command = Compared(profile, "verify-all", estimate.seconds, estimate.basis(), wall_s, "given (--wall)")
    return out
