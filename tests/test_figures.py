"""Report figures from fabricated results of real manifests: files, deduplication, skips, golden numbers."""

import dataclasses
import hashlib
import math
import struct

import numpy as np
import pytest

from repro.data.specs import get_dataset
from repro.plan.manifest import find_manifest
from repro.measure.flop_check import row_key
from repro.pipeline import comparison_metrics
from repro.results.measurements import ManifestResult, Measured
from repro.report import figures_gaps, figures_runs
from repro.report.figures import render_figures
from repro.plan.table_plan import plan_all
from repro.claims.stats import paired_gap

SEEDS = (0, 1, 2)
EPOCHS = 4
EXPERTS = 8
T_975_DF2 = 4.302652729911275  # t quantile for a 95% interval with 3 seeds


@pytest.fixture(scope="module")
def manifests():
    ids = ["table2", "table3", "table8", "table9", "headline_cifar10", "temperature_ablation"]
    return {i: find_manifest(i) for i in ids}


def _plans(entries):
    """The plans of the entries' tables, as the report's command builds them."""
    return plan_all(m for m, _ in entries)


def _hash(row, seed, profile):
    """A run's identity as the pipeline's: the model (not the row id or the manifest), the seed, the profile."""
    return hashlib.sha256(f"{row_key(row)}|{seed}|{profile}".encode()).hexdigest()[:16]


def fake_result(manifest, profile="smoke"):
    """Dense rows score 50% on every seed; routed rows 51/52/53% on seeds 0/1/2 (gap 1, 2, 3 pp).

    Test accuracy per epoch e (0-based) is 10(e+1) + seed %; tau 1 - 0.2e on routed rows. Test usage:
    class c sends 2 images to expert (c + seed) % 8 and 1 to expert 0; the last class has no image."""
    treated = {c.row for c in manifest.comparisons}
    measured, runs = Measured(), {}
    for i, row in enumerate(manifest.rows):
        if "accuracy" not in row.measures:
            continue
        routed = row.id in treated or row.head.name != "dense"
        classes = get_dataset(row.dataset).num_classes
        acc = {s: 0.50 + (0.01 * (s + 1) if routed else 0.0) for s in SEEDS}
        measured.metrics[f"rows.{row.id}.accuracy"] = acc
        measured.metrics[f"rows.{row.id}.rho"] = 0.05 + 0.01 * i if routed else 0.0
        runs[row.id] = []
        for s in SEEDS:
            curve = [0.1 * (e + 1) + 0.01 * s for e in range(EPOCHS)]
            usage = np.zeros((classes, EXPERTS), dtype=int)
            usage[np.arange(classes - 1), (np.arange(classes - 1) + s) % EXPERTS] += 2
            usage[: classes - 1, 0] += 1
            runs[row.id].append(
                {
                    "seed": s,
                    "hash": _hash(row, s, profile),
                    "accuracy": acc[s],
                    "final_accuracy": curve[-1],
                    "peak_accuracy": max(curve),
                    "test_accuracy_by_epoch": curve,
                    "train_accuracy_by_epoch": curve,
                    "tau_by_epoch": [1 - 0.2 * e for e in range(EPOCHS)] if routed else [None] * EPOCHS,
                    "routing": {"expert_usage": [10] * EXPERTS, "test_usage_by_class": usage.tolist()}
                    if routed
                    else {},
                }
            )
    for comp in manifest.comparisons:
        a, b = (measured.metrics.get(f"rows.{r}.accuracy") for r in (comp.row, comp.baseline))
        if a and b:
            measured.metrics[f"comparisons.{comp.id}.gap"] = paired_gap(a, b).to_dict()
    measured = comparison_metrics(manifest, measured)
    measured.details["runs"] = runs
    return ManifestResult(
        manifest.id, manifest.title, manifest.paper_ref, manifest.paper_table, profile, measured, [], {}
    )


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


# --------------------------------------------------------------------------- gap points
def test_shared_comparisons_are_one_point(manifests):
    entries = [(manifests[i], fake_result(manifests[i])) for i in ("table2", "table9", "table8")]
    points = figures_gaps.gap_points(entries)
    # table2 has 3 comparisons, table9 19; two of table2's (std, dw072) and all six of table8's are table9's runs
    assert len(points) == 3 + 19 - 2
    by_source = {p.source: p for p in points}
    assert sorted(by_source["table2/std"].merged) == ["table9/c100_sparse_std"]
    assert sorted(by_source["table9/c100_soft"].merged) == ["table8/c100_soft"]
    assert "table2/dw2" in by_source and not by_source["table2/dw2"].merged
    shown, left_out = figures_gaps.split_by_rho(points)
    assert len(shown) == 20 and left_out == {"zero": 0, "missing": 0}

    fig, _ = figures_gaps.draw_gap_vs_rho(shown, figures_gaps.rho_threshold_pct([manifests["table2"]]))
    assert len(fig.axes[0].containers) == 20  # one error bar per plotted comparison


def test_same_comparison_at_another_profile_is_not_merged(manifests):
    t2, t9 = manifests["table2"], manifests["table9"]
    points = figures_gaps.gap_points([(t2, fake_result(t2, "smoke")), (t9, fake_result(t9, "full"))])
    assert len(points) == 3 + 19


def test_gap_point_golden_values_and_paper_overlay(manifests):
    t8, t9 = manifests["table8"], manifests["table9"]
    points = {p.source: p for p in figures_gaps.gap_points([(t9, fake_result(t9)), (t8, fake_result(t8))])}
    p = points["table9/c100_per_sample_soft"]
    half = T_975_DF2 * 1.0 / math.sqrt(3)  # differences 1, 2, 3 pp: mean 2, sd 1
    assert p.mean_pp == pytest.approx(2.0) and p.n == 3
    assert p.ci_pp == pytest.approx((2.0 - half, 2.0 + half))
    assert p.paper_pp == pytest.approx(1.69) and p.paper_printed == "+1.69%"
    assert points["table9/c100_soft"].paper_pp == pytest.approx(-36)
    assert points["table9/c100_expert_choice"].paper_pp is None
    assert points["table9/c100_expert_choice"].paper_sign == "-"
    assert points["table9/c100_expert_choice"].method == "Expert Choice"


def test_rho_zero_and_missing_rho_are_left_out(manifests):
    t2 = manifests["table2"]
    result = fake_result(t2)
    result.measured.metrics["comparisons.std.rho"] = 0.0
    del result.measured.metrics["comparisons.dw2.rho"]
    shown, left_out = figures_gaps.split_by_rho(figures_gaps.gap_points([(t2, result)]))
    assert [p.source for p in shown] == ["table2/dw072"]
    assert left_out == {"zero": 1, "missing": 1}


def test_series_collect_one_line_per_series_over_class_counts(manifests):
    entries = [(manifests[i], fake_result(manifests[i])) for i in ("headline_cifar10", "table2", "table3")]
    series = {}
    for p in figures_gaps.gap_points(entries):
        series.setdefault(p.series, []).append(p.num_classes)
    assert sorted(series["depthwise co-optimised"]) == [10, 100, 200]
    assert sorted(series["depthwise w=2.0"]) == [10, 100, 200]
    assert sorted(series["standard backbone"]) == [100, 200]
    fig, _ = figures_gaps.draw_gap_vs_classes([p for p in figures_gaps.gap_points(entries) if p.series])
    assert len(fig.axes[0].lines) >= 3  # one line per series
    assert [int(t) for t in fig.axes[0].get_xticks()] == [10, 100, 200, 1000]


# --------------------------------------------------------------------------- manifest figures
def test_accuracy_by_epoch_mean_and_band(manifests):
    m = manifests["temperature_ablation"]
    decl = m.figures[0]
    curves = figures_runs.epoch_curves(decl, m, fake_result(m))
    assert [c.row for c in curves] == list(decl.rows)
    c = curves[0]
    assert c.mean == pytest.approx([11, 21, 31, 41])  # 10(e+1) + mean seed (1) %
    assert c.low == pytest.approx([10, 20, 30, 40]) and c.high == pytest.approx([12, 22, 32, 42])
    assert c.tau == pytest.approx([1.0, 0.8, 0.6, 0.4])
    assert c.late_drop_pp == pytest.approx(0.0)

    result = fake_result(m)
    short = result.measured.details["runs"][decl.rows[0]][0]
    short["test_accuracy_by_epoch"], short["tau_by_epoch"] = short["test_accuracy_by_epoch"][:3], [1.0]
    c = figures_runs.epoch_curves(decl, m, result)[0]
    assert c.truncated and c.mean == pytest.approx([11, 21, 31])  # cut to the shortest seed
    assert c.tau == pytest.approx([1.0, 0.8, 0.6])  # seeds without a tau for an epoch are left out of its mean


def test_usage_heatmap_rows_sum_to_one(manifests):
    m = manifests["table2"]
    decl = next(f for f in m.figures if f.kind == "usage_by_class")
    (mat,) = figures_runs.usage_matrices(decl, m, fake_result(m))
    assert mat.counts.shape == (100, EXPERTS) and mat.seeds == 3
    share = mat.share
    assert np.allclose(share[:-1].sum(axis=1), 1.0)
    assert np.isnan(share[-1]).all() and mat.empty_classes == 1
    # class 0: expert 0 gets 1 image per seed plus 2 on seed 0; experts 1 and 2 get 2 on seeds 1 and 2
    assert share[0, :3] == pytest.approx([5 / 9, 2 / 9, 2 / 9]) and share[0, 3:].sum() == 0
    fig = figures_runs.draw_usage_by_class([mat], decl.title)
    assert list(fig.axes[0].get_yticks()) == list(range(0, 100, 10))  # every 10th class, not 100 labels


# --------------------------------------------------------------------------- files
@pytest.mark.slow
def test_render_writes_valid_png_and_pdf(manifests, tmp_path):
    entries = [(manifests[i], fake_result(manifests[i])) for i in ("table2", "table9", "temperature_ablation")]
    files = {f.id: f for f in render_figures(entries, tmp_path, _plans(entries))}
    assert set(files) == {"gap_vs_rho", "gap_vs_classes", "fig4_usage_by_class", "fig3_accuracy_by_epoch"}
    for f in files.values():
        assert f.drawn, f.caption
        assert f.png == tmp_path / f"{f.id}.png" and f.pdf == tmp_path / f"{f.id}.pdf"
        width, height = _png_size(f.png.read_bytes())
        assert width >= 600 and height >= 400 and f.png.stat().st_size > 20_000
        assert f.pdf.read_bytes()[:5] == b"%PDF-"
        assert "profile 'smoke'" in f.caption
    rho_caption = files["gap_vs_rho"].caption
    assert "+1.69%" in rho_caption and "table2/std = table9/c100_sparse_std" in rho_caption
    assert "direction +, no number" in files["fig3_accuracy_by_epoch"].caption
    again = {f.id: f for f in render_figures(entries, tmp_path / "again", _plans(entries))}
    for fmt in ("png", "pdf"):  # no timestamps: the same results give the same bytes
        assert getattr(again["gap_vs_rho"], fmt).read_bytes() == getattr(files["gap_vs_rho"], fmt).read_bytes()


def test_figures_without_data_are_skipped_with_a_reason(manifests, tmp_path):
    stale = tmp_path / "gap_vs_rho.png"
    stale.write_bytes(b"old")
    m2, mt = manifests["table2"], manifests["temperature_ablation"]
    files = {f.id: f for f in render_figures([(m2, None), (mt, None)], tmp_path, _plans([(m2, None), (mt, None)]))}
    assert set(files) == {"gap_vs_rho", "gap_vs_classes", "fig4_usage_by_class", "fig3_accuracy_by_epoch"}
    assert all(not f.drawn and f.pdf is None and f.caption.startswith("not drawn: ") for f in files.values())
    assert "no manifest has results" in files["gap_vs_rho"].caption
    assert "temperature_ablation has no results" in files["fig3_accuracy_by_epoch"].caption
    assert not stale.exists() and not list(tmp_path.iterdir())


def test_figure_whose_rows_recorded_nothing_is_skipped(manifests, tmp_path):
    m = manifests["table2"]
    result = fake_result(m)
    for run in result.measured.details["runs"]["dw072_moe"]:
        run["routing"] = {}
    files = {f.id: f for f in render_figures([(m, result)], tmp_path, _plans([(m, result)]))}
    usage = files["fig4_usage_by_class"]
    assert not usage.drawn and "expert usage" in usage.caption
    assert files["gap_vs_rho"].drawn and not (tmp_path / "fig4_usage_by_class.png").exists()


def _colour_pixels(fig, colour: str, tolerance: int = 12) -> int:
    """How many pixels of the rendered figure are `colour` (a matplotlib colour), within `tolerance` per channel."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgb

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)  # (H, W, 3)
    target = np.array([round(255 * c) for c in to_rgb(colour)])
    return int((np.abs(image - target) <= tolerance).all(axis=-1).sum())


def test_coinciding_accuracy_curves_stay_visible(manifests):
    """Fig. 3 on runs that did not learn: linear and sigmoid schedules to tau_min = 0.05 give the same curves,
    and the first drawn (C0) must still show beneath the second, in both panels."""
    m = manifests["temperature_ablation"]
    decl = m.figures[0]
    first, second = figures_runs.epoch_curves(decl, m, fake_result(m))[:2]
    twin = figures_runs.EpochCurve(
        **{**second.__dict__, "mean": first.mean, "low": first.low, "high": first.high, "tau": first.tau}
    )
    fig = figures_runs.draw_accuracy_by_epoch([first, twin], "coinciding")
    for ax in fig.axes:
        if ax.get_legend() is not None:
            ax.get_legend().remove()  # count the curves' own pixels, not the legend's samples
    lines = [line for line in fig.axes[0].lines]
    assert lines[0].get_linestyle() != lines[1].get_linestyle() and lines[0].get_marker() != lines[1].get_marker()
    assert lines[0].get_linewidth() > lines[1].get_linewidth() and lines[0].get_zorder() < lines[1].get_zorder()
    assert _colour_pixels(fig, "C0") > 300  # before: 0, the second curve drawn exactly over the first


def _signed_point(i: int, rho: float, gap: float, sign: str) -> figures_gaps.GapPoint:
    return figures_gaps.GapPoint(
        source=f"t/c{i}",
        label=f"c{i}",
        dataset=("cifar10", "cifar100")[i % 2],
        method="sparse MoE",
        series="s",
        profile="smoke",
        rho=rho,
        mean_pp=gap,
        ci_pp=(gap - 20, gap + 20),
        n=2,
        paper_sign=sign,
    )


def test_sign_marks_in_gap_vs_rho_are_in_the_legend_and_never_overlap():
    """Twelve comparisons the paper signs without a number, crowded at rho 30-50 % on two gaps (as smoke's are)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from repro.report.figures import Stamp, draw_stamp

    points = [_signed_point(i, 0.30 + 0.02 * (i % 10), (0.0, -0.8)[i % 2], ("+", "-", "<=0")[i % 3]) for i in range(12)]
    fig, _ = figures_gaps.draw_gap_vs_rho(points, (7.0, "~7%"))
    draw_stamp(fig, Stamp("smoke: synthetic data, a pipeline check, not evidence · commit 0123", True, "smoke"))
    FigureCanvasAgg(fig).draw()  # the final layout, with the stamp
    ax = fig.axes[0]
    marks = [t for t in ax.texts if t.get_text() in figures_gaps.SIGN_TEXT.values()]
    assert sorted(t.get_text() for t in marks) == sorted(figures_gaps.SIGN_TEXT[p.paper_sign] for p in points)
    boxes = [t.get_window_extent() for t in marks]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
        assert ax.get_window_extent().contains(a.x0, a.y0) and ax.get_window_extent().contains(a.x1, a.y1)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    for words in (
        "paper: gap positive, no number",
        "paper: gap negative, no number",
        "paper: gap not positive (no gain), no number",
    ):
        assert words in legend, legend
    # Without signed points the legend says nothing of signs
    fig, _ = figures_gaps.draw_gap_vs_rho([dataclasses.replace(points[0], paper_sign=None)], None)
    assert not any("no number" in t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert not fig.axes[0].texts


def test_a_figure_drawn_from_the_same_inputs_is_not_drawn_again(manifests, tmp_path, monkeypatch):
    """A report rendered again over unchanged results keeps its figure files byte for byte and draws nothing (a
    reused verify-all spent 4 s redrawing them); other results draw the figure again."""
    from repro.report import figures

    t2, t9 = manifests["table2"], manifests["temperature_ablation"]
    entries = [(t2, fake_result(t2)), (t9, fake_result(t9))]
    first = render_figures(entries, tmp_path, _plans(entries))
    drawn = {f.id: (f.png.read_bytes(), f.pdf.read_bytes()) for f in first if f.drawn}
    assert {"gap_vs_rho", "gap_vs_classes"} <= set(drawn)
    for f in first:
        if f.drawn:
            assert figures.drawn_key(f.png) and len(figures.drawn_key(f.png)) == 32

    def refuse(*a, **k):
        raise AssertionError("drew a figure whose inputs did not change")

    for module, name in (
        (figures_gaps, "draw_gap_vs_rho"),
        (figures_gaps, "draw_gap_vs_classes"),
        (figures_runs, "draw_accuracy_by_epoch"),
        (figures_runs, "draw_usage_by_class"),
    ):
        monkeypatch.setattr(module, name, refuse)
    again = render_figures(entries, tmp_path, _plans(entries))
    assert [(f.id, f.caption) for f in again] == [(f.id, f.caption) for f in first]
    assert {f.id: (f.png.read_bytes(), f.pdf.read_bytes()) for f in again if f.drawn} == drawn
    monkeypatch.undo()
    other = [(t2, fake_result(t2, "functional")), (t9, fake_result(t9))]  # another profile: another stamp
    redrawn = {f.id: f.png.read_bytes() for f in render_figures(other, tmp_path, _plans(other)) if f.drawn}
    assert redrawn["gap_vs_rho"] != drawn["gap_vs_rho"][0]
