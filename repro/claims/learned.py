"""The learned-anything guard: a comparison between models counts only if they beat guessing.

A row has learned when, over its seeds, its test accuracy is both
- clearly above chance: a one-sided one-sample t-test of the per-seed accuracies against
  `rows.<id>.chance` gives p < 0.05 (with one seed there is no test, and the margin alone decides), and
- above chance by a margin: it closes at least 5% of the distance from chance to perfect accuracy,
  (accuracy - chance) / (1 - chance) >= 0.05 (10% -> 14.5% on CIFAR-10, 1% -> 5.95% on CIFAR-100,
  0.1% -> 5.1% on ImageNet). The t-test alone would pass two seeds at chance + 0.5 pp that happen
  to agree; the margin, scaled by the room above chance, refuses them at every number of classes.
A gap between a model that learned and one at chance measures nothing the paper claims, so such a
verdict is `inconclusive`. Rows whose collapse to chance is the finding (a rule's `may_collapse`) are
not guarded; the rows they are compared with still are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


from repro.claims.core import Evidence, need
from repro.results.measurements import row_metric

LEARNED_ALPHA = 0.05
MIN_LEARNED = 0.05  # share of the distance from chance to perfect accuracy a row must close


@dataclass(frozen=True)
class Learning:
    row: str
    accuracy: float  # mean over seeds, a fraction
    chance: float
    seeds: int
    p: float | None  # one-sided t-test of accuracy > chance; None with one seed

    @property
    def needed(self) -> float:
        """The least mean accuracy the margin accepts."""
        return self.chance + MIN_LEARNED * (1 - self.chance)

    @property
    def learned(self) -> bool:
        return self.accuracy >= self.needed and (self.p is None or self.p < LEARNED_ALPHA)

    def describe(self) -> str:
        test = f"one-sided t over {self.seeds} seeds: p={self.p:.3g}" if self.p is not None else "one seed: no test"
        return (
            f"{self.row} did not learn ({100 * self.accuracy:.2f}% vs chance {100 * self.chance:.2f}%; "
            f"needs at least {100 * self.needed:.2f}% and p < {LEARNED_ALPHA:g}, {test})"
        )


def learning(ev: Evidence, row: str) -> Learning:
    """How far above chance a row's per-seed accuracy is; NotRun when accuracy or chance is missing."""
    accuracies = list(need(ev, row_metric(row, "accuracy")).values())
    chance = float(need(ev, row_metric(row, "chance")))
    n = len(accuracies)
    mean = sum(accuracies) / n
    return Learning(row, mean, chance, n, _one_sided_p(accuracies, chance))


def _one_sided_p(xs: list[float], mu: float) -> float | None:
    """p of a one-sample t-test of mean(xs) > mu; None with one value; 0 or 1 when the values do not vary."""
    n = len(xs)
    if n < 2:
        return None
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    if sd == 0:
        return 0.0 if mean > mu else 1.0
    t = (mean - mu) / (sd / math.sqrt(n))
    return float(_sps().t.sf(t, n - 1))


def did_not_learn(ev: Evidence, rows: tuple[str, ...]) -> list[Learning]:
    """The rows, among those given, that did not learn (in the order given)."""
    return [lr for lr in (learning(ev, r) for r in rows) if not lr.learned]


def _sps():
    """scipy.stats, imported on first use: loading it costs about a second, which `repro --help` and
    manifest validation (which only need the rules' parameter types) should not pay."""
    from scipy import stats

    return stats
