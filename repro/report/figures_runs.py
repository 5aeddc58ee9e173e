"""Figures a manifest declares from its own runs: accuracy per epoch (Fig. 3) and expert usage by class (Fig. 4).

Both read the per-seed run summaries (repro.results.measurements.RunSummary) of the rows they draw.
Shapes: S seeds, T epochs, C classes, E experts.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from repro.data.specs import get_dataset
from repro.plan.manifest import Figure as FigureDecl
from repro.plan.manifest import Manifest
from repro.results.measurements import ManifestResult

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: a report whose figures stand draws none
    from matplotlib.figure import Figure

ACTIVE_SHARE = 0.05  # an expert "carries" test traffic when it is the top-1 of at least this share of images


# --------------------------------------------------------------------------- accuracy by epoch (Fig. 3)
@dataclass
class EpochCurve:
    row: str
    label: str
    seeds: int
    mean: np.ndarray  # (T,) test accuracy in %, mean over seeds
    low: np.ndarray  # (T,) min over seeds
    high: np.ndarray  # (T,) max over seeds
    tau: np.ndarray | None  # (T,) router temperature, mean over seeds; None when the row has none
    late_drop_pp: float  # peak - final test accuracy, mean over seeds (the late collapse of Section 5)
    truncated: bool  # seeds ran different numbers of epochs; curves cut to the shortest

    @property
    def epochs(self) -> np.ndarray:
        return np.arange(1, len(self.mean) + 1)


def _padded(values: list[float | None], t: int) -> list[float]:
    """The first t values, NaN for None and for epochs the list does not reach."""
    return [np.nan if v is None else v for v in values[:t]] + [np.nan] * (t - len(values[:t]))


def epoch_curves(decl: FigureDecl, manifest: Manifest, result: ManifestResult) -> list[EpochCurve]:
    curves = []
    for row_id in decl.rows:
        runs = [r for r in result.measured.runs(row_id) if r.test_accuracy_by_epoch]
        if not runs:
            continue
        t = min(len(r.test_accuracy_by_epoch) for r in runs)
        acc = 100 * np.array([r.test_accuracy_by_epoch[:t] for r in runs], dtype=float)  # (S, T)
        taus = np.array([_padded(r.tau_by_epoch, t) for r in runs], dtype=float)  # (S, T)
        has_tau = np.isfinite(taus).any(axis=0)  # (T,)
        tau = None
        if has_tau.any():
            tau = np.full(t, np.nan)
            tau[has_tau] = np.nanmean(taus[:, has_tau], axis=0)
        drops = [100 * (r.peak_accuracy - r.final_accuracy) for r in runs]
        curves.append(
            EpochCurve(
                row=row_id,
                label=manifest.row(row_id).label,
                seeds=len(runs),
                mean=acc.mean(axis=0),
                low=acc.min(axis=0),
                high=acc.max(axis=0),
                tau=tau,
                late_drop_pp=float(np.mean(drops)),
                truncated=any(len(r.test_accuracy_by_epoch) != t for r in runs),
            )
        )
    return curves


# Curves that coincide (the same schedule to the same tau_min for the first epochs, or runs that did not learn)
# stay visible: each later curve is drawn above the earlier ones, thinner, dashed and with a smaller marker of
# another shape, so the curve beneath shows around it.
LINE_STYLES = ["-", (0, (6, 2.5)), (0, (2, 2)), (0, (8, 2, 2, 2)), (0, (4, 1.5)), (0, (1, 1.5))]
CURVE_MARKERS = ["o", "s", "^", "D", "v", "P"]


def curve_style(i: int, n: int) -> dict[str, Any]:
    """The line of curve i of n: the first is the widest and lowest."""
    return {
        "ls": LINE_STYLES[i % len(LINE_STYLES)],
        "lw": 1.4 + 0.7 * (n - 1 - i),
        "zorder": 2 + i,
        "marker": CURVE_MARKERS[i % len(CURVE_MARKERS)],
        "ms": 3.5 + 1.2 * (n - 1 - i),
    }


def draw_accuracy_by_epoch(curves: list[EpochCurve], title: str) -> Figure:
    from matplotlib.figure import Figure

    with_tau = [c for c in curves if c.tau is not None]
    fig = Figure(figsize=(8.5, 5.6 if with_tau else 4.4), layout="constrained")
    if with_tau:
        ax, ax_tau = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    else:
        ax, ax_tau = fig.add_subplot(), None
    for i, c in enumerate(curves):
        colour, style = f"C{i % 10}", curve_style(i, len(curves))
        if len(c.mean) > 12:
            style["marker"] = None
        ax.plot(c.epochs, c.mean, color=colour, label=f"{c.label} (n={c.seeds})", **style)
        if c.seeds > 1:
            ax.fill_between(c.epochs, c.low, c.high, color=colour, alpha=0.12, lw=0, zorder=1)
        if ax_tau is not None and c.tau is not None:
            ax_tau.plot(c.epochs, c.tau, color=colour, **{**style, "marker": None})
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    bottom = ax
    if ax_tau is not None:
        ax_tau.set_ylabel("τ")
        ax_tau.grid(True, alpha=0.3)
        bottom = ax_tau
    bottom.set_xlabel("epoch")
    longest = max(len(c.mean) for c in curves)
    if longest <= 12:
        bottom.set_xticks(range(1, longest + 1))
    return fig


def caption_accuracy_by_epoch(
    curves: list[EpochCurve], manifest: Manifest, missing: list[str], runs: str, paper: str
) -> str:
    seeds = sorted({c.seeds for c in curves})
    text = (
        f"Test accuracy (%) after each epoch for {len(curves)} configuration(s) of {manifest.id}: the line is "
        f"the mean over {'/'.join(map(str, seeds))} seed(s), the band the range from the lowest to the highest "
        "seed."
    )
    if any(c.tau is not None for c in curves):
        text += " Lower panel: the router temperature τ used in each epoch."
    text += (
        " Late drop (peak − final accuracy, mean over seeds): "
        + "; ".join(f"{c.label} {c.late_drop_pp:.2f} pp" for c in curves)
        + "."
    )
    if any(c.truncated for c in curves):
        text += " Seeds of one row ran different numbers of epochs; its curve stops at the shortest."
    if missing:
        text += f" No finished runs for: {', '.join(missing)}."
    return f"{text} {paper} {runs}"


# --------------------------------------------------------------------------- usage by class (Fig. 4)
@dataclass
class UsageMatrix:
    row: str
    label: str
    dataset: str
    seeds: int
    counts: np.ndarray  # (C, E) test images of each class whose top-1 expert is e, summed over seeds
    train_usage: np.ndarray | None  # (E,) samples per expert in the last training epoch, summed over seeds

    @property
    def share(self) -> np.ndarray:
        """(C, E) each class's row normalised to 1; NaN for a class with no test image."""
        totals = self.counts.sum(axis=1, keepdims=True)  # (C, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(totals > 0, self.counts / totals, np.nan)

    @property
    def expert_share(self) -> np.ndarray:
        """(E,) share of all test images routed (top-1) to each expert."""
        return self.counts.sum(axis=0) / max(int(self.counts.sum()), 1)

    @property
    def empty_classes(self) -> int:
        return int((self.counts.sum(axis=1) == 0).sum())


def usage_matrices(decl: FigureDecl, manifest: Manifest, result: ManifestResult) -> list[UsageMatrix]:
    mats = []
    for row_id in decl.rows:
        routing = [r.routing for r in result.measured.runs(row_id)]
        tables = [np.asarray(r["test_usage_by_class"], dtype=np.int64) for r in routing if r.get("test_usage_by_class")]
        if not tables or len({t.shape for t in tables}) != 1:
            continue
        train = [np.asarray(r["expert_usage"], dtype=np.int64) for r in routing if r.get("expert_usage")]
        row = manifest.row(row_id)
        mats.append(
            UsageMatrix(
                row=row_id,
                label=row.label,
                dataset=row.dataset,
                seeds=len(tables),
                counts=np.sum(tables, axis=0),
                train_usage=np.sum(train, axis=0) if train and len({t.shape for t in train}) == 1 else None,
            )
        )
    return mats


def _class_ticks(classes: int) -> np.ndarray:
    if classes <= 20:
        return np.arange(classes)
    step = 10 * math.ceil(classes / 200)  # every 10th class, fewer when there are hundreds
    return np.arange(0, classes, step)


def draw_usage_by_class(mats: list[UsageMatrix], title: str) -> Figure:
    import matplotlib
    from matplotlib.figure import Figure

    classes = max(m.counts.shape[0] for m in mats)
    fig = Figure(figsize=(max(6.5, 1.6 + 3.2 * len(mats)), 4.5 if classes <= 20 else 7.5), layout="constrained")
    axes = fig.subplots(1, len(mats), squeeze=False)[0]
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
    image = None
    for ax, m in zip(axes, mats):
        c, e = m.counts.shape
        image = ax.imshow(m.share, aspect="auto", cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_xticks(range(e))
        ax.set_yticks(_class_ticks(c))
        ax.set_xlabel("expert")
        ax.set_ylabel(f"{get_dataset(m.dataset).title} class index")
        ax.set_title(f"{m.label} (n={m.seeds})", fontsize=9)
    assert image is not None  # mats is not empty: max() above has a matrix
    fig.colorbar(image, ax=list(axes), label="share of the class's test images (top-1 expert)", shrink=0.8)
    fig.suptitle(textwrap.fill(title, 72), fontsize=10)
    return fig


def caption_usage_by_class(mats: list[UsageMatrix], missing: list[str], runs: str, paper: str) -> str:
    parts = []
    for m in mats:
        c, e = m.counts.shape
        shares = ", ".join(f"{100 * s:.0f}%" for s in m.expert_share)
        active = int((m.expert_share >= ACTIVE_SHARE).sum())
        text = (
            f"{m.label}: the top-1 expert of every test image, counted per class and summed over {m.seeds} "
            f"seed(s), each class's row normalised to sum to 1 ({c} classes × {e} experts). Share of all test "
            f"images per expert 0–{e - 1}: {shares}; {active} of {e} experts are top-1 for at least "
            f"{100 * ACTIVE_SHARE:.0f}% of test images."
        )
        if m.train_usage is not None:
            text += f" In the last training epoch {int((m.train_usage > 0).sum())} of {e} experts received samples."
        if m.empty_classes:
            text += f" {m.empty_classes} class(es) had no test image in these runs (grey rows)."
        parts.append(text)
    if missing:
        parts.append(f"No usable test-time expert usage for: {', '.join(missing)}.")
    return f"{' '.join(parts)} {paper} {runs}"
