"""A table's per-row numbers as the report shows them, computed from its rows-by-seed frame.

The frame is repro.results.frames.result_row_seeds (one row per row and seed, from the run summaries the
table stored); the mean and s.d. over seeds are frames.row_stats of it, the paired gaps
repro.claims.stats.paired_gap of its per-seed accuracies, and the learning check reads the same per-seed
accuracies. A notebook that calls row_stats(row_seeds(folder)) therefore gets the report's numbers by
construction (tests/test_frames.py holds them to it). Torch-free; pandas is imported with the frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repro.results.frames import result_row_seeds, row_stats
from repro.results.measurements import ManifestResult

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class RowNumbers:
    """One table's rows by seed, and their statistics by row."""

    seeds: pd.DataFrame  # frames.ROW_SEED_COLUMNS
    stats: pd.DataFrame  # frames.ROW_STAT_COLUMNS, indexed by row

    def has(self, row: str) -> bool:
        return row in self.stats.index

    def accuracy(self, row: str) -> dict[int, float]:
        """Seed -> accuracy (a fraction), in seed order; empty for a row without runs."""
        rows = self.seeds[self.seeds.row == row]
        return {int(s): float(a) for s, a in zip(rows.seed, rows.accuracy)}

    def seeds_of(self, row: str) -> int:
        return int(self.stats.at[row, "seeds"]) if self.has(row) else 0

    def mean(self, row: str) -> float | None:
        return float(self.stats.at[row, "accuracy_mean"]) if self.has(row) else None

    def chance(self, row: str) -> float | None:
        value = self.stats.at[row, "chance"] if self.has(row) else None
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)

    def mean_sd(self, row: str) -> str:
        """Mean ± s.d. over seeds in percent, or the single value with n=1; empty without runs."""
        if not self.has(row):
            return ""
        mean, sd = 100 * float(self.stats.at[row, "accuracy_mean"]), self.stats.at[row, "accuracy_sd"]
        return f"{mean:.2f} (n=1)" if self.seeds_of(row) < 2 else f"{mean:.2f} ± {100 * float(sd):.2f}"

    def gap(self, row: str, baseline: str) -> dict[str, Any] | None:
        """The MoE - dense gap paired by seed (repro.claims.stats.GapStats.to_dict()); None without a common seed."""
        from repro.claims.stats import paired_gap

        a, b = self.accuracy(row), self.accuracy(baseline)
        return paired_gap(a, b).to_dict() if set(a) & set(b) else None


def row_numbers(result: ManifestResult) -> RowNumbers:
    seeds = result_row_seeds(result)
    return RowNumbers(seeds, row_stats(seeds).set_index("row"))
