"""`repro rho --all --figure F.png`: head-only rho against total FLOPs for every torchvision CNN, with the
paper's settings marked.

Both axes are logarithmic: rho spans 0.02% to 20% over the CNNs and total MACs three orders
of magnitude. The paper's ~7% threshold and 1% floor are drawn across; its settings (Table 6's
rows either side of the threshold) are drawn where this artifact counts them, each labelled
with the rho the paper prints for it.
"""

from __future__ import annotations

import io
from pathlib import Path

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from repro.core.fsutil import atomic_write_bytes
from repro.rho.paper_settings import Reference

DPI = 150
STAR_SIZE = 140  # a setting's star, in points^2


def _named(rows: list[dict]) -> list[dict]:
    """Each family's smallest and largest model: every name would overlap where 40 CNNs share a decade."""
    named = []
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = sorted((r for r in rows if r["family"] == family), key=lambda r: r["total_macs"])
        named += [mine[0]] + mine[-1:] * (len(mine) > 1)
    return named


# Where a setting's label may sit, in points from its star, in the order tried: below right, above right,
# below left, above left. Settings lie close together where several route most of a small CNN (CIFAR).
LABEL_PLACES = (((7, -10), "left"), ((7, 6), "left"), ((-7, -10), "right"), ((-7, 6), "right"))


def star_boxes(fig: Figure, labels: list) -> list[Bbox]:
    """The square, in pixels, each label's star covers (a star's size is an area in points^2)."""
    r = STAR_SIZE**0.5 / 2 * fig.dpi / 72
    return [
        Bbox.from_extents(x - r, y - r, x + r, y + r)
        for x, y in (label.axes.transData.transform(label.xy) for label in labels)
    ]


def _separate(fig: Figure, labels: list) -> None:
    """Move each setting's label to the first place where it covers no label placed before it and no other
    setting's star; where every place is covered, the first place."""
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # draw() gives the figure the canvas its PNG is drawn on
    renderer = canvas.get_renderer()
    stars = star_boxes(fig, labels)
    placed: list[Bbox] = []
    for i, label in enumerate(labels):
        taken = placed + stars[:i] + stars[i + 1 :]
        for offset, align in LABEL_PLACES:
            label.set_position(offset)
            label.set_horizontalalignment(align)
            box = label.get_window_extent(renderer).expanded(1.02, 1.1)
            if not any(box.overlaps(other) for other in taken):
                break
        else:
            label.set_position(LABEL_PLACES[0][0])
            label.set_horizontalalignment(LABEL_PLACES[0][1])
        placed.append(label.get_window_extent(renderer))


def draw(rows: list[dict], points: list[dict], reference: Reference, title: str, path: Path) -> None:
    counted = [r for r in rows if "rho" in r]
    families = sorted({r["family"] for r in counted})
    fig = Figure(figsize=(11, 8.5))
    FigureCanvasAgg(fig)  # the canvas PNGs are drawn on: label sizes are measured with its renderer
    ax = fig.add_subplot()
    colours = {f: colormaps["tab20"](i % 20) for i, f in enumerate(families)}
    for family in families:
        mine = [r for r in counted if r["family"] == family]
        ax.scatter(
            [r["total_macs"] / 1e9 for r in mine],
            [r["rho"] * 100 for r in mine],
            s=22,
            color=colours[family],
            label=family,
            zorder=3,
        )
    for r in _named(counted):
        ax.annotate(
            r["model"],
            (r["total_macs"] / 1e9, r["rho"] * 100),
            fontsize=6.5,
            xytext=(4, 2),
            textcoords="offset points",
            color="0.2",
        )
    labels = []
    for p in points:
        x, y = p["total_macs"] / 1e9, p["rho"] * 100
        ax.scatter([x], [y], marker="*", s=STAR_SIZE, color="black", zorder=4)
        if p["paper_rho"] is not None:  # the rho the paper prints, at the same total: the gap is the mismatch
            ax.plot([x, x], [y, p["paper_rho"] * 100], color="black", lw=0.6, ls=":", zorder=2)
            ax.scatter([x], [p["paper_rho"] * 100], marker="o", s=45, facecolors="none", edgecolors="black", zorder=4)
        paper = f", paper {p['paper']}{' (explainer)' if p['from_explainer'] else ''}" if p["paper"] else ""
        labels.append(
            ax.annotate(
                f"{p['row']}: {y:.2g}%{paper}",
                (x, y),
                fontsize=7,
                xytext=LABEL_PLACES[0][0],
                textcoords="offset points",
                weight="bold",
                zorder=5,
                bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
            )
        )
    t, f = reference.threshold, reference.floor
    ax.axhline(t.value * 100, color="tab:green", lw=1.2, ls="-", zorder=1)
    ax.axhline(f.value * 100, color="tab:red", lw=1.2, ls="--", zorder=1)
    ax.text(
        0.995,
        t.value * 100,
        f"paper's {t.printed} threshold (Sec. {t.section})",
        ha="right",
        va="bottom",
        fontsize=8,
        color="tab:green",
        transform=ax.get_yaxis_transform(),
    )
    ax.text(
        0.995,
        f.value * 100,
        f"{f.printed}: head-only routing hurt below (Sec. {f.section})",
        ha="right",
        va="bottom",
        fontsize=8,
        color="tab:red",
        transform=ax.get_yaxis_transform(),
    )
    ax.scatter([], [], marker="*", s=100, color="black", label="paper's settings (Table 6), as counted here")
    ax.scatter([], [], marker="o", s=45, facecolors="none", edgecolors="black", label="their ρ as the paper prints it")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(
        "total inference multiply-adds per image (GMAC): CNNs with the MoE head at the title's input; "
        "the settings at their dataset's resolution"
    )
    ax.set_ylabel("ρ, routed share of inference FLOPs (%): head-only MoE; ★ as each setting routes")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", lw=0.3, color="0.85")
    ax.legend(fontsize=7, ncol=2, loc="lower left", framealpha=0.9)
    fig.tight_layout()
    _separate(fig, labels)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})  # the same counts give the same bytes
    atomic_write_bytes(path, buf.getvalue())
