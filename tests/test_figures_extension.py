"""The extension figure (repro.report.figures_extension): points from measured gaps, one panel per router."""

from repro.plan.manifest import find_manifest
from repro.report.figures_extension import (
    caption,
    extension_section,
    draw_gap_vs_rho_by_router,
    render_extension_figure,
    router_points,
)
import dataclasses

from repro.results.measurements import ManifestResult, Measuring


def result(manifest, gaps):
    m = Measuring()
    for comp in manifest.comparisons:
        if comp.id in gaps:
            mean, rho = gaps[comp.id]
            m.set_comparison(comp.id, "gap", {"mean": mean, "ci95": (mean - 0.01, mean + 0.01), "n": 2})
            m.set_comparison(comp.id, "rho", rho)
    return ManifestResult(
        manifest.id, manifest.title, manifest.paper_ref, manifest.paper_table, "smoke", m.done(), [], {}
    )


def test_only_the_extension_manifest_is_an_extension():
    assert find_manifest("ext_routers").is_extension()
    assert not find_manifest("table1").is_extension()


def test_points_panels_and_caption(tmp_path):
    man = find_manifest("ext_routers")
    res = result(man, {"relu_std_h128": (-0.02, 0.01), "relu_std_h2048": (0.03, 0.2), "moe_dw_h128": (-0.01, 0.005)})
    points = router_points(man, res)
    assert [(p.comparison, p.router, p.backbone) for p in points] == [
        ("moe_dw_h128", "paper", "cifar_depthwise"),
        ("relu_std_h128", "relu", "cifar_standard"),
        ("relu_std_h2048", "relu", "cifar_standard"),
    ]
    assert points[1].mean_pp == -2.0 and points[1].ci_pp == (-3.0, -1.0)
    fig = draw_gap_vs_rho_by_router(points)
    assert len(fig.axes) == 2  # one panel per router with data
    assert "ReLU-routed (DECO): −+" in caption(points, "smoke")
    f = render_extension_figure(man, res, tmp_path)
    assert f.drawn and f.png.exists() and f.png.stat().st_size > 1000
    skipped = render_extension_figure(man, result(man, {}), tmp_path)
    assert not skipped.drawn and "no comparison" in skipped.caption


def test_extension_section_lists_the_figure_and_verdicts(tmp_path):
    from repro.claims import Evidence, evaluate

    man = find_manifest("ext_routers")
    res = result(man, {"relu_std_h128": (-0.02, 0.01)})
    nothing = Evidence(man.id, man.paper_table, "smoke", metrics={}, paper_scale=False)
    res = dataclasses.replace(res, verdicts=[evaluate(c, nothing) for c in man.claims])
    title, md = extension_section([(find_manifest("table1"), None), (man, res)], tmp_path / "figures", tmp_path)
    assert title == "Beyond the paper: other routers"
    assert "figures/ext_routers_gap_vs_rho.png" in md
    assert md.count("- **not run**") == len(man.claims)
    assert extension_section([(find_manifest("table1"), None)], tmp_path, tmp_path) is None
