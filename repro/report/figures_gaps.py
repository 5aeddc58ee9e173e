"""Accuracy gaps across manifests: gap vs routed fraction rho (Section 5.3) and vs class count (Fig. 2).

Every MoE - dense comparison of every manifest with results becomes one point: the
mean paired gap over seeds in percentage points (pp) with its 95% t-interval. A
comparison that several manifests share (the same treatment and baseline runs,
by run hash) is one point. Where the paper's text gives the gap as a number it is
drawn beside ours as a hollow diamond; where it gives only a direction, a small
"(+)" or "(−)" sits beside our point, at the first spot around it where it covers
no other mark and no point, and the legend says what it means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from repro.data.specs import DATASETS, get_dataset
from repro.plan.manifest import Comparison, Manifest
from repro.spec.paper import paper_value
from repro.results.measurements import ManifestResult

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn: a report whose figures stand draws none
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

HEAD_LABELS = {
    "sparse_moe": "sparse MoE",
    "soft_moe": "Soft MoE (batch axis)",
    "per_sample_soft_moe": "per-sample Soft MoE",
    "expert_choice": "Expert Choice",
}
MARKERS = ["o", "s", "^", "v", "P", "X", "*", "h"]
GAP_UNITS = ("%", "pp")  # paper gaps printed in % of accuracy are percentage points
SYMLOG_ABOVE_PP = 10.0  # a y range wider than this switches to symlog, linear within +-1 pp


def dataset_colour(name: str) -> str:
    return f"C{list(DATASETS).index(name)}" if name in DATASETS else "0.3"


@dataclass
class GapPoint:
    """One plotted comparison: our mean gap, its interval, and the paper's value where stated."""

    source: str  # "<manifest>/<comparison>" of the first manifest that has it
    label: str
    dataset: str
    method: str  # what the treatment routes: its head, or its backbone when the heads match
    series: str
    profile: str
    rho: float | None  # the treatment's routed fraction (a fraction, not %)
    mean_pp: float
    ci_pp: tuple[float, float] | None  # None with a single seed
    n: int
    paper_pp: float | None = None
    paper_sign: str | None = None  # a direction the paper states without a number
    paper_printed: str = ""
    merged: list[str] = field(default_factory=list)  # other "<manifest>/<comparison>" with the same runs

    @property
    def num_classes(self) -> int:
        return get_dataset(self.dataset).num_classes

    @property
    def sources(self) -> list[str]:
        return [self.source, *self.merged]

    @property
    def manifests(self) -> set[str]:
        return {s.split("/", 1)[0] for s in self.sources}


def _run_hashes(result: ManifestResult, row_id: str) -> tuple[str, ...] | None:
    hashes = [r.hash for r in result.measured.runs(row_id)]
    return tuple(sorted(hashes)) if hashes and all(hashes) else None


def _method(manifest: Manifest, comp: Comparison) -> str:
    row, base = manifest.row(comp.row), manifest.row(comp.baseline)
    if row.head.name != base.head.name:
        return HEAD_LABELS.get(row.head.name, row.head.name)
    return f"routed backbone ({row.backbone.name})"


def _label(manifest: Manifest, comp: Comparison) -> str:
    dataset = manifest.row(comp.row).dataset
    title = get_dataset(dataset).title
    if comp.label.lower().startswith((dataset, title.lower())):
        return comp.label
    return f"{title}, {comp.label}"


def measured_gap(result: ManifestResult, comp_id: str) -> tuple[float, tuple[float, float] | None, int] | None:
    """A comparison's mean paired gap (pp), its 95% interval (None with one seed) and its seeds; None if unmeasured."""
    gap: dict[str, Any] | None = result.measured.comparison(comp_id, "gap")
    if not isinstance(gap, dict) or gap.get("mean") is None:
        return None
    ci = gap.get("ci95")
    return 100 * gap["mean"], (100 * ci[0], 100 * ci[1]) if ci and None not in ci else None, int(gap.get("n") or 0)


def _point(manifest: Manifest, result: ManifestResult, comp: Comparison) -> GapPoint | None:
    if (gap := measured_gap(result, comp.id)) is None:
        return None
    point = GapPoint(
        source=f"{manifest.id}/{comp.id}",
        label=_label(manifest, comp),
        dataset=manifest.row(comp.row).dataset,
        method=_method(manifest, comp),
        series=comp.series,
        profile=result.profile,
        rho=result.measured.comparison(comp.id, "rho"),
        mean_pp=gap[0],
        ci_pp=gap[1],
        n=gap[2],
    )
    _adopt_paper(point, manifest, comp)
    return point


def _adopt_paper(point: GapPoint, manifest: Manifest, comp: Comparison) -> None:
    """Fill the paper's gap from this manifest's table unless a numeric one is already there."""
    pv = paper_value(manifest.paper_table, f"{comp.id}.gap")
    if pv is None or point.paper_pp is not None:
        return
    if pv.value is not None and pv.unit in GAP_UNITS:
        point.paper_pp, point.paper_sign, point.paper_printed = pv.value, None, pv.printed
    elif pv.implied_sign and point.paper_sign is None:
        point.paper_sign, point.paper_printed = pv.implied_sign, pv.printed


def gap_points(entries: list[tuple[Manifest, ManifestResult | None]]) -> list[GapPoint]:
    """Every accuracy comparison with a measured gap, one point per distinct pair of runs."""
    points: dict[tuple, GapPoint] = {}
    for manifest, result in entries:
        if result is None:
            continue
        for comp in manifest.comparisons:
            point = _point(manifest, result, comp)
            if point is None:
                continue
            row, base = _run_hashes(result, comp.row), _run_hashes(result, comp.baseline)
            key = (row, base) if row and base else (point.source,)
            if key not in points:
                points[key] = point
                continue
            kept = points[key]
            kept.merged.append(point.source)
            if point.series and not kept.series:  # the manifest that files it in a series names it best
                kept.series, kept.label = point.series, point.label
            if kept.rho is None:
                kept.rho = point.rho
            _adopt_paper(kept, manifest, comp)
    return list(points.values())


def rho_threshold_pct(manifests: list[Manifest]) -> tuple[float, str] | None:
    """The paper's rho threshold, from any claim that names one (value in %, as printed)."""
    for manifest in manifests:
        for claim in manifest.claims:
            key = claim.params.get("threshold")
            pv = paper_value(manifest.paper_table, key) if isinstance(key, str) else None
            if pv is not None and pv.value is not None and pv.metric == "rho" and pv.unit == "%":
                return pv.value, pv.printed
    return None


# --------------------------------------------------------------------------- drawing
def symlog(points: list[GapPoint]) -> bool:
    """Whether the gap axis is symlog: the gaps, the paper's and their intervals span more than SYMLOG_ABOVE_PP."""
    ys = [p.mean_pp for p in points] + [p.paper_pp for p in points if p.paper_pp is not None]
    ys += [v for p in points if p.ci_pp for v in p.ci_pp]
    return max(abs(y) for y in ys) > SYMLOG_ABOVE_PP


def _finish(ax, points: list[GapPoint], xlabel: str, title: str, handles: list, **legend: Any) -> bool:
    """The gap axis (symlog where the gaps span more than SYMLOG_ABOVE_PP), labels, grid and legend; whether
    the axis is symlog."""
    from matplotlib.ticker import FuncFormatter

    ax.margins(y=0.08)
    log = symlog(points)
    if log:
        ax.set_yscale("symlog", linthresh=1.0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}".replace("-", "−")))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("MoE − dense accuracy (pp)" + (" [symlog]" if log else ""))
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(handles=handles, fontsize=8, frameon=False, **legend)
    return log


def log_rho_axis(ax) -> None:
    """rho (%) on a log x axis: plain numbers, the 2s and 5s between decades labelled."""
    from matplotlib.ticker import FuncFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(minor_label))


def yerr(mean: float, ci: tuple[float, float] | None) -> list[list[float]] | None:
    """An interval around `mean` as errorbar's (below, above) lengths."""
    return None if ci is None else [[mean - ci[0]], [ci[1] - mean]]


def _draw_point(ax, x: float, p: GapPoint, colour: str, marker: str) -> None:
    ax.errorbar(
        [x], [p.mean_pp], yerr=yerr(p.mean_pp, p.ci_pp), fmt=marker, color=colour, ms=6, capsize=2.5, lw=1, zorder=3
    )
    if p.paper_pp is not None:
        ax.plot([x], [p.paper_pp], marker="D", ms=9, mfc="none", mec=colour, mew=1.4, ls="none", zorder=4)


# A direction the paper states without a number (repro.spec.paper.PaperValue.sign), as marked and as said.
SIGN_TEXT = {"+": "(+)", "-": "(−)", "<=0": "(≤0)"}
SIGN_MARKER = {"+": "$(+)$", "-": "$(-)$", "<=0": r"$(\leq 0)$"}
SIGN_WORDS = {"+": "positive", "-": "negative", "<=0": "not positive (no gain)"}


SIGN_SIZE = 7  # points
# Where a sign mark may sit, as (dx, dy) in points from its point to the mark's lower left corner: beside
# it first (right, then left), then above and below, then further out; the first spot that is free wins.
_SPOTS = [((5, -17), (2, -9)), ((5, -17), (10, -17)), ((-6,), (8, -15)), ((15, -27), (2, -9)), ((5, -17), (18, -25))]
SIGN_SPOTS = [(dx, dy) for dxs, dys in _SPOTS for dx in dxs for dy in dys]  # each group: every dx with every dy
POINT_RADIUS = 4.0  # points: a data marker's half width (ms 6), kept clear of the marks


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """The area two (x0, y0, x1, y1) boxes share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def place_signs(fig: Figure, ax, marks: list[tuple[float, float, str]]) -> list:
    """One "(+)" / "(−)" annotation per (x, y, sign) in data: each at the first of SIGN_SPOTS around its point
    whose box, in the figure as laid out so far, meets no mark already placed and no point, inside the axes
    (none free: the spot that overlaps least). Offsets are in points from the point, so the marks move with it
    when the layout changes later (the stamp)."""
    fig.draw_without_rendering()
    scale = fig.dpi / 72  # display pixels per point
    centres = [tuple(ax.transData.transform((x, y))) for x, y, _ in marks]
    inside = ax.get_window_extent()
    probe = ax.text(0, 0, SIGN_TEXT["<=0"], fontsize=SIGN_SIZE)  # the widest
    extent = probe.get_window_extent()
    probe.remove()
    w, h = extent.width, extent.height
    r = POINT_RADIUS * scale
    taken = [(cx - r, cy - r, cx + r, cy + r) for cx, cy in centres]
    texts = []
    style = dict(textcoords="offset points", fontsize=SIGN_SIZE, color="0.3", va="bottom", ha="left", in_layout=False)
    for (x, y, sign), (cx, cy) in zip(marks, centres):

        def box(spot: tuple[float, float]) -> tuple[float, float, float, float]:
            return (cx + spot[0] * scale, cy + spot[1] * scale, cx + spot[0] * scale + w, cy + spot[1] * scale + h)

        def cost(spot: tuple[float, float]) -> float:
            b = box(spot)
            outside = b[0] < inside.x0 or b[1] < inside.y0 or b[2] > inside.x1 or b[3] > inside.y1
            return sum(_overlap(b, t) for t in taken) + (w * h if outside else 0.0)

        spot = next((s for s in SIGN_SPOTS if cost(s) == 0), min(SIGN_SPOTS, key=cost))
        taken.append(box(spot))
        texts.append(ax.annotate(SIGN_TEXT[sign], (x, y), xytext=spot, **style))
    return texts


def _sign_handles(signs: set[str]) -> list[Line2D]:
    from matplotlib.lines import Line2D

    def handle(s: str) -> Line2D:
        label = f"paper: gap {SIGN_WORDS[s]}, no number"
        return Line2D([], [], marker=SIGN_MARKER[s], ms=16 if s == "<=0" else 12, color="0.3", ls="none", label=label)

    return [handle(s) for s in SIGN_TEXT if s in signs]


def minor_label(v: float, _pos: int) -> str:
    """Label the 2s and 5s between decades of a log axis (0.2, 0.5, 2, 5, 20, 50)."""
    return f"{v:g}" if f"{v:g}".lstrip("0.")[:1] in ("2", "5") else ""


def _paper_handle() -> Line2D:
    from matplotlib.lines import Line2D

    return Line2D([], [], marker="D", ms=8, mfc="none", mec="black", ls="none", label="paper's gap")


def draw_gap_vs_rho(
    points: list[GapPoint],
    threshold: tuple[float, str] | None,
    title: str = "Accuracy gap against the routed fraction ρ",
) -> tuple[Figure, bool]:
    """Gap (pp) against rho (%, log); returns the figure and whether the y axis is symlog. `points`: split_by_rho's,
    each with a measured rho."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    def rho_pct(p: GapPoint) -> float:
        assert p.rho is not None, f"{p.source} has no measured rho: draw split_by_rho's points"
        return 100 * p.rho

    fig = Figure(figsize=(8.5, 5.0), layout="constrained")
    ax = fig.add_subplot()
    methods = sorted({p.method for p in points})
    marker = {m: MARKERS[i % len(MARKERS)] for i, m in enumerate(methods)}
    for p in points:
        _draw_point(ax, rho_pct(p), p, dataset_colour(p.dataset), marker[p.method])
    signed = [(p, sign) for p in points if p.paper_pp is None and (sign := p.paper_sign)]
    ax.axhline(0, color="black", lw=0.8)
    handles = [
        Line2D([], [], marker="o", color=dataset_colour(d), ls="none", label=get_dataset(d).title)
        for d in DATASETS
        if any(p.dataset == d for p in points)
    ]
    handles += [Line2D([], [], marker=marker[m], color="0.35", ls="none", label=m) for m in methods]
    if any(p.paper_pp is not None for p in points):
        handles.append(_paper_handle())
    handles += _sign_handles({sign for _, sign in signed})
    if threshold:
        ax.axvline(threshold[0], color="0.4", ls=":", lw=1)
        handles.append(Line2D([], [], color="0.4", ls=":", label=f"paper's ρ threshold ({threshold[1]})"))
    log_rho_axis(ax)
    xlabel = "routed fraction ρ of inference FLOPs (%, log scale)"
    log = _finish(ax, points, xlabel, title, handles, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    place_signs(fig, ax, [(rho_pct(p), p.mean_pp, sign) for p, sign in signed])
    return fig, log


def draw_gap_vs_classes(
    points: list[GapPoint], title: str = "Accuracy gap against the number of classes"
) -> tuple[Figure, bool]:
    """Gap (pp) against the dataset's class count (log), one line per series."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator

    fig = Figure(figsize=(8.0, 5.6), layout="constrained")
    ax = fig.add_subplot()
    series = sorted({p.series for p in points}, key=str.lower)
    handles = []
    for i, name in enumerate(series):
        colour = f"C{i % 10}"
        dodge = 1.06 ** (i - (len(series) - 1) / 2)  # side by side, so bars at one class count do not overlap
        mine = sorted((p for p in points if p.series == name), key=lambda p: p.num_classes)
        xs = [p.num_classes * dodge for p in mine]
        ax.plot(xs, [p.mean_pp for p in mine], color=colour, lw=1.2, zorder=2)
        for x, p in zip(xs, mine):
            _draw_point(ax, x, p, colour, "o")  # the paper's signs: listed in the caption, too crowded here
        handles.append(Line2D([], [], marker="o", color=colour, label=name))
    if any(p.paper_pp is not None for p in points):
        handles.append(_paper_handle())
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log")
    titles = {d.num_classes: d.title for d in DATASETS.values()}  # every dataset, so runs compare at a glance
    classes = sorted(set(titles) | {p.num_classes for p in points})
    ax.set_xticks(classes, [f"{c}\n{titles.get(c, '')}" for c in classes], fontsize=8)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(classes[0] / 1.6, classes[-1] * 1.6)
    legend = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    return fig, _finish(ax, points, "classes (log scale)", title, handles, **legend)


# --------------------------------------------------------------------------- captions
def _pp(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def _paper_sentence(points: list[GapPoint], signs_drawn: bool) -> str:
    numeric = [p for p in points if p.paper_pp is not None]
    signs = [(p, sign) for p in points if p.paper_pp is None and (sign := p.paper_sign)]
    parts = []
    if numeric:
        listed = "; ".join(f"{p.label}: ours {_pp(p.mean_pp)} pp, paper {p.paper_printed}" for p in numeric)
        parts.append(
            "Hollow diamonds: the gap the paper's text reports for the same comparison, drawn at the same "
            f"x as ours ({listed})."
        )
    else:
        parts.append("The paper's text reports none of these gaps as a number.")
    if signs and signs_drawn:
        parts.append(
            f"A bracketed (+), (−) or (≤0) beside {len(signs)} point(s) is the direction the text "
            "states without a number, set beside its point where it covers no other."
        )
    elif signs:
        listed = "; ".join(f"{p.label} ({p.series}) {SIGN_TEXT[sign]}" for p, sign in signs)
        parts.append(f"Directions the text states without a number (not drawn): {listed}.")
    return " ".join(parts)


def _common_sentences(points: list[GapPoint], symlog: bool) -> str:
    merged = [p for p in points if p.merged]
    out = []
    if merged:
        same = "; ".join(" = ".join(p.sources) for p in merged)
        out.append(f"Comparisons that reuse the same runs in several manifests are drawn once: {same}.")
    metrics: dict[str, list[str]] = {}
    for d in sorted({p.dataset for p in points}, key=list(DATASETS).index):
        metrics.setdefault(get_dataset(d).metric, []).append(get_dataset(d).title)
    words = {"final": "final-epoch test accuracy", "peak": "peak validation accuracy"}
    out.append(f"Seeds per comparison: {'/'.join(str(n) for n in sorted({p.n for p in points}))}.")
    out.append("Accuracy is " + " and ".join(f"{words[m]} on {', '.join(t)}" for m, t in metrics.items()) + ".")
    if symlog:
        out.append(
            "The y axis is linear within ±1 pp and logarithmic beyond, so collapses of tens of points "
            "and sub-point gaps fit one axis."
        )
    return " ".join(out)


def caption_gap_vs_rho(
    points: list[GapPoint], left_out: dict[str, int], threshold: tuple[float, str] | None, symlog: bool, runs: str
) -> str:
    text = (
        f"Mean MoE − dense accuracy gap (percentage points, paired by seed; bars: 95% t-interval) against "
        f"the treatment's routed fraction ρ for {len(points)} comparison(s); colour: dataset, marker: what "
        "the treatment routes (its head, or its backbone where both heads are dense)."
    )
    words = {"zero": "with ρ = 0", "missing": "without a measured ρ"}
    skipped = [f"{n} {words[why]}" for why, n in left_out.items() if n]
    if skipped:
        text += f" Not shown: {', '.join(skipped)}."
    text += " " + _common_sentences(points, symlog) + " " + _paper_sentence(points, signs_drawn=True)
    if threshold:
        text += f" Dotted line: the ρ threshold the paper places between hurting and helping ({threshold[1]})."
    return f"{text} {runs}"


def caption_gap_vs_classes(points: list[GapPoint], symlog: bool, runs: str) -> str:
    series = sorted({p.series for p in points}, key=str.lower)
    text = (
        f"Mean MoE − dense accuracy gap (pp; bars: 95% t-interval) against the dataset's number of classes, "
        f"one line per series of comparisons tagged alike across manifests ({'; '.join(series)}); points of "
        "different series are offset slightly sideways."
    )
    return f"{text} {_common_sentences(points, symlog)} {_paper_sentence(points, signs_drawn=False)} {runs}"


def split_by_rho(points: list[GapPoint]) -> tuple[list[GapPoint], dict[str, int]]:
    """Points with rho > 0, and how many were left out for rho = 0 or no rho."""
    shown = [p for p in points if p.rho is not None and p.rho > 0]
    zero = sum(1 for p in points if p.rho is not None and p.rho <= 0)
    return shown, {"zero": zero, "missing": sum(1 for p in points if p.rho is None)}
