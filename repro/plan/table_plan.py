"""A table's plan: every run, count and claim of one manifest under one profile, built once and frozen.

`build_plan(manifest, profile_name)` is where a manifest and a profile become what the stages below read:

    runs       every (row, seed) RunConfig the accuracy rows need, the dataset's settings applied
               (repro.plan.run_config.resolve: the one place)
    flop_rows  the rows whose FLOPs are counted (repro.measure.flop_check)
    latency    the rows timed (latency_rows) and the settings they are timed at (repro.plan.latency_settings)
    claims     each claim with the rows it reads, and which of those train
    left_out   each training row the profile leaves out, with the list that does (Profile.left_out_by)
    datasets   the profile as it applies to each dataset it names or the table trains on

The pipeline builds it before any measurer runs and hands it down; `repro status`, `repro report`, `repro
appendix`, `repro bench gpu` and the cost model read the same value. measure/, execution/ and train/ read
plans and never make one (tests/plan/test_table_plan.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping

from repro.claims.references import claim_rows
from repro.plan.latency_settings import LatencySettings, settings_for
from repro.plan.manifest import Claim, Manifest, Row
from repro.plan.run_config import PlannedRun, RunConfig, dataset_profile, planned_runs
from repro.spec.profiles import Profile


@dataclass(frozen=True)
class PlannedClaim:
    """A claim of the table and the rows its rule reads (named, through comparisons, in metric paths)."""

    claim: Claim
    rows: tuple[str, ...]
    trained: tuple[str, ...]  # those of `rows` that train (accuracy rows): the runs deciding it needs


@dataclass(frozen=True)
class TablePlan:
    """One manifest under one profile: everything the stages below it need, decided before any of them runs."""

    manifest: Manifest
    profile_name: str
    profile: Profile  # as it applies to this table (Profile.for_manifest, where the manifest was loaded)
    runs: tuple[PlannedRun, ...]
    flop_rows: tuple[Row, ...]
    latency_rows: tuple[Row, ...]
    latency: LatencySettings
    claims: tuple[PlannedClaim, ...]
    left_out: Mapping[str, str]  # training row id -> the list that leaves it out ("its exclude list")
    datasets: Mapping[str, Profile]  # dataset -> the profile as it applies to its rows

    @property
    def id(self) -> str:
        return self.manifest.id

    @property
    def paper_scale(self) -> bool:
        return self.profile.evidence == "paper"

    def configs(self) -> dict[str, RunConfig]:
        """The distinct runs, by hash (two rows of a table may share one)."""
        return {p.cfg.hash: p.cfg for p in self.runs}

    def runs_of(self, rows: Iterable[str]) -> tuple[PlannedRun, ...]:
        wanted = set(rows)
        return tuple(p for p in self.runs if p.row in wanted)

    def only(self, rows: Iterable[str], claims: Iterable[str] = ()) -> TablePlan:
        """The plan cut to some rows and claims, its manifest with it: what deciding part of the table takes (the
        cost of one claim, repro.cost.claim_cost), its runs as planned."""
        keep, kept_claims = set(rows), set(claims)
        m = self.manifest
        manifest = dataclasses.replace(
            m,
            rows=tuple(r for r in m.rows if r.id in keep),
            comparisons=tuple(c for c in m.comparisons if {c.row, c.baseline} <= keep),
            claims=tuple(c for c in m.claims if c.id in kept_claims),
        )
        return dataclasses.replace(
            self,
            manifest=manifest,
            runs=self.runs_of(keep),
            flop_rows=tuple(r for r in self.flop_rows if r.id in keep),
            latency_rows=tuple(r for r in self.latency_rows if r.id in keep),
            claims=tuple(c for c in self.claims if c.claim.id in kept_claims),
            left_out={r: why for r, why in self.left_out.items() if r in keep},
        )


def build_plan(manifest: Manifest, profile_name: str, profile: Profile | None = None) -> TablePlan:
    """The plan of `manifest` under the profile `profile_name` as the manifest holds it (KeyError naming the closest
    profiles), or under `profile` when given (a profile the manifest does not hold: the paper's protocol of
    `repro bench gpu`)."""
    profile = profile if profile is not None else manifest.profile(profile_name)
    trained = [r for r in manifest.rows if "accuracy" in r.measures]
    left_out = {r.id: why for r in trained if (why := profile.left_out_by(manifest.id, r.id)) is not None}
    names = dict.fromkeys([*profile.datasets, *manifest.trained_datasets()])
    datasets = {d: dataset_profile(profile, d) for d in names}
    runs = tuple(planned_runs(manifest, profile))
    trained_ids = {r.id for r in trained}
    claims = []
    for claim in manifest.claims:
        rows = claim_rows(claim, manifest.comparisons)
        claims.append(PlannedClaim(claim, rows, tuple(r for r in rows if r in trained_ids)))
    return TablePlan(
        manifest,
        profile_name,
        profile,
        runs,
        flop_rows=tuple(r for r in manifest.rows if "flops" in r.measures),
        latency_rows=tuple(r for r in manifest.rows if "latency" in r.measures),
        latency=settings_for(profile, profile.evidence == "paper"),
        claims=tuple(claims),
        left_out=left_out,
        datasets=datasets,
    )


def build_plans(manifests: Iterable[Manifest], profile_name: str) -> list[TablePlan]:
    """The plan of every manifest that holds the profile, in order (a table without it has nothing to plan)."""
    return [build_plan(m, profile_name) for m in manifests if profile_name in m.profiles]


@dataclass(frozen=True)
class Plans:
    """Every table's plan at every profile it holds: built once where a command starts (`plan_all`), then read by
    each stage the command runs (the cost model, status, the report, the appendix)."""

    manifests: tuple[Manifest, ...]
    by_key: Mapping[tuple[str, str], TablePlan]  # (manifest id, profile name) -> its plan

    def of(self, manifest_id: str, profile: str) -> TablePlan:
        return self.by_key[(manifest_id, profile)]

    def at(self, profile: str) -> list[TablePlan]:
        """The plans at `profile`, in the manifests' order (a table without that profile has none)."""
        return [self.by_key[(m.id, profile)] for m in self.manifests if (m.id, profile) in self.by_key]

    def profiles(self) -> list[str]:
        return sorted({name for _, name in self.by_key})

    def __iter__(self):
        return iter(self.by_key.values())


def plan_all(manifests: Iterable[Manifest]) -> Plans:
    """Every manifest's plan at every profile it holds."""
    manifests = tuple(manifests)
    return Plans(manifests, {(m.id, name): build_plan(m, name) for m in manifests for name in m.profiles})
