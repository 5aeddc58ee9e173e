"""The tables `repro list` and `repro plan` print: costs per manifest and profile, totals, the plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from repro.cost.wall_time import Rates, command_time
from repro.cost.estimate import Cost, CostModel, device_time, duration, hours
from repro.plan.table_plan import Plans
from repro.core.terminal import Column, Grid

if TYPE_CHECKING:  # repro.cost.plan reads the power analysis (scipy): `repro list` does not need it
    from repro.cost.plan import ClaimNeed, Plan


def _cost_cells(cost: Cost, wall_s: float, basis: str) -> list[str]:
    """Runs, epochs, device time, the command's wall time and what that figure came from (docs/cost-model.md)."""
    if not cost.runs:
        return ["0", "0", "-", duration(wall_s), basis]
    return [str(cost.runs), f"{cost.epochs:,}", device_time(cost.device_seconds, cost.kind), duration(wall_s), basis]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def list_table(plans: Plans, model: CostModel, invalid: dict[str, str],
               rates: Rates = Rates()) -> tuple[Grid, Grid, set[str]]:
    """(per manifest and profile, totals per profile over distinct runs, the sources of the figures). A table's
    wall time is `repro <id>` alone; a profile's, `repro verify-all` (repro.cost.wall_time).

    Each manifest is a section headed by its id, what it reproduces and its size: the profile rows under it
    keep every cost whole at 80 columns, whatever the length of an id."""
    table = Grid([Column("Profile"), *_COST_COLUMNS])
    sources: set[str] = set()
    for m in plans.manifests:
        table.section(Text.assemble((m.id, "bold"), f" — {m.paper_ref.split(',')[0]}; {_count(len(m.rows), 'row')}, "
                                    f"{_count(len(m.claims), 'claim')}"))
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
    totals = Grid([Column("Profile"), Column("Distinct runs", right=True), *_COST_COLUMNS[1:3],
                   Column("Wall (verify-all)", right=True), _COST_COLUMNS[4]])
    for name in profile_order(plans.profiles()):
        mine = plans.at(name)
        cost = model.cost(mine)
        if cost.runs:
            whole = command_time(mine, model, rates)
            totals.add(name, *_cost_cells(cost, whole.seconds, whole.origin()))
    return table, totals, sources


# From: what a figure came from (docs/cost-model.md): "fitted" (to the run records of the results folder), a GPU
# calibration file, or a reference: the CPU reference (scaled by this CPU's speed factor where one is kept), the
# shipped GPU reference.
_COST_COLUMNS = [Column("Runs", right=True), Column("Epochs", right=True), Column("Device", right=True),
                 Column("Wall", right=True), Column("From", drop=1)]



SHIPPED_ORDER = ("smoke", "functional", "full")  # cheapest first: the order an evaluator runs them in


def profile_order(names) -> list[str]:
    """The shipped profiles cheapest first, then any of one's own by name."""
    names = set(names)
    return [n for n in SHIPPED_ORDER if n in names] + sorted(names - set(SHIPPED_ORDER))


def plan_table(plan: Plan) -> Grid:
    """One line per claim the plan decides, under its table's id, in the plan's order (#): the seeds 80% power
    needs, its runs and the GPU-hours it adds to the plan (fits 80 columns; `needs_table` is the detail)."""
    table = Grid([Column("#", right=True), Column("Claim"), Column("Seeds", right=True), Column("Runs", right=True),
                  Column("GPU-h", right=True)])
    ranked = list(enumerate(plan.chosen, 1))
    for manifest in dict.fromkeys(c.need.manifest for _, c in ranked):
        table.section(manifest)
        for i, c in ((i, c) for i, c in ranked if c.need.manifest == manifest):
            table.add(str(i), c.need.claim, str(c.need.seeds or "-"), str(len(c.need.runs)), hours(c.added_s))
    return table


def left_out_line(plan: Plan) -> str:
    """The claims the plan leaves out, counted by why (the words before a reason's colon)."""
    reasons: dict[str, int] = {}
    for _, why in plan.left_out:
        key = why.split(":")[0]
        reasons[key] = reasons.get(key, 0) + 1
    parts = "; ".join(f"{n} {why}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return f"left out: {len(plan.left_out)} ({parts}); `-v` lists each with why" if plan.left_out else ""


def needs_table(needs: list[ClaimNeed], plan: Plan, verbose: bool = False) -> Grid:
    """One row per empirical claim, under its table's id (claim ids stay whole at 80 columns), the chosen ones
    first in the plan's order; why a claim was left out, and (verbose) where its seed count comes from, are
    prose, below the table when it is narrow."""
    order = {c.need.key: i for i, c in enumerate(plan.chosen)}
    added = {c.need.key: c for c in plan.chosen}
    why_out = {n.key: why for n, why in plan.left_out}
    table = Grid([Column("Claim"), Column("Weight", right=True), Column("Seeds", right=True),
                  Column("Runs", right=True), Column("GPU-h alone", right=True), Column("GPU-h added", right=True),
                  Column("Plan", right=True), Column("Why", prose=True, drop=1)]
                 + ([Column("Seeds from", prose=True, drop=2), Column("Rows", right=True, drop=2)] if verbose else []))
    rank = {}
    for n in needs:
        rank[n.manifest] = min(rank.get(n.manifest, len(needs)), order.get(n.key, len(needs)))
    for manifest in sorted(rank, key=lambda m: (rank[m], m)):
        table.section(manifest)
        for n in sorted((n for n in needs if n.manifest == manifest),
                        key=lambda n: (n.key not in order, order.get(n.key, 0), -n.weight, n.key)):
            c = added.get(n.key)
            plan_cell = Text(f"#{order[n.key] + 1}", style="green") if c else Text("out", style="yellow")
            why = (f"{c.shared} runs shared" if c.shared else "") if c else why_out[n.key]
            table.add(n.claim, f"{n.weight:g}", str(n.seeds or "-"), str(len(n.runs)), hours(n.gpu_seconds),
                      hours(c.added_s) if c else "", plan_cell, why,
                      *([n.seeds_why, str(len(n.rows))] if verbose else []))
    return table
