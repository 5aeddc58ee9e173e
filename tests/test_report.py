"""Rendered tables: Markdown beside the paper's values, LaTeX that compiles, escaping."""

import json
import os
import shutil
import subprocess

import pytest

from repro.plan.manifest import find_manifest
from repro.pipeline import Context, run_manifest
from repro.plan.table_plan import build_plan
from repro.report.render import latex_escape, md_escape, write_manifest_outputs


@pytest.fixture(scope="module")
def table6(tmp_path_factory):
    manifest = find_manifest("table6")
    out = tmp_path_factory.mktemp("results")
    result = run_manifest(build_plan(manifest, "smoke"), Context("smoke", out)).result
    files = write_manifest_outputs(manifest, result, out)
    return manifest, result, {f.name: f for f in files}


def test_latex_escape_covers_specials_and_symbols():
    assert latex_escape("50% of a_b & c#1 {x} ~ ^ \\") == (
        r"50\% of a\_b \& c\#1 \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    )
    assert latex_escape("ρ ± 0.1 × 2") == r"$\rho$ $\pm$ 0.1 $\times$ 2"
    with pytest.raises(ValueError, match="no LaTeX mapping"):
        latex_escape("温度")
    assert latex_escape("/data/josé_1", strict=False) == r"/data/jos?\_1"  # a path from outside: never refused


def test_markdown_escapes_pipes():
    assert md_escape("a|b\nc") == r"a\|b c"


# the fixture runs Table 6: every row's FLOPs counted three ways, ResNet-18 and MobileNet-V2 at 224 px
@pytest.mark.slow
def test_markdown_table_shows_paper_values_beside_ours(table6):
    _, result, files = table6
    md = files["table6.md"].read_text()
    assert "| ρ (ours) |" in md and "| ρ (paper) |" in md
    r18 = next(line for line in md.splitlines() if line.startswith("| ImageNet-1K, ResNet-18, head-only"))
    assert r18.rstrip().endswith("| 0.06% | - |") and "0.059%" in r18  # the text states its gap negative
    cifar_std = next(line for line in md.splitlines() if line.startswith("| CIFAR-10, standard backbone"))
    assert cifar_std.rstrip().endswith("|  | ≤0 |")  # the text gives no rho (the cell stays empty), a gap not positive
    claims = files["claims.md"].read_text()
    assert "`rho_r18_head`" in claims and "**reproduced**" in claims


@pytest.mark.slow  # Table 6, as above, then pdflatex
def test_latex_tables_compile(table6, tmp_path):
    if shutil.which("pdflatex") is None:
        if os.environ.get("REPRO_REQUIRE_LATEX"):
            pytest.fail("pdflatex is required (REPRO_REQUIRE_LATEX is set) but not installed")
        pytest.skip("pdflatex not installed")
    _, _, files = table6
    doc = files["table6_standalone.tex"]  # compiled as written, from another folder: it needs no other file
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", str(doc)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "table6_standalone.pdf").stat().st_size > 1000
    assert files["table6.tex"].read_text().split("\n", 2)[2] in doc.read_text()  # the same tables


def test_a_tables_provenance_names_the_threads_its_runs_used_not_this_processs(tmp_path, two_threads):
    """The report said 2 intra-op threads while every record said 1 (the profile's)."""
    manifest = find_manifest("table6")
    result = run_manifest(build_plan(manifest, "smoke"), Context("smoke", tmp_path)).result
    assert manifest.profiles["smoke"].run_threads() == 1
    assert result.provenance["device"].endswith(", 1 intra-op thread(s)"), result.provenance["device"]


def test_report_names_a_run_record_edited_after_its_table_was_written(tmp_path, monkeypatch):
    """The report renders results.json; a record it was written from and edited since is named, with why, and
    the report is still written (as export leaves it out and trace marks it)."""
    from fake_records import config, record, write_manifest_t, write_record, write_result
    from typer.testing import CliRunner

    from repro.cli import app
    from repro.results.provenance import provenance

    monkeypatch.setenv("REPRO_MANIFESTS", str(write_manifest_t(tmp_path)))
    results = tmp_path / "results"
    runs = [record(config(seed=s), accuracy=0.5 + 0.1 * s) for s in range(2)]
    paths = [write_record(results, config(seed=r["seed"]), accuracy=r["metrics"]["accuracy"]) for r in runs]
    write_result(results, "t", {"dense": runs}, provenance=provenance())  # as a table run writes it
    invoke = CliRunner().invoke
    clean = invoke(app, ["report", "--results-dir", str(results)], env={"COLUMNS": "200"})
    assert clean.exit_code == 0, clean.output
    assert "unusable" not in clean.output

    edited = json.loads(paths[1].read_text())
    edited["metrics"]["accuracy"] = 0.99  # its digest no longer matches
    paths[1].write_text(json.dumps(edited))
    done = invoke(app, ["report", "--results-dir", str(results)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("1 unusable run record(s) in the folder")))
    assert lines[at + 1] == f"  {paths[1]}: its digest does not match its content (edited after it was written)"
    assert str(paths[0]) not in done.output and (results / "smoke" / "report.md").is_file()
