"""What deciding one claim at a profile costs: the runs of the rows it reads, and the counting and timing of them.

A claim reads rows (repro.claims.references.claim_rows: named, through its comparisons, in its metric paths).
Its cost is the cost model's for the table cut down to those rows: the device time of their (row, seed) runs
(CostModel.cost, each run once) and the wall time of their FLOP counts and latency timings
(repro.cost.wall_time.command_time), each labelled as the model labels it: fitted, measured or reference.
Nothing is priced here that the cost model does not price, so a change to it shows in every claim.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from repro.claims.references import claim_rows
from repro.cost.estimate import CostModel, device_time, duration
from repro.cost.wall_time import BASES, Rates, command_time
from repro.plan.manifest import Claim, Manifest

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
        parts = [b for b, s in ((self.device_basis, self.device_seconds), (self.counting_basis, self.counting_seconds))
                 if s]
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


def claim_manifest(manifest: Manifest, claim: Claim) -> Manifest:
    """The table cut down to the rows the claim reads, as the cost model prices tables."""
    rows = set(claim_rows(claim, manifest.comparisons))
    return dataclasses.replace(manifest, rows=tuple(r for r in manifest.rows if r.id in rows),
                               comparisons=tuple(c for c in manifest.comparisons if {c.row, c.baseline} <= rows),
                               claims=(claim,))


def claim_cost(manifest: Manifest, claim: Claim, profile: str, model: CostModel, rates: Rates = Rates()) -> ClaimCost:
    """The claim's runs and counts at `profile` on the device that profile runs on."""
    own = claim_manifest(manifest, claim)
    cost = model.cost([(own, profile)])
    device = model.device(manifest.profiles[profile])
    t = command_time([own], profile, model, rates, verify_all=False)
    counting = [p for p in t.parts if p.table == manifest.id and p.phase in COUNTING_PHASES and p.seconds]
    seconds = sum(p.seconds for p in counting)
    basis = max((p.basis for p in counting), key=BASES.index, default=rates.flop_model.basis)
    return ClaimCost(profile, cost.runs, cost.kind, cost.device_seconds, device.basis, seconds, basis, device.source)
