"""Verdict stability: the share of bootstrap resamples of the seeds under which a claim's rule gives its verdict again.

A verdict from 3-10 seeds can hang on one seed. For every decided empirical verdict (reproduced or not reproduced),
the seeds are resampled with replacement RESAMPLES times by a generator of fixed seed (so the figure is the same on
every run), and each resample is decided by the same function that decided the claim (repro.claims.verdicts
.evaluate) on the evidence as that resample would have measured it:

    paired     one draw of seed positions for every per-seed metric the claim reads (the rows' accuracies and
               routing, the comparisons' per-seed differences), so a seed's treatment and its baseline stay together
    unpaired   where the rule compares independent groups (row_above: Welch's test of two rows), each row its own draw

Shapes: B resamples, n seeds, U distinct resamples. The draws (B, n) and every comparison's gap statistics over the
resamples (U, n) are numpy arrays. A resample is a multiset of seeds, so the rule runs once per distinct multiset
(U <= B; 126 for 5 seeds), weighted by how often it was drawn. Below STABLE the report says so in words.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import special

from repro.claims.core import ClaimLike, Evidence
from repro.claims.references import COMPARISON_KEYS, claim_rows, param_refs
from repro.claims.stats import d_z_intervals
from repro.claims.verdicts import evaluate
from repro.results.measurements import STABLE, Verdict

RESAMPLES = 1000
GENERATOR_SEED = 20240515  # any fixed number: the resamples, and so the figure, are the same on every run
UNPAIRED_RULES = frozenset({"row_above"})  # rules that compare independent groups (Welch's t), not paired seeds
DECIDED = ("reproduced", "not reproduced")

__all__ = ["RESAMPLES", "STABLE", "gap_stats_batch", "stability", "with_stability"]


def gap_stats_batch(diffs: np.ndarray) -> list[dict[str, Any]]:
    """The paired gap statistics (repro.claims.stats.paired_gap(...).to_dict()) of each row of per-seed differences
    (U, n), NaN where a seed has none, all rows at once; the same conventions: n < 2 gives no spread (None), equal
    differences zero variance (p = 0 and infinite t and d when the mean is not 0). Each row with a finite d carries
    its d_z interval too ("d_ci95", repro.claims.stats.d_z_intervals), which judging the gap would compute."""
    present = ~np.isnan(diffs)  # (U, n)
    n = present.sum(axis=1)  # (U,)
    x = np.where(present, diffs, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=1) / n
        centred = np.where(present, diffs - mean[:, None], 0.0)
        sd = np.sqrt((centred**2).sum(axis=1) / (n - 1))
        lo, hi = np.where(present, diffs, np.inf).min(axis=1), np.where(present, diffs, -np.inf).max(axis=1)
        equal = hi == lo  # every difference the same: zero variance, exactly
        sd = np.where(equal, 0.0, sd)
        sem = sd / np.sqrt(n)
        t = np.where(equal, np.where(mean == 0, np.nan, np.copysign(np.inf, mean)), mean / sem)
        p = np.where(equal, np.where(mean == 0, np.nan, 0.0), 2.0 * special.stdtr(n - 1, -np.abs(t)))
        d = np.where(equal, t, mean / sd)
        half = np.where(equal, 0.0, special.stdtrit(np.maximum(n - 1, 1), 0.975) * sem)
    few = n < 2
    d_ci = {}  # row -> the d_z interval repro.claims.gaps would compute, for every row at once per seed count
    for k in np.unique(n[~few & ~equal]):
        rows = np.flatnonzero((n == k) & ~few & ~equal & np.isfinite(d))
        if rows.size:
            lo_d, hi_d = d_z_intervals(d[rows], int(k))
            d_ci.update({int(r): [float(a), float(b)] for r, a, b in zip(rows, lo_d, hi_d)})
    out = []
    for u in range(diffs.shape[0]):
        cols = np.flatnonzero(present[u])
        stats: dict[str, Any]
        if few[u]:
            stats = dict(sd=None, sem=None, t=None, p=None, d=None, ci95=[None, None])
        else:
            stats = dict(
                sd=_num(sd[u]),
                sem=_num(sem[u]),
                t=_num(t[u]),
                p=_num(p[u]),
                d=_num(d[u]),
                ci95=[_num(mean[u] - half[u]), _num(mean[u] + half[u])],
            )
        if u in d_ci:
            stats["d_ci95"] = d_ci[u]
        out.append(
            {
                "n": int(n[u]),
                "mean": _num(mean[u]),
                "df": int(n[u]) - 1,
                **stats,
                "positive": int((diffs[u, cols] > 0).sum()),
                "differences": {str(j): float(diffs[u, j]) for j in cols},
                "only_treatment": [],
                "only_baseline": [],
                "note": "",
            }
        )
    return out


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None  # as GapStats.to_dict writes NaN and inf


def _per_seed(value: Any) -> dict[str, float] | None:
    """A per-seed metric ({seed: number}) as {str(seed): number}; None for anything else."""
    if not isinstance(value, dict) or not value:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
        return None
    return {str(k): float(v) for k, v in value.items()}


def _read(claim: ClaimLike, ev: Evidence) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """(per-seed row metrics by path, per-seed gap differences by path) of what the claim reads."""
    comparisons = {r for k in COMPARISON_KEYS for r in param_refs(claim.params.get(k) or ()) if isinstance(r, str)}
    pairs = [_Pair(c, *ev.comparison_rows[c]) for c in ev.comparison_rows]
    rows = set(claim_rows(claim, pairs))
    per_row, gaps = {}, {}
    for path, value in ev.metrics.items():
        kind, _, rest = path.partition(".")
        ident, _, metric = rest.rpartition(".")
        if kind == "rows" and ident in rows and (seeds := _per_seed(value)) is not None:
            per_row[path] = seeds
        elif kind == "comparisons" and ident in comparisons and metric == "gap" and isinstance(value, dict):
            if (seeds := _per_seed(value.get("differences"))) is not None:
                gaps[path] = seeds
    return per_row, gaps


@dataclasses.dataclass(frozen=True)
class _Pair:
    id: str
    row: str
    baseline: str


def stability(claim: ClaimLike, ev: Evidence, verdict: Verdict) -> float | None:
    """The share of RESAMPLES bootstrap resamples of the seeds under which `evaluate` gives `verdict.status` again;
    None for a verdict that is not a decided empirical one, or with fewer than two seeds to resample."""
    if verdict.scope != "empirical" or verdict.status not in DECIDED:
        return None
    per_row, gaps = _read(claim, ev)
    values = {**per_row, **gaps}
    # The draws: one group for a paired rule, one per row for an unpaired one (its metrics' paths share a row id),
    # each over the seeds every metric of the group has (a seed one of them lacks pairs with nothing).
    group_of = {p: (p.split(".")[1] if claim.rule in UNPAIRED_RULES else "") for p in values}
    groups = sorted(set(group_of.values()))
    seeds = {g: sorted(set.intersection(*(set(values[p]) for p in values if group_of[p] == g))) for g in groups}
    if not groups or any(len(s) < 2 for s in seeds.values()):
        return None
    rng = np.random.default_rng(GENERATOR_SEED)
    draws = {
        g: np.sort(rng.integers(0, len(seeds[g]), size=(RESAMPLES, len(seeds[g]))), axis=1)  # (B, n)
        for g in groups
    }
    keys = np.concatenate([draws[g] for g in groups], axis=1)
    unique, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)  # (U, ...)
    taken = {
        p: np.array([v[s] for s in seeds[group_of[p]]])[draws[group_of[p]][first]]  # (U, n) each
        for p, v in values.items()
    }
    stats = {p: gap_stats_batch(taken[p]) for p in gaps}
    same = 0
    for u in range(len(unique)):
        metrics = dict(ev.metrics)
        for p in per_row:
            metrics[p] = {j: float(x) for j, x in enumerate(taken[p][u])}
        for p in gaps:
            metrics[p] = {**ev.metrics[p], **stats[p][u]}
        if evaluate(claim, dataclasses.replace(ev, metrics=metrics)).status == verdict.status:
            same += int(counts[u])
    return same / RESAMPLES


def with_stability(claim: ClaimLike, ev: Evidence, verdict: Verdict) -> Verdict:
    """The verdict with its stability (a new one; None where it has none)."""
    return dataclasses.replace(verdict, stability=stability(claim, ev, verdict))
