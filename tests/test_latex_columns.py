"""LaTeX tables that fit the page: repro.report.latex_columns splits a table's columns into those that wrap and
those set whole, and every standalone table (`<id>_standalone.tex`, one per table `repro verify-all` runs at
smoke) and the Artifact Appendix compile with pdflatex, on A4 and on letter paper, with no line wider than the
text block by more than FIT_PT (pdflatex's log names each "Overfull \\hbox")."""

import dataclasses
import os
import re
import shutil
import subprocess

import pytest

from repro.claims import decide_table, decided_results
from repro.measure.flop_check import measure_flops
from repro.measure.measurer import Context
from repro.plan.manifest import load_all
from repro.plan.table_plan import build_plan, plan_all
from repro.report.appendix import write_appendix
from repro.report.latex_columns import tex_columns
from repro.report.render import write_manifest_outputs
from repro.results.measurements import Measured, save_result

FIT_PT = 10  # what an overfull box may stick out, in points
OVERFULL = re.compile(r"Overfull \\hbox \(([\d.]+)pt too wide\)")
PAPERS = ("a4paper", "letterpaper")


def test_labels_and_long_cells_wrap_while_numbers_are_set_whole_under_headers_broken_to_their_width():
    columns = ["Configuration", "Baseline acc. (%)", "Note", "p"]
    rows = [
        [
            "Std. h=512 [the k top experts (the literal rule)]",
            "10.16 ± 1.10",
            "at or near chance: did not learn",
            "0.5",
        ],
        ["DW h=128", "18.75 ± 6.63", "", "0.25"],
    ]
    layout = tex_columns(columns, rows)
    # the label (49 characters) and the note (32) share the free width as 49 : 32, their \hsize adding up to 2
    assert layout.spec == (
        r">{\raggedright\arraybackslash\hsize=1.21\hsize}X"
        "r"
        r">{\raggedright\arraybackslash\hsize=0.79\hsize}X"
        "r"
    )
    # a header no wider than the column's widest cell, "18.75 ± 6.63" (12 characters)
    assert layout.headers == [["Configuration"], ["Baseline", "acc. (%)"], ["Note"], ["p"]]


def test_a_table_of_short_cells_wraps_its_label_column_alone():
    layout = tex_columns(["Comparison", "FLOPs ratio (ours)"], [["Std. h=128", "84.6%"]])
    assert layout.spec == r">{\raggedright\arraybackslash\hsize=1.00\hsize}Xr"
    assert layout.headers == [["Comparison"], ["FLOPs", "ratio", "(ours)"]]  # no cell is wider than "84.6%"


# Table 5's row table at smoke, as `repro table5` writes it: two wrapping columns (the label and the note) and six set
# whole. Its comment said "Each table is as wide as the line", but on a portrait page's line (article: 345 pt) the six
# whole columns leave the label and the note a few letters each (found reading the .tex in an evaluator's walk-through).
WIDE = (
    ["Row", "Dataset", "Accuracy (%)", "Chance (%)", "Seeds", "Note", "Run records", "Accuracy, paper"],
    [["ResNet-18 + MoEConv2d, k=2", "imagenet", "3.12 ± 4.42", "3.12", "2", "at or near chance: did not learn",
      "38681cc8, 3b21e764", ""]],
)  # fmt: skip


def test_a_layout_estimates_the_line_its_columns_need():
    layout = tex_columns(*WIDE)
    # whole columns: imagenet 8, "3.12 ± 4.42" 11, "Chance" 6, "Seeds" 5, the two hashes 18, "Accuracy," 9 = 57
    # characters; two wrapping columns at 12 characters each at the least; 4.5 pt a character at \small, and 8 pt of
    # \tabcolsep around each of the eight columns: (57 + 24) * 4.5 + 64 = 428.5 pt
    assert layout.min_width_pt == pytest.approx(428.5)
    assert tex_columns(["Comparison", "FLOPs ratio (ours)"], [["Std. h=128", "84.6%"]]).min_width_pt == pytest.approx(
        (12 + 6) * 4.5 + 16  # "(ours)" is the widest line of the header broken to "84.6%"'s width
    )


def test_a_table_wider_than_a_portrait_line_says_so_and_where_to_set_it():
    from types import SimpleNamespace

    from repro.report.render import render

    def table(columns, rows, key):
        return SimpleNamespace(title="A table", key=key, columns=columns, rows=rows, groups={})

    tex = render(
        "tables.tex.j2",
        manifest=SimpleNamespace(id="table5", title="Backbone MoE"),
        tables=[table(*WIDE, "rows"), table(["Comparison", "FLOPs ratio (ours)"], [["Std. h=128", "84.6%"]], "flops")],
        trained=SimpleNamespace(sentence=lambda: "Profile smoke."),
    )
    wide, narrow = tex.split(r"\end{table}")[:2]
    assert (
        "% This table needs a line of about 15.1 cm, more than a portrait page's text (article: 12.1 cm): set it in "
        "landscape (pdflscape) or a two-column table*, as table5_standalone.tex does (landscape A4)"
    ) in wide
    assert "needs a line" not in narrow


def _pdflatex() -> None:
    if shutil.which("pdflatex") is None:
        if os.environ.get("REPRO_REQUIRE_LATEX"):
            pytest.fail("pdflatex is required (REPRO_REQUIRE_LATEX is set) but not installed")
        pytest.skip("pdflatex not installed")


def overfull(tex: str, paper: str, folder) -> list[float]:
    """How far each overfull line of the document, set on `paper`, sticks out (points); it must compile."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = folder / "doc.tex"
    doc.write_text(tex.replace("a4paper", paper))
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    return [float(x) for x in OVERFULL.findall((folder / "doc.log").read_text(errors="replace"))]


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    """Every table verify-all runs at smoke, with its FLOPs counted and made-up accuracies (test_figures.fake_result):
    its tables as the smoke profile writes them, without training."""
    from test_figures import fake_result

    results = tmp_path_factory.mktemp("results")
    manifests = [m for m in load_all() if "smoke" in m.profiles]
    for m in manifests:
        result = fake_result(m, "smoke")
        plan = build_plan(m, "smoke")
        if plan.flop_rows:
            flops = measure_flops(plan, Context("smoke", results))
            result = dataclasses.replace(result, measured=Measured.combine([result.measured, flops]))
        result = dataclasses.replace(
            result,
            profile_settings=m.profiles["smoke"].for_manifest(m.id, m.seeds),
            provenance={
                "git_commit": "0123456789abcdef0123456789abcdef01234567+dirty",
                "time": "2026-01-01T00:00:00+00:00",
                "packages": {},
                "device": "cpu: a processor, 1 intra-op thread(s)",
            },
        )
        result = decide_table(m, result)
        save_result(result, results)
        write_manifest_outputs(m, result, results)
    return results, manifests


@pytest.mark.slow  # 24 pdflatex runs
def test_every_standalone_table_fits_the_page(smoke_results, tmp_path):
    _pdflatex()
    results, manifests = smoke_results
    docs = sorted((results / "smoke").glob("*/*_standalone.tex"))
    assert len(docs) == len(manifests) == 12
    wide = {
        (doc.name, paper): widths
        for doc in docs
        for paper in PAPERS
        if (widths := [w for w in overfull(doc.read_text(), paper, tmp_path / paper) if w > FIT_PT])
    }
    assert not wide, wide


@pytest.mark.slow  # 4 pdflatex runs of 15-22 pages
def test_the_artifact_appendix_fits_the_page_with_and_without_results(smoke_results, tmp_path):
    from repro.report.appendix import appendix_inputs, build_appendix, render

    _pdflatex()
    results, manifests = smoke_results
    entries = decided_results(results, "smoke", manifests)
    with_results = next(
        p for p in write_appendix(entries, results, "smoke", plan_all(manifests)) if p.suffix == ".tex"
    ).read_text()
    every = load_all()
    full = render(
        build_appendix([(m, None) for m in every], "full", appendix_inputs(plan_all(every)), with_results=False), "tex"
    )
    for name, tex in (("smoke", with_results), ("full", full)):
        for paper in PAPERS:
            widths = overfull(tex, paper, tmp_path / name / paper)
            assert max(widths, default=0) <= FIT_PT, (name, paper, widths)
