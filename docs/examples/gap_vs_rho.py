"""Worked example: each comparison's MoE - dense gap against rho, from a results folder's frames.

    python docs/examples/gap_vs_rho.py results --profile smoke --out gap_vs_rho.png

The frames (repro.results, docs/results-data.md) give every row's accuracy by seed and rho; the manifests give
which row each comparison sets against which baseline. The gap is paired by seed, as the report pairs it: the
mean over the seeds both rows have of (model - baseline), in percentage points.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a file, no window
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from repro.plan.manifest import load_all  # noqa: E402
from repro.results import row_seeds  # noqa: E402


def gaps(results: Path, profile: str) -> pd.DataFrame:
    """One row per comparison of a trained row with its baseline: table, comparison, rho, gap (pp), seeds."""
    seeds = row_seeds(results, profile)
    pairs = pd.DataFrame(
        [(m.id, c.id, c.row, c.baseline) for m in load_all() for c in m.comparisons],
        columns=["table", "comparison", "row", "baseline"],
    )
    model = pairs.merge(seeds, on=["table", "row"])  # one row per comparison and seed of its model row
    base = seeds[["table", "row", "seed", "accuracy"]].rename(columns={"row": "baseline", "accuracy": "base"})
    paired = model.merge(base, on=["table", "baseline", "seed"])  # the seeds both rows have
    paired["gap"] = 100 * (paired.accuracy - paired.base)
    out = paired.groupby(["table", "comparison"], sort=True).agg(
        rho=("rho", "first"), gap=("gap", "mean"), seeds=("seed", "size")
    )
    return out.reset_index()


def draw(points: pd.DataFrame, path: Path, profile: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 4))
    for table, group in points.groupby("table"):
        ax.scatter(100 * group.rho, group.gap, label=table, s=18)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(
        xlabel="ρ: routed share of inference FLOPs (%)",
        ylabel="MoE − dense gap (pp, paired by seed)",
        title=f"Gap against ρ, profile {profile}",
    )
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a results folder (repro verify-all's --results-dir)")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--out", type=Path, default=Path("gap_vs_rho.png"))
    args = parser.parse_args()
    points = gaps(args.results, args.profile)
    if points.empty:
        raise SystemExit(f"no comparison of two trained rows in {args.results} at profile {args.profile}")
    draw(points, args.out, args.profile)
    print(points.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
