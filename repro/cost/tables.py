"""The tables `repro list` and `repro plan` print: costs per manifest and profile, totals, the plan, and where each
GPU rate came from. Every figure is CostModel.cost's (device time) or repro.cost.wall_time.command_time's (wall
time), so the commands and the appendix agree where they show the same thing. Torch-free.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from repro.core.terminal import Column, Grid, number_columns
from repro.cost.calibration import Throughput
from repro.cost.estimate import Cost, CostModel, device_time, duration, hours, is_run
from repro.cost.gpu_reference import model_key
from repro.cost.wall_time import Rates, command_time
from repro.data.specs import get_dataset
from repro.plan.run_config import RunConfig
from repro.plan.table_plan import Plans

if TYPE_CHECKING:  # repro.cost.plan reads the power analysis (scipy): `repro list` does not need it
    from repro.cost.plan import ClaimNeed, Plan

SHIPPED_ORDER = ("smoke", "functional", "full")  # cheapest first: the order an evaluator runs them in


# From: what a figure came from (docs/cost-model.md): "fitted" (to the run records of the results folder), a GPU
# calibration file, or a reference: the CPU reference (scaled by this CPU's speed factor where one is kept), the
# shipped GPU reference.
_COST_COLUMNS = [*number_columns("Runs", "Epochs", "Device", "Wall"), Column("From", drop=1)]


def profile_order(names) -> list[str]:
    """The shipped profiles cheapest first, then any of one's own by name."""
    names = set(names)
    return [n for n in SHIPPED_ORDER if n in names] + sorted(names - set(SHIPPED_ORDER))


def _cost_cells(cost: Cost, wall_s: float, basis: str) -> list[str]:
    """Runs, epochs, device time, the command's wall time and what that figure came from (docs/cost-model.md)."""
    if not cost.runs:
        return ["0", "0", "-", duration(wall_s), basis]
    return [str(cost.runs), f"{cost.epochs:,}", device_time(cost.device_seconds, cost.kind), duration(wall_s), basis]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def list_table(
    plans: Plans, model: CostModel, invalid: dict[str, str], rates: Rates = Rates()
) -> tuple[Grid, Grid, set[str]]:
    """(per manifest and profile, totals per profile over distinct runs, the sources of the figures). A table's
    wall time is `repro <id>` alone; a profile's, `repro verify-all` (repro.cost.wall_time).

    Each manifest is a section headed by its id, what it reproduces and its size: the profile rows under it
    keep every cost whole at 80 columns, whatever the length of an id."""
    table = Grid([Column("Profile"), *_COST_COLUMNS])
    sources: set[str] = set()
    for m in plans.manifests:
        size = f"{_count(len(m.rows), 'row')}, {_count(len(m.claims), 'claim')}"
        table.section(Text.assemble((m.id, "bold"), f" — {m.paper_ref.split(',')[0]}; {size}"))
        for name in profile_order(m.profiles):
            plan = plans.of(m.id, name)
            cost = model.cost([plan])
            if plan.profile.include and not cost.runs:
                continue  # a plan's profile that trains nothing here
            sources.update(cost.sources)
            alone = command_time([plan], model, rates, verify_all=False)
            table.add(name, *_cost_cells(cost, alone.seconds, alone.origin()))
    for mid, problem in invalid.items():
        table.section(Text.assemble((mid, "bold"), " — ", ("invalid manifest", "red"), f": {problem}"))
    totals = Grid(
        [Column("Profile"), *number_columns("Distinct runs", "Epochs", "Device", "Wall (verify-all)"), _COST_COLUMNS[4]]
    )
    for name in profile_order(plans.profiles()):
        mine = plans.at(name)
        cost = model.cost(mine)
        if cost.runs:
            whole = command_time(mine, model, rates)
            totals.add(name, *_cost_cells(cost, whole.seconds, whole.origin()))
    return table, totals, sources


def plan_table(plan: Plan) -> Grid:
    """One line per claim the plan decides, under its table's id, in the plan's order (#): the seeds 80% power
    needs, its runs, its GPU-hours (the figure the appendix gives at those seeds) and those it adds to the plan
    (less what claims chosen before it share); a table's trained readings in one line, at the place of its first
    (fits 80 columns; `needs_table` is the detail, one line per alternative)."""
    table = Grid([Column("#", right=True), Column("Claim"), *number_columns("Seeds", "Runs", "GPU-h", "Added")])
    ranked = list(enumerate(plan.chosen, 1))
    for manifest in dict.fromkeys(c.need.manifest for _, c in ranked):
        table.section(manifest)
        mine = [(i, c) for i, c in ranked if c.need.manifest == manifest]
        readings = [(i, c) for i, c in mine if c.need.claim.startswith("reading:")]
        for i, c in mine:
            n = c.need
            if not n.claim.startswith("reading:"):
                table.add(str(i), n.claim, str(n.seeds or "-"), str(n.runs), hours(n.gpu_seconds), hours(c.added_s))
            elif (i, c) == readings[0]:
                seeds = {r.need.seeds for _, r in readings}
                runs = {k for _, r in readings for k in r.need.items if is_run(k)}
                table.add(
                    str(i),
                    f"readings trained: {len(readings)} alternative{'s' if len(readings) != 1 else ''}",
                    str(seeds.pop()) if len(seeds) == 1 else "-",
                    str(len(runs)),
                    hours(sum(r.need.gpu_seconds for _, r in readings)),
                    hours(sum(r.added_s for _, r in readings)),
                )
    return table


def left_out_line(plan: Plan) -> str:
    """The claims the plan leaves out, counted by why (the words before a reason's colon)."""
    reasons = Counter(why.split(":")[0] for _, why in plan.left_out)
    parts = "; ".join(f"{n} {why}" for why, n in reasons.most_common())
    return f"left out: {len(plan.left_out)} ({parts}); `-v` lists each with why" if plan.left_out else ""


def needs_table(needs: list[ClaimNeed], plan: Plan, verbose: bool = False) -> Grid:
    """One row per empirical claim, under its table's id (claim ids stay whole at 80 columns), the chosen ones
    first in the plan's order; why a claim was left out, and (verbose) where its seed count comes from, are
    prose, below the table when it is narrow."""
    order = {c.need.key: i for i, c in enumerate(plan.chosen)}
    added = {c.need.key: c for c in plan.chosen}
    why_out = {n.key: why for n, why in plan.left_out}
    columns = [Column("Claim"), *number_columns("Weight", "Seeds", "Runs", "GPU-h alone", "GPU-h added", "Plan")]
    table = Grid(
        [*columns, Column("Why", prose=True, drop=1)]
        + ([Column("Seeds from", prose=True, drop=2), Column("Rows", right=True, drop=2)] if verbose else [])
    )
    rank: dict[str, int] = {}
    for n in needs:
        rank[n.manifest] = min(rank.get(n.manifest, len(needs)), order.get(n.key, len(needs)))
    for manifest in sorted(rank, key=lambda m: (rank[m], m)):
        table.section(manifest)
        for n in sorted(
            (n for n in needs if n.manifest == manifest),
            key=lambda n: (n.key not in order, order.get(n.key, 0), -n.weight, n.key),
        ):
            c = added.get(n.key)
            plan_cell = Text(f"#{order[n.key] + 1}", style="green") if c else Text("out", style="yellow")
            why = (f"{c.shared} runs shared" if c.shared else "") if c else why_out[n.key]
            numbers = [f"{n.weight:g}", str(n.seeds or "-"), str(n.runs), hours(n.gpu_seconds)]
            detail = [n.seeds_why, str(len(n.rows))] if verbose else []
            table.add(n.claim, *numbers, hours(c.added_s) if c else "", plan_cell, why, *detail)
    return table


# --------------------------------------------------------------------------- where each GPU rate came from
@dataclass(frozen=True)
class RateSource:
    manifest: str
    runs: int
    images_per_s: float | None  # the model's rate; None: priced by multiply-adds
    measured_by: str  # the check, "<manifest>.<row>*" (its table's heaviest row, standing in), or "MACs"
    input: str  # the input path's rate, "unmeasured", or "" where the run reads its data from memory


def _source(cfg: RunConfig, manifest_id: str, device: Throughput, model: CostModel) -> tuple[float | None, str, str]:
    rate = device.model_rate(cfg.dataset, cfg.backbone, cfg.head)
    if rate:
        by = device.model_checks[model_key(cfg.dataset, cfg.backbone, cfg.head)]
    elif device.images_per_s.get(manifest_id):
        rate, by = device.images_per_s[manifest_id], device.rate_checks.get(manifest_id, manifest_id) + "*"
    else:
        by = "MACs"
    feed, text = model.input_rate(cfg, device), ""
    if cfg.data == "real" and not get_dataset(cfg.dataset).in_memory:
        text = f"{device.inputs[cfg.dataset].path} {feed:,.0f}" if feed else "unmeasured"
    return rate, by.rsplit("/", 1)[-1], text  # the check's name: "train/imagenet/table5.k2_moe" -> "table5.k2_moe"


def rate_sources(plans: Plans, model: CostModel) -> list[RateSource]:
    """Per manifest, its GPU profiles' distinct runs (as its plans hold them) grouped by the rate and check that
    price them."""
    out = []
    for m in plans.manifests:
        groups: dict[tuple[float | None, str, str], set[str]] = {}
        for name in m.profiles:
            plan = plans.of(m.id, name)
            device = model.device(plan.profile)
            if device.kind != "gpu" or not device.measured_in:  # only a GPU priced by a calibration's figures
                continue
            for p in plan.runs:
                groups.setdefault(_source(p.cfg, m.id, device, model), set()).add(p.cfg.hash)
        for (rate, by, text), runs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            out.append(RateSource(m.id, len(runs), rate, by, text))
    return out


def rate_grid(sources: list[RateSource]) -> Grid:
    """One line per table: its runs, the range of their rates, its input path and the checks behind them."""
    grid = Grid(
        [Column("Table"), *number_columns("Runs", "Images/s", "Input /s"), Column("Measured by", prose=True, drop=1)]
    )
    for manifest in dict.fromkeys(s.manifest for s in sources):
        mine = [s for s in sources if s.manifest == manifest]
        rates = sorted(s.images_per_s for s in mine if s.images_per_s is not None)
        span = "-" if not rates else f"{rates[0]:,.0f}" + (f"-{rates[-1]:,.0f}" if rates[-1] != rates[0] else "")
        runs: Counter[str] = Counter()
        for s in mine:  # a check's runs together, whatever their input
            runs[s.measured_by] += s.runs
        inputs = ", ".join(dict.fromkeys(s.input for s in mine if s.input))
        checks = ", ".join(f"{by.removeprefix(manifest + '.')} ({n})" for by, n in runs.items())
        grid.add(manifest, str(sum(runs.values())), span, inputs, checks)
    return grid


RATES_NOTE = (
    "Measured by: the `repro bench gpu` checks whose images/s price the table's runs (how many in brackets): "
    "a run's own model, else (*) its table's heaviest row standing in, else MACs: multiply-adds at the "
    "median measured rate. Input: the images/s of the input path chosen for a dataset streamed from image "
    "folders; such a run is priced at the lesser of the two, or at its model's rate where the input is "
    "unmeasured."
)
