"""Seed statistics for MoE - dense gaps, as the paper's Section 4.1 reports them.

Section 4.1 ("Statistical Validation"): headline rows are mean ± s.d. over seeds
(10 on CIFAR, 5 on Tiny-ImageNet and ImageNet), and each MoE - dense gap comes
with a paired t-test, Cohen's d and a 95% CI.

Conventions (one place for all of them):
- s.d. is the sample standard deviation (ddof=1); sem = sd / sqrt(n).
- Gaps are paired by seed: the difference treatment[seed] - baseline[seed].
- The test is the two-sided paired t-test, i.e. a one-sample t-test of the
  differences against 0, with df = n - 1.
- d is d_z = mean(differences) / sd(differences), the paper's convention
  (+1.28 ± 1.26 -> d about 1.01); it is not the pooled-s.d. Cohen's d.
- The 95% CI is t-based: mean ± t_{0.975, n-1} * sem.
- n = 1: sd, sem, t, p, d and the CI are NaN (nothing to estimate a spread from).
- Zero variance of the differences (all equal): if their mean is non-zero,
  t and d are ±inf, p = 0 and the CI is the single point (mean, mean); if the
  mean is 0 too, t, p and d are NaN (0/0). No warning, no exception.
- Power uses the noncentral t distribution: the paired test at effect size d_z
  with n seeds has noncentrality d_z * sqrt(n).

Every result is a dataclass with ``to_dict()`` for JSON run records: NaN and
±inf become None (strict JSON has neither), tuples become lists, dict keys
become strings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
from scipy import special  # not scipy.stats, whose import was most of `repro plan` (docs/performance.md)

from repro.core.fsutil import jsonable

NAN = float("nan")


class Record:
    """Mixin: ``to_dict()`` for results written to JSON and rendered by Jinja."""

    def to_dict(self) -> dict[str, Any]:
        return jsonable(self)


def _finite_values(values: Iterable[float], what: str) -> np.ndarray:
    arr = np.asarray(list(values), dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{what}: expected a flat sequence of numbers, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{what}: no values")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        kind = "NaN" if math.isnan(arr[i]) else "infinite"
        raise ValueError(f"{what}: value {i} of {arr.size} is {kind}; drop or fix it before summarising")
    return arr


@dataclass(frozen=True)
class Summary(Record):
    """Mean ± s.d. over seeds. sd uses ddof=1; with n = 1, sd and sem are NaN."""

    n: int
    mean: float
    sd: float
    sem: float

    def text(self, decimals: int = 2) -> str:
        sd = "nan" if math.isnan(self.sd) else f"{self.sd:.{decimals}f}"
        return f"{self.mean:.{decimals}f} ± {sd} (n={self.n})"


def summarize(values: Iterable[float]) -> Summary:
    """n, mean, s.d. (ddof=1) and standard error of ``values``; rejects NaN and inf."""
    arr = _finite_values(values, "summarize")
    n = int(arr.size)
    sd = float(np.std(arr, ddof=1)) if n > 1 else NAN
    return Summary(n=n, mean=float(np.mean(arr)), sd=sd, sem=sd / math.sqrt(n))


@dataclass(frozen=True)
class SummaryTest(Record):
    """Paired t-test recomputed from mean, sd and n of the differences."""

    t: float
    df: int
    p: float  # two-sided
    d: float  # d_z = mean / sd


def from_summary(mean: float, sd: float, n: int) -> SummaryTest:
    """t, two-sided p and d_z of a paired t-test given only the gap's mean ± sd over n seeds.

    Follows the module's conventions for n < 2 (NaN) and sd = 0 (p = 0, t = d = ±inf,
    or NaN when mean = 0 too).
    """
    if not (math.isfinite(mean) and (math.isfinite(sd) or n < 2)):
        raise ValueError(f"from_summary: mean and sd must be finite numbers, got mean={mean}, sd={sd}")
    if sd < 0:
        raise ValueError(f"from_summary: sd must be >= 0, got {sd}")
    if n < 2:
        return SummaryTest(t=NAN, df=max(n - 1, 0), p=NAN, d=NAN)
    df = n - 1
    if sd == 0:
        if mean == 0:
            return SummaryTest(t=NAN, df=df, p=NAN, d=NAN)
        inf = math.copysign(math.inf, mean)
        return SummaryTest(t=inf, df=df, p=0.0, d=inf)
    t = mean / (sd / math.sqrt(n))
    return SummaryTest(t=t, df=df, p=p_from_t(t, df), d=mean / sd)


def p_from_t(t: float, df: float) -> float:
    """Two-sided p of a t statistic with ``df`` degrees of freedom."""
    return float(2.0 * special.stdtr(df, -abs(t)))  # scipy.stats.t.sf(|t|, df)


def t_from_p(p: float, df: int) -> float:
    """|t| whose two-sided p is ``p`` (the inverse of ``p_from_t``); p = 0 -> inf."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"t_from_p: p must lie in [0, 1], got {p}")
    return float(-special.stdtrit(df, p / 2.0)) if p > 0 else math.inf  # scipy.stats.t.isf(p / 2, df)


@dataclass(frozen=True)
class GapStats(Record):
    """MoE - dense gap paired by seed.

    ``d`` is d_z: mean of the per-seed differences over their s.d. ``ci95`` is
    t-based. ``positive`` counts seeds whose difference is > 0 (a tie is not
    positive). ``only_treatment`` / ``only_baseline`` are the seeds dropped for
    lack of a partner.
    """

    n: int
    mean: float
    sd: float
    sem: float
    t: float
    df: int
    p: float
    d: float
    ci95: tuple[float, float]
    positive: int
    differences: dict[int, float]
    only_treatment: tuple[int, ...] = ()
    only_baseline: tuple[int, ...] = ()
    note: str = ""

    def text(self, decimals: int = 2) -> str:
        spread = f"{self.mean:+.{decimals}f} ± {self.sd:.{decimals}f}"
        return f"{spread} (n={self.n}, p={self.p:.2g}, d={self.d:.2f})"


def paired_gap(treatment: Mapping[int, float], baseline: Mapping[int, float]) -> GapStats:
    """Gap treatment - baseline over the seeds present in both (seed -> accuracy)."""
    for name, runs in (("treatment", treatment), ("baseline", baseline)):
        for seed, acc in runs.items():
            if not isinstance(acc, (int, float, np.integer, np.floating)) or not math.isfinite(acc):
                raise ValueError(f"paired_gap: {name} accuracy of seed {seed} is {acc!r}, not a finite number")
    seeds = sorted(set(treatment) & set(baseline))
    if not seeds:
        raise ValueError(
            f"paired_gap: no seed in both runs (treatment {sorted(treatment)}, baseline {sorted(baseline)})"
        )
    diffs = {s: float(treatment[s]) - float(baseline[s]) for s in seeds}
    arr = np.array(list(diffs.values()))  # (n,)
    n = len(seeds)
    mean = float(np.mean(arr))
    notes = []
    if n < 2:
        sd = sem = t = p = d = NAN
        ci = (NAN, NAN)
        notes.append("one paired seed: no spread, so no test")
    elif np.ptp(arr) == 0:  # exact: every difference equal
        sd = sem = 0.0
        test = from_summary(mean, 0.0, n)
        t, p, d = test.t, test.p, test.d
        ci = (mean, mean)
        notes.append("all differences equal: zero variance" + (", so t and d are infinite" if mean else ""))
    else:
        sd = float(np.std(arr, ddof=1))
        sem = sd / math.sqrt(n)
        test = from_summary(mean, sd, n)
        t, p, d = test.t, test.p, test.d
        half = float(special.stdtrit(n - 1, 0.975)) * sem  # scipy.stats.t.ppf(0.975, n - 1)
        ci = (mean - half, mean + half)
    only_t = tuple(sorted(set(treatment) - set(baseline)))
    only_b = tuple(sorted(set(baseline) - set(treatment)))
    if only_t or only_b:
        notes.append(f"dropped unpaired seeds: treatment-only {list(only_t)}, baseline-only {list(only_b)}")
    return GapStats(
        n=n, mean=mean, sd=sd, sem=sem, t=t, df=n - 1, p=p, d=d, ci95=ci,
        positive=int(np.sum(arr > 0)), differences=diffs,
        only_treatment=only_t, only_baseline=only_b, note="; ".join(notes),
    )  # fmt: skip


@dataclass(frozen=True)
class WelchTest(Record):
    """Two independent groups (two folders' seeds of one row): b - a, Welch's t and its two-sided p.

    df is Welch-Satterthwaite's. Fewer than two values on a side: t, df and p are NaN. Neither group
    varies: as for a paired gap, p = 0 and t = ±inf when the means differ (df NaN), NaN when they are
    equal; p equals scipy.stats.ttest_ind(equal_var=False)'s in every case.
    """

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    difference: float  # mean_b - mean_a
    t: float
    df: float
    p: float


def welch(a: Iterable[float], b: Iterable[float]) -> WelchTest:
    """Welch's unequal-variance t-test of mean(b) - mean(a); rejects NaN and inf."""
    xa, xb = _finite_values(a, "welch, group a"), _finite_values(b, "welch, group b")
    na, nb = int(xa.size), int(xb.size)
    mean_a, mean_b = float(np.mean(xa)), float(np.mean(xb))
    diff = mean_b - mean_a
    if na < 2 or nb < 2:
        return WelchTest(na, nb, mean_a, mean_b, diff, NAN, NAN, NAN)
    va, vb = float(np.var(xa, ddof=1)) / na, float(np.var(xb, ddof=1)) / nb  # squared standard errors
    if va + vb == 0:
        if diff == 0:
            return WelchTest(na, nb, mean_a, mean_b, diff, NAN, NAN, NAN)
        return WelchTest(na, nb, mean_a, mean_b, diff, math.copysign(math.inf, diff), NAN, 0.0)
    t = diff / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    return WelchTest(na, nb, mean_a, mean_b, diff, t, df, p_from_t(t, df))


# ---------------------------------------------------------------------------
# Power of the two-sided paired t-test (noncentral t).


def _nct_sf(x: Any, df: Any, nc: Any) -> Any:
    """scipy.stats.nct.sf: the ufunc it calls, clipped as it clips it (scipy.stats itself where that is absent);
    a float for scalars, an array, element by element, for arrays."""
    ufunc = getattr(getattr(special, "_ufuncs", None), "_nct_sf", None)
    if ufunc is None:
        from scipy import stats

        out = stats.nct.sf(x, df, nc)
    else:
        with np.errstate(over="ignore"):
            out = np.clip(ufunc(x, df, nc), 0, 1)
    return float(out) if np.ndim(out) == 0 else out


def power_at(d: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test with n seeds at effect size d_z."""
    if n < 2:
        raise ValueError(f"power_at: a t-test needs n >= 2 seeds, got {n}")
    df = n - 1
    crit = float(-special.stdtrit(df, alpha / 2.0))
    nc = abs(d) * math.sqrt(n)
    # P(T > crit) + P(T < -crit); the lower tail as sf at -nc (symmetry), since
    # scipy's nct.cdf far in the left tail can return NaN for large nc.
    power = _nct_sf(crit, df, nc) + _nct_sf(crit, df, -nc)
    if not math.isfinite(power):
        raise ArithmeticError(f"power_at: noncentral t gave {power} for d={d}, n={n}, alpha={alpha}")
    return min(power, 1.0)


def seeds_for_power(d: float, power: float = 0.8, alpha: float = 0.05, max_n: int = 10**7) -> int:
    """Smallest n >= 2 seeds at which the two-sided paired t-test at d_z reaches ``power``.

    Matches G*Power's "means: difference from constant (one sample case)", e.g.
    d = 0.5 -> 34, d = 1.0 -> 10. Power rises with n, so the answer is found by
    doubling then bisection.
    """
    if not 0.0 < alpha < 1.0 or not alpha < power < 1.0:
        raise ValueError(f"seeds_for_power: need 0 < alpha < power < 1, got alpha={alpha}, power={power}")
    if not math.isfinite(d) or d == 0:
        raise ValueError(f"seeds_for_power: effect size must be finite and non-zero, got d={d}")
    if power_at(d, 2, alpha) >= power:
        return 2
    lo, hi = 2, 4  # power(lo) < target
    while power_at(d, hi, alpha) < power:
        lo, hi = hi, hi * 2
        if hi > max_n:
            raise ValueError(f"seeds_for_power: d={d} needs more than {max_n} seeds")
    while hi - lo > 1:  # invariant: power(lo) < target <= power(hi)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_at(d, mid, alpha) >= power else (mid, hi)
    return hi


def d_z_interval(d: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval of d_z from an observed d_z over n >= 2 paired seeds: the noncentralities that put
    the observed t = d sqrt(n) at the (1 + level)/2 and (1 - level)/2 quantiles of the noncentral t with n - 1
    degrees of freedom, over sqrt(n) (the interval inverts the test, as in Cumming and Finch 2001)."""
    if n < 2 or not math.isfinite(d):
        raise ValueError(f"d_z_interval: needs n >= 2 and a finite d, got d={d}, n={n}")
    lo, hi = d_z_intervals(np.array([d], dtype=float), n, level)
    return float(lo[0]), float(hi[0])


def d_z_intervals(d: np.ndarray, n: int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """`d_z_interval` of many observed d_z (finite, (U,)) at one n, by the same bisection run on every element at
    once: element by element the same steps, so the same numbers (what a bootstrap of the seeds asks for)."""
    df, t = n - 1, d * math.sqrt(n)

    def solve(tail: float) -> np.ndarray:  # the nc with P(T > t | nc) = tail; P rises with nc
        lo, hi = t - 10.0, t + 10.0
        while (low := _nct_sf(t, df, lo) > tail).any():
            lo = np.where(low, lo - 2 * (hi - lo), lo)
        while (high := _nct_sf(t, df, hi) < tail).any():
            hi = np.where(high, hi + 2 * (hi - lo), hi)
        for _ in range(200):
            mid = (lo + hi) / 2
            below = _nct_sf(t, df, mid) < tail
            new_lo, new_hi = np.where(below, mid, lo), np.where(below, hi, mid)
            if np.array_equal(new_lo, lo) and np.array_equal(new_hi, hi):
                break  # a fixed point: the remaining steps would change nothing
            lo, hi = new_lo, new_hi
        return (lo + hi) / 2

    alpha = (1 - level) / 2
    return solve(alpha) / math.sqrt(n), solve(1 - alpha) / math.sqrt(n)


# ---------------------------------------------------------------------------
# The paper's effect sizes, and the seeds 80% power at them needs (repro.claims, repro.cost.plan,
# the audit in repro.claims.stats_audit). A reported value is a repro.spec.paper.PaperValue.


@dataclass(frozen=True)
class PaperEffect(Record):
    """|d_z| a reported value implies, and where it comes from: "d", "mean/sd" or "p, n"."""

    d: float
    source: str
    bound: bool  # a lower bound (from "p <"): seeds needed at it are an upper bound


def states_a_test(pv: Any) -> bool:
    """A value that states a test: p, d or seed signs, or a signed gap with its spread.

    An absolute accuracy's mean ± sd is not tested against zero, so it is left out.
    """
    if pv.p is not None or pv.d is not None or pv.positive_seeds is not None:
        return True
    return pv.implied_sign is not None and pv.value is not None and (pv.sd is not None or pv.n is not None)


def paper_effect(pv: Any) -> PaperEffect | None:
    """The effect size d_z of a reported test; None where the text gives none (or states no test)."""
    if not states_a_test(pv):
        return None
    if pv.d is not None:
        return PaperEffect(abs(pv.d), "d", False)
    if pv.value is not None and pv.sd is not None and pv.sd > 0:
        return PaperEffect(abs(pv.value) / pv.sd, "mean/sd", False)
    if pv.p is not None and pv.n is not None and pv.n >= 2 and pv.p > 0:
        return PaperEffect(t_from_p(pv.p, pv.n - 1) / math.sqrt(pv.n), "p, n", pv.p_relation == "<")
    return None


def seeds_needed(pv: Any, power: float = 0.8, alpha: float = 0.05) -> int | None:
    """Seeds for `power` at the paper's effect size; None where the text gives no effect size."""
    effect = paper_effect(pv)
    if effect is None or effect.d == 0:
        return None
    try:
        return seeds_for_power(effect.d, power, alpha)
    except ValueError:
        return None
