"""What deciding one claim at a profile costs: the runs of the rows it reads, and the counting and timing of them.

A claim reads rows (repro.claims.references.claim_rows), its own table's and, for a finding that spans tables,
other tables' (repro.claims.across). Its cost is the cost model's for those tables cut down to those rows
(CostModel.cost, repro.cost.wall_time.command_time), labelled as the model labels it: nothing is priced here that
the cost model does not price, so a change to it shows in every claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from repro.claims.across import qualified_ids
from repro.claims.references import claim_rows
from repro.cost.estimate import CostModel, device_time, duration
from repro.cost.wall_time import BASES, Rates, command_time
from repro.plan.manifest import Claim
from repro.plan.table_plan import TablePlan

COUNTING_PHASES = ("FLOP counting", "latency")  # the parts of a table's time that are neither training nor fixed


@dataclass(frozen=True)
class ClaimCost:
    profile: str
    runs: int  # training runs, each counted once
    kind: str  # "gpu" or "cpu": what device_seconds are seconds of
    device_seconds: float  # of the training runs
    device_basis: str  # fitted, measured or reference
    counting_seconds: float  # wall time of its FLOP counts and latency timings
    counting_basis: str
    source: str  # where the device figures come from, as the cost model says it

    @property
    def basis(self) -> str:
        """The weakest basis of the parts that cost anything."""
        parts = [
            b for b, s in ((self.device_basis, self.device_seconds), (self.counting_basis, self.counting_seconds)) if s
        ]
        return max(parts or [self.counting_basis], key=BASES.index)

    def text(self) -> str:
        """'1.5 GPU-h (12 runs, reference)', '~3 s wall (FLOP counts, fitted)'."""
        if self.runs:
            runs = f"{self.runs} run{'' if self.runs == 1 else 's'}"
            return f"{device_time(self.device_seconds, self.kind)} ({runs}, {self.device_basis})"
        if self.counting_seconds != self.counting_seconds:
            return "not estimated: FLOP counts not cached"
        wall = f"~{self.counting_seconds:.1f} s" if self.counting_seconds < 10 else duration(self.counting_seconds)
        return f"{wall} wall, no training ({self.counting_basis})"


def claim_plan(plan: TablePlan, claim: Claim) -> TablePlan:
    """The table's plan cut down to the rows the claim reads, as the cost model prices tables."""
    return plan.only(claim_rows(claim, plan.manifest.comparisons), (claim.id,))


def claim_tables(plan: TablePlan, claim: Claim, others: Mapping[str, TablePlan] | None = None) -> list[TablePlan]:
    """The claim's table cut down to the rows it reads, then each other table it reads ("<manifest>:<id>",
    repro.claims.across), cut down to the rows it reads there: what must run for it to be decided. `others`:
    the other tables' plans at the same profile, by id."""
    tables = [claim_plan(plan, claim)]
    for table, ids in sorted(qualified_ids(claim).items()):
        other = (others or {}).get(table)
        if other is None:  # a table not given: priced without it (the load refuses one that does not exist)
            continue
        m = other.manifest
        rows = {r.id for r in m.rows if r.id in ids}
        rows |= {r for c in m.comparisons if c.id in ids for r in (c.row, c.baseline)}
        tables.append(other.only(rows))
    return tables


def claim_cost(
    plan: TablePlan,
    claim: Claim,
    model: CostModel,
    rates: Rates = Rates(),
    others: Mapping[str, TablePlan] | None = None,
) -> ClaimCost:
    """The claim's runs and counts at the plan's profile on the device that profile runs on, the other tables' it
    reads among them (`others`: their plans by id), each run counted once. An analytic claim is decided from its
    rows' counts alone (a FLOP reduction between two trained rows): it costs their counting, none of their runs."""
    tables = claim_tables(plan, claim, others)
    device = model.device(plan.profile)
    t = command_time(tables, model, rates, verify_all=False)
    counting = [p for p in t.parts if p.table and p.phase in COUNTING_PHASES and p.seconds]
    seconds = sum(p.seconds for p in counting)
    basis = max((p.basis for p in counting), key=BASES.index, default=rates.flop_model.basis)
    if claim.scope == "analytic":
        return ClaimCost(plan.profile_name, 0, device.kind, 0.0, device.basis, seconds, basis, device.source)
    cost = model.cost(tables)
    return ClaimCost(
        plan.profile_name, cost.runs, cost.kind, cost.device_seconds, device.basis, seconds, basis, device.source
    )
