"""The extension's figure (issue 17): accuracy gap against rho, one panel per router.

Beyond the paper, kept apart from the reproduction's figures. A manifest is an
extension when all its claims have scope "extension" (`Manifest.is_extension`); each of its
comparisons is one point: the mean paired MoE - dense gap over seeds (pp) with its 95%
t-interval, at the treatment row's rho, coloured by backbone family. Panels are the
comparisons' `series` (one per router), in manifest order, on shared axes, so the
question "does the sign follow rho for every router?" reads across panels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from repro.plan.manifest import Manifest
from repro.report.figures_gaps import log_rho_axis, measured_gap, yerr
from repro.results.measurements import ManifestResult

if TYPE_CHECKING:  # matplotlib is imported where a figure is drawn
    from matplotlib.figure import Figure

ROUTER_TITLES = {
    "paper": "the paper's router",
    "tgr": "teacher-guided (TGR-MoE)",
    "relu": "ReLU-routed (DECO)",
    "cluster": "cluster-routed (CLEAR-MoE)",
}
FAMILY_COLOURS = {"cifar_standard": "C0", "cifar_depthwise": "C1"}
FAMILY_LABELS = {"cifar_standard": "standard backbone", "cifar_depthwise": "depthwise backbone"}


@dataclass(frozen=True)
class RouterPoint:
    comparison: str
    router: str  # the comparison's series
    backbone: str  # the treatment row's backbone name
    label: str
    rho: float  # a fraction
    mean_pp: float
    ci_pp: tuple[float, float] | None  # None with one seed


def router_points(manifest: Manifest, result: ManifestResult) -> list[RouterPoint]:
    """Every comparison with a measured gap and rho, in manifest order."""
    points = []
    for comp in manifest.comparisons:
        gap, rho = measured_gap(result, comp.id), result.measured.comparison(comp.id, "rho")
        if gap is not None and rho is not None:
            backbone = manifest.row(comp.row).backbone.name
            points.append(RouterPoint(comp.id, comp.series or comp.id, backbone, comp.label, float(rho), *gap[:2]))
    return points


def draw_gap_vs_rho_by_router(points: list[RouterPoint]) -> Figure:
    """One panel per router: gap (pp) against rho (%, log), shared axes, zero line."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    routers = list(dict.fromkeys(p.router for p in points))
    fig = Figure(figsize=(3.2 * max(1, len(routers)), 3.6), layout="constrained")
    axes = fig.subplots(1, max(1, len(routers)), sharex=True, sharey=True, squeeze=False)[0]
    for ax, router in zip(axes, routers):
        mine = sorted((p for p in points if p.router == router), key=lambda p: p.rho)
        for family in dict.fromkeys(p.backbone for p in mine):
            line = [p for p in mine if p.backbone == family]
            colour = FAMILY_COLOURS.get(family, "0.3")
            xs, ys = [100 * p.rho for p in line], [p.mean_pp for p in line]
            ax.plot(xs, ys, color=colour, lw=0.8, alpha=0.6)
            for p, x in zip(line, xs):
                ax.errorbar([x], [p.mean_pp], yerr=yerr(p.mean_pp, p.ci_pp), fmt="o", color=colour, ms=4, capsize=2)
        ax.axhline(0, color="black", lw=0.8)
        log_rho_axis(ax)  # the 2s and 5s only: all minor labels overlap on a narrow panel
        # A gap lies in [-100, 100] pp; with two seeds a 95% interval (t, 1 d.f.) runs far past it.
        low = min([p.ci_pp[0] for p in points if p.ci_pp] + [p.mean_pp for p in points] + [-5])
        high = max([p.ci_pp[1] for p in points if p.ci_pp] + [p.mean_pp for p in points] + [5])
        ax.set_ylim(max(-100, low * 1.1), min(100, high * 1.1))
        ax.set_title(ROUTER_TITLES.get(router, router), fontsize=9)
        ax.set_xlabel("ρ (%, log)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("MoE − dense accuracy (pp)")
    families = dict.fromkeys(p.backbone for p in points)
    handles = [
        Line2D([], [], marker="o", color=FAMILY_COLOURS.get(f, "0.3"), label=FAMILY_LABELS.get(f, f)) for f in families
    ]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)  # the foot: the stamp
    fig.suptitle("Beyond the paper: gap against ρ for each router", fontsize=10)
    return fig


def caption(points: list[RouterPoint], profile: str) -> str:
    routers = list(dict.fromkeys(p.router for p in points))
    signs = "; ".join(
        f"{ROUTER_TITLES.get(r, r)}: "
        + "".join(
            "+" if p.mean_pp > 0 else "−" for p in sorted((q for q in points if q.router == r), key=lambda q: q.rho)
        )
        for r in routers
    )
    return (
        f"Extension, not a reproduction: each point is one configuration's mean paired gap with its 95% "
        f"interval (cut at ±100 pp, the widest a gap can be), at the routed row's ρ (profile '{profile}'). "
        f"Signs in increasing ρ: {signs}."
    )


def render_extension_figure(manifest: Manifest, result: ManifestResult | None, out_dir: Path, root: Path | None = None):
    """The extension figure as a repro.report.figures.FigureFile (drawn, or skipped with the reason), written
    below `root` (default: out_dir) only."""
    from repro.report.figures import Folder

    out = Folder(Path(out_dir), Path(root or out_dir))
    head = (f"{manifest.id}_gap_vs_rho", f"Extension ({manifest.id}): gap against ρ per router", manifest.paper_ref)
    points = router_points(manifest, result) if result is not None else []
    if result is None or not points:
        return out.skip(head, "no comparison has both a gap and rho yet")
    drawn = {p.comparison for p in points}
    rows = frozenset((manifest.id, r) for c in manifest.comparisons if c.id in drawn for r in (c.row, c.baseline))
    text = caption(points, result.profile)
    return out.save(head, text, lambda: draw_gap_vs_rho_by_router(points), points, [(manifest, result)], rows)


def extension_section(
    entries: list[tuple[Manifest, ManifestResult | None]],
    figures_dir: Path,
    report_dir: Path,
    drawn: list | None = None,
    root: Path | None = None,
) -> tuple[str, str] | None:
    """("Beyond the paper: ...", markdown) for render_report's extra_sections: each extension manifest's
    figure and its claims' verdicts; None when no manifest is an extension. Each FigureFile is also
    appended to `drawn` when given (report.html shows it among the figures)."""
    from repro.report.render import md_escape, render_figure_section

    parts = []
    for manifest, result in entries:
        if not manifest.is_extension():
            continue
        figure = render_extension_figure(manifest, result, Path(figures_dir), root)
        if drawn is not None:
            drawn.append(figure)
        description = md_escape(" ".join(manifest.description.split()))
        figures = render_figure_section([figure], Path(report_dir))
        lines = [f"### {md_escape(manifest.title)}\n\n{description}\n\n{figures}\n"]
        if result is None:
            lines.append("Not run at this profile.")
        for v in result.verdicts if result is not None else []:
            note = f" ({md_escape(v.note)})" if v.note else ""
            lines.append(f"- **{v.status_text}**: {md_escape(v.statement)}. {md_escape(v.evidence)}{note}")
        parts.append("\n".join(lines))
    if not parts:
        return None
    head = (
        "Not part of the reproduction: routers from related work run through the paper's sweep. These "
        "claims have no paper value and are counted apart from the reproduction's."
    )
    return "Beyond the paper: other routers", head + "\n\n" + "\n\n".join(parts)
