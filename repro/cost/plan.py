"""`repro plan`: what deciding each empirical claim costs, and which claims a GPU budget decides.

Besides the claims, each alternative reading a manifest trains ([[sensitivity]], repro.spec.readings) is priced
as a need of its own ("reading:<reading>/<alternative>", weight SENSITIVITY_WEIGHT): its rows and the rows
they are compared with, at the paper's seeds.

A claim needs the training rows its rule reads (directly, through the comparisons it names, and in the other
tables a finding across tables reads: repro.cost.claim_cost.claim_tables) at the seeds 80% power at the paper's
effect size needs (repro.claims.stats_audit.power_plan; at least 2, a paired test's minimum), or the paper's own
seed count where the text gives no effect size. It is priced by the cost model's one function
(CostModel.cost), as the appendix prices it at the paper's protocol: at the same seeds the two agree. A run
two claims share, even across tables, is paid once, and so is a fixed cost they share (a backbone's compilation).

The plan is a weighted budgeted cover, solved greedily: take the claim with the most weight
(Claim.weight, set in the manifests to what the paper rests on) per GPU-hour it adds, until
nothing else fits; then keep that or the heaviest single claim that fits, whichever weighs more
(the textbook guard that bounds the greedy's loss). A budget of the whole protocol's cost
decides every plannable claim: each one's added cost is at most what is left.

The plan is written as a profiles file: one profile per seed count, `plan_s<N>`, each training
only the rows of its claims (Profile.include); `repro verify-all --profiles FILE --profile
plan_s<N>` runs one, and the runs two profiles share are trained once (same config hash).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from repro.claims.across import qualified_ids
from repro.claims.references import claim_rows
from repro.cost.claim_cost import claim_tables
from repro.cost.estimate import Cost, CostModel, is_run, makespan
from repro.plan.manifest import Claim, Manifest
from repro.plan.table_plan import TablePlan, build_plan
from repro.spec.paper import paper_value
from repro.spec.profiles import Profile

BASE_PROFILE = "full"  # the paper's protocol: the plan's profiles are it with fewer rows and other seeds
MIN_SEEDS = 2
SENSITIVITY_WEIGHT = 0.5  # a reading's rows test the artifact's own choices, not a finding of the paper


@dataclass(frozen=True)
class ClaimNeed:
    """What deciding one claim takes."""

    manifest: str
    claim: str
    statement: str
    weight: float
    rows: tuple[str, ...]  # the training rows it reads, "<manifest>/<row>"
    seeds: int
    seeds_why: str
    # GPU-seconds by what it pays for (CostModel.cost's items): each run by its hash, and each fixed cost its runs
    # share, named in words ("compile ...")
    items: dict[str, float]
    problem: str = ""  # why no seed count decides it, when none does
    paper_seeds: int = 0  # the paper's own seed count for its table

    @property
    def key(self) -> str:
        return f"{self.manifest}/{self.claim}"

    @property
    def gpu_seconds(self) -> float:
        return sum(self.items.values())

    @property
    def runs(self) -> int:
        return sum(1 for k in self.items if is_run(k))


@dataclass(frozen=True)
class Choice:
    need: ClaimNeed
    added_s: float  # GPU-seconds of what it adds to the plan, in the order chosen
    shared: int  # its runs already in the plan when chosen


@dataclass(frozen=True)
class Plan:
    budget_s: float
    chosen: list[Choice]
    left_out: list[tuple[ClaimNeed, str]]  # and why
    gpu_seconds: float  # the distinct runs and fixed costs of the chosen claims
    wall_seconds: float
    runs: int
    sources: tuple[str, ...]

    @property
    def weight(self) -> float:
        return sum(c.need.weight for c in self.chosen)


def rows_read(manifest: Manifest, claim: Claim) -> tuple[str, ...]:
    """The training rows of its own table a claim's rule reads: named, through comparisons, or in metric paths."""
    trained = {r.id for r in manifest.rows if "accuracy" in r.measures}
    return tuple(r for r in claim_rows(claim, manifest.comparisons) if r in trained)


def claim_seeds(manifest: Manifest, claim: Claim) -> tuple[int | None, str]:
    """(seeds, why) for 80% power at the paper's effect size; the paper's n without one; None if none reaches it."""
    from repro.claims.stats_audit import power_plan  # scipy: only when planning

    key = claim.params.get("paper")
    pv = paper_value(manifest.paper_table, key) if isinstance(key, str) else None
    row = next(iter(power_plan([pv])), None) if pv is not None else None
    paper_n = manifest.seeds or 1
    if row is None:
        return max(MIN_SEEDS, paper_n), "the paper's n: no effect size in the text"
    if row.seeds_needed is None:
        return None, f"no seed count reaches 80% power ({row.note or 'no effect size'})"
    bound = "; d from 'p <', so at most this many" if row.bound else ""
    return max(MIN_SEEDS, row.seeds_needed), f"80% power at d={row.effect_size:.2f}{bound}"


def plan_profile(seeds: int, include: tuple[str, ...] = (), base: Profile | None = None) -> Profile:
    """The paper's protocol (the manifests' `full` profile) at `seeds`, training only `include`."""
    base = base or Profile(description="", evidence="paper")
    # the include names exactly the rows to train: the protocol's exclude (the readings' rows it leaves to a
    # request) does not apply to a plan that asks for them
    return dataclasses.replace(
        base,
        description=f"repro plan: the paper's protocol at {seeds} seeds, {len(include)} rows",
        seeds=seeds,
        include=tuple(sorted(include)),
        exclude=(),
        device="auto",
    )


def _need(
    m: Manifest,
    claim: str,
    statement: str,
    weight: float,
    tables: list[TablePlan],
    seeds: int,
    seeds_why: str,
    items: dict[str, float],
    problem: str,
) -> ClaimNeed:
    """A need of `m`'s that reads the training rows of `tables`."""
    rows = tuple(sorted(f"{t.id}/{r.id}" for t in tables for r in t.manifest.rows if "accuracy" in r.measures))
    return ClaimNeed(m.id, claim, statement, weight, rows, seeds, seeds_why, items, problem, m.seeds or 1)


def claim_needs(manifests: list[Manifest], model: CostModel) -> list[ClaimNeed]:
    """Every empirical claim that reads training rows, and every reading a manifest trains, with its rows, seeds
    and what it pays for, priced on the GPU."""
    by_id = {m.id: m for m in manifests}
    built: dict[tuple[str, int], TablePlan] = {}

    def at(m: Manifest, seeds: int) -> TablePlan:  # the paper's protocol at `seeds`, each table planned once
        if (m.id, seeds) not in built:
            built[(m.id, seeds)] = build_plan(m, f"plan_s{seeds}", plan_profile(seeds, base=m.profiles[BASE_PROFILE]))
        return built[(m.id, seeds)]

    needs = []
    for m in manifests:
        for claim in m.claims:
            if claim.scope != "empirical" or not rows_read(m, claim):
                continue
            seeds, why = claim_seeds(m, claim)
            own = at(m, seeds or 1)
            others = {t: at(by_id[t], seeds or 1) for t in qualified_ids(claim) if t in by_id}
            tables = claim_tables(own, claim, others)
            items = model.cost(tables).items if seeds else {}
            problem = "" if seeds else why
            needs.append(_need(m, claim.id, claim.statement, claim.weight, tables, seeds or 0, why, items, problem))
        needs += sensitivity_needs(m, model, at(m, max(MIN_SEEDS, m.seeds or 1)))
    return needs


def sensitivity_needs(m: Manifest, model: CostModel, plan: TablePlan) -> list[ClaimNeed]:
    """One need per alternative reading a manifest trains ([[sensitivity]]): its rows and the rows they are
    compared with, at the paper's seeds (`plan`), so that `repro plan` prices them and a plan's profile can include
    them."""
    groups: dict[str, set[str]] = {}
    for row in m.rows:
        if row.reading and "accuracy" in row.measures:
            groups.setdefault(row.reading, set()).add(row.id)
    for comp in m.comparisons:
        reading = m.row(comp.row).reading or m.row(comp.baseline).reading
        if reading in groups:
            groups[reading] |= {comp.row, comp.baseline}
    needs = []
    for reading, rows in groups.items():
        label = next(r.label for r in m.rows if r.reading == reading).rsplit(" [", 1)[-1].rstrip("]")
        table = plan.only(rows)
        seeds, why = plan.profile.seeds, "the paper's n: the rows it varies"
        assert seeds is not None, "claim_needs plans the rows at a seed count"
        name, statement = f"reading:{reading}", f"sensitivity rows: {label}"
        needs.append(_need(m, name, statement, SENSITIVITY_WEIGHT, [table], seeds, why, model.cost([table]).items, ""))
    return needs


def _greedy(needs: list[ClaimNeed], budget_s: float) -> list[Choice]:
    chosen: list[Choice] = []
    have: dict[str, float] = {}
    spent, todo = 0.0, list(needs)
    limit = budget_s * (1 + 1e-9)  # sums in another order differ in the last bits
    while todo:
        priced = [(n, sum(s for h, s in n.items.items() if h not in have)) for n in todo]
        fits = [(n, cost) for n, cost in priced if spent + cost <= limit]
        if not fits:
            break
        best, cost = max(fits, key=lambda nc: (nc[0].weight / nc[1] if nc[1] > 0 else float("inf"), nc[0].weight))
        chosen.append(Choice(best, cost, sum(h in have for h in best.items if is_run(h))))
        have.update(best.items)
        spent += cost
        todo.remove(best)
    return chosen


def make_plan(needs: list[ClaimNeed], gpu_hours: float, model: CostModel) -> Plan:
    budget_s = gpu_hours * 3600
    plannable = [n for n in needs if not n.problem]
    chosen = _greedy(plannable, budget_s)
    single = max((n for n in plannable if n.gpu_seconds <= budget_s * (1 + 1e-9)), key=lambda n: n.weight, default=None)
    if single is not None and single.weight > sum(c.need.weight for c in chosen):
        chosen = [Choice(single, single.gpu_seconds, 0)]
    items = {h: s for c in chosen for h, s in c.need.items.items()}
    left_budget = budget_s - sum(items.values())
    picked = {c.need.key for c in chosen}
    left_out = []
    for n in needs:
        if n.key in picked:
            continue
        if n.problem:
            left_out.append((n, n.problem))
            continue
        extra = sum(s for h, s in n.items.items() if h not in items)
        at_two = extra * MIN_SEEDS / n.seeds
        if n.seeds > MIN_SEEDS and at_two <= left_budget:
            why = (
                f"too few seeds for power within the budget: {n.seeds} seeds add {extra / 3600:.1f} GPU-h, "
                f"{max(left_budget, 0) / 3600:.1f} left (about {at_two / 3600:.1f} at {MIN_SEEDS} seeds, "
                "underpowered)"
            )
        else:
            why = f"cost: adds {extra / 3600:.1f} GPU-h, {max(left_budget, 0) / 3600:.1f} left"
        left_out.append((n, why))
    runs = sum(1 for h in items if is_run(h))
    wall = makespan(list(items.values()), model.executor.slots("gpu", runs))
    source = model.device(Profile(description="", evidence="paper")).source
    return Plan(budget_s, chosen, left_out, sum(items.values()), wall, runs, (source,))


def plan_profiles(plan: Plan, manifests: list[Manifest]) -> dict[str, Profile]:
    """One profile per seed count of the chosen claims, each including exactly their rows; evidence
    'reduced' where a claim runs on fewer seeds than the paper's table did (repro.plan.manifest.Profile)."""
    by_seeds: dict[int, set[str]] = {}
    fewer: set[int] = set()
    for c in plan.chosen:
        by_seeds.setdefault(c.need.seeds, set()).update(c.need.rows)
        if c.need.seeds < c.need.paper_seeds:
            fewer.add(c.need.seeds)
    base = manifests[0].profiles[BASE_PROFILE] if manifests else None
    return {
        f"plan_s{s}": dataclasses.replace(
            plan_profile(s, tuple(rows), base), evidence="reduced" if s in fewer else "paper"
        )
        for s, rows in sorted(by_seeds.items())
    }


def profiles_toml(profiles: dict[str, Profile], plan: Plan) -> str:
    """The profiles file `repro run|verify-all|list --profiles` read: [profiles.<name>] tables."""
    lines = [
        f"# Written by `repro plan`: {len(plan.chosen)} claims, {plan.runs} distinct runs, "
        f"{plan.gpu_seconds / 3600:.1f} of {plan.budget_s / 3600:.1f} GPU-hours.",
        "# Run each profile: repro verify-all --profiles THIS_FILE --profile <name> (shared runs train once).",
    ]
    lines += [f"#   plan_s{c.need.seeds}: {c.need.key} (weight {c.need.weight:g})" for c in plan.chosen]
    for name, p in profiles.items():
        lines += ["", f"[profiles.{name}]"]
        for f in dataclasses.fields(Profile):
            value = getattr(p, f.name)
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            if value is not None and value != default:
                # JSON's strings, numbers, booleans and arrays, as json.dumps writes them, are TOML's too
                lines.append(f"{f.name} = {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def write_plan(path: Path, plan: Plan, manifests: list[Manifest]) -> dict[str, Profile]:
    from repro.core.fsutil import atomic_write_text

    profiles = plan_profiles(plan, manifests)
    atomic_write_text(path, profiles_toml(profiles, plan))
    return profiles


def protocol_cost(needs: list[ClaimNeed]) -> Cost:
    """Every plannable claim at its seeds, shared runs once: the budget that decides them all."""
    items = {h: s for n in needs if not n.problem for h, s in n.items.items()}
    return Cost("gpu", sum(1 for h in items if is_run(h)), 0, sum(items.values()), sum(items.values()), (), items)
