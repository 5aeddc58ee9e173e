"""repro.report.appendix and `repro appendix`: one row per claim of every manifest, the LaTeX compiles, and with
results each row shows the verdict there beside the cost at the paper's protocol."""

import dataclasses
import os
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from checkout import MANIFESTS, REPO_ROOT
from repro.claims import decide_table, decided_results
from repro.cli import app, manifest_ids
from repro.cost.claim_cost import claim_cost, claim_tables
from repro.cost.estimate import CostModel
from repro.cost.fit import fit_folder
from repro.cost.plan import rows_read
from repro.plan.manifest import find_manifest, load_all
from repro.plan.table_plan import plan_all
from repro.report.appendix import appendix_inputs, build_appendix, render, write_appendix
from repro.report.appendix.claim_rows import BADGES, expected_result
from repro.report.appendix.container import read_compose, read_container, read_dockerfile
from repro.core.schema import SchemaError
from repro.results.measurements import save_result
from repro.spec.readings import readings_by_id

runner = CliRunner()
CELL = re.compile(r"(?<!\\)\|")


def claim_table(md: str) -> dict[str, list[str]]:
    """The claims table of a Markdown appendix: claim key -> its cells, in order (the header row under "Claim")."""
    lines = md[md.index("| Claim |") :].splitlines()
    header = [c.strip() for c in CELL.split(lines[0])[1:-1]]
    rows = {}
    for line in lines[2:]:
        if not line.startswith("| `"):
            break
        cells = [c.strip() for c in CELL.split(line)[1:-1]]
        assert len(cells) == len(header), line
        key = cells[0].split("`")[1]
        assert key not in rows, f"{key} has two rows"
        rows[key] = dict(zip(header, cells))
    return rows


@pytest.fixture(scope="module")
def manifests():
    return load_all()


@pytest.fixture(scope="module")
def inputs(manifests):
    return appendix_inputs(plan_all(manifests))  # the caches only: no model is built here


def _at(inputs, profile="full"):
    """Each table's plan at `profile`, by id, as the appendix reads them."""
    return {p.id: p for p in inputs.plans.at(profile)}


def test_every_claim_of_every_manifest_has_one_row_in_order(manifests, inputs):
    md = render(build_appendix([(m, None) for m in manifests], "full", inputs, with_results=False), "md")
    rows = claim_table(md)
    assert list(rows) == [f"{m.id}/{c.id}" for m in manifests for c in m.claims]
    assert len(rows) == sum(len(m.claims) for m in manifests) > 0  # 88 when this was written; never a constant
    t2 = rows["table2/c100_dw072_gap"]
    assert t2["Decided by"].startswith("`repro table2 --profile full` on a GPU")
    assert t2["Badge at full"] == BADGES["paper"] == "Results Reproduced"
    assert "Verdict at full" not in t2  # no results folder: nothing measured to show


def test_a_claim_added_to_a_copy_of_a_manifest_gains_its_row(tmp_path):
    folder = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, folder)  # all of them: a finding may span tables
    with open(folder / "table2.toml", "a") as f:
        f.write(
            '\n[[claims]]\nid = "added_dense_above_moe"\nstatement = "A claim added to the copy"\n'
            'section = "4.3"\nscope = "empirical"\nrule = "row_above"\nrow = "std_dense"\nbaseline = "std_moe"\n'
        )
    out = tmp_path / "appendix.md"
    result = runner.invoke(
        app,
        [
            "appendix",
            "--manifests",
            str(folder),
            "--profile",
            "full",
            "--results-dir",
            str(tmp_path / "results"),
            "--out",
            str(out),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    rows = claim_table(out.read_text())
    assert len(rows) == sum(len(m.claims) for m in load_all(folder)) == sum(len(m.claims) for m in load_all()) + 1
    added = rows["table2/added_dense_above_moe"]
    assert added["Finding (section)"] == "A claim added to the copy (Section 4.3)"
    assert added["Rule and expected result"].startswith("`row_above`: one row's per-seed metric exceeds")
    assert "claims, profile full" in result.output


def test_the_latex_compiles_standalone_with_one_row_per_claim(manifests, inputs, tmp_path):
    if shutil.which("pdflatex") is None:
        if os.environ.get("REPRO_REQUIRE_LATEX"):
            pytest.fail("pdflatex is required (REPRO_REQUIRE_LATEX is set) but not installed")
        pytest.skip("pdflatex not installed")
    tex = render(build_appendix([(m, None) for m in manifests], "full", inputs, with_results=False), "tex")
    body = tex[tex.index(r"\endfoot") : tex.index(r"\end{longtable}", tex.index(r"\endfoot"))]
    assert body.count(r" \\" + "\n") == sum(len(m.claims) for m in manifests)  # one row per claim
    assert r"\usepackage{array,booktabs,longtable,url}" in tex and r"\toprule" in tex
    doc = tmp_path / "artifact-appendix.tex"
    doc.write_text(tex)
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    assert (tmp_path / "artifact-appendix.pdf").stat().st_size > 10_000


def test_with_results_each_row_shows_the_verdict_there_beside_the_full_profile_cost(tmp_path):
    from test_figures import fake_result

    results = tmp_path / "results"
    chosen = [find_manifest(i) for i in ("table1", "table2", "table6")]
    for m in chosen[:2]:  # table6 is not run into the folder
        result = dataclasses.replace(
            fake_result(m, "functional"),
            provenance={"device_type": "cpu"},
            profile_settings=m.profiles["functional"].for_manifest(m.id, m.seeds),
        )
        save_result(decide_table(m, result), results)
    entries = decided_results(results, "functional", chosen)
    plans = plan_all(chosen)
    folder = fit_folder(CostModel(cached_only=True), results, plans)  # as the report's command fits it, once
    md_path, tex_path = write_appendix(entries, results, "functional", plans, folder)
    assert (md_path.name, tex_path.name) == ("artifact-appendix.md", "artifact-appendix.tex")
    assert md_path.parent == tex_path.parent == results / "functional"
    rows = claim_table(md_path.read_text())
    inputs = appendix_inputs(plans, folder)
    for m, result in entries:
        for c in m.claims:
            row = rows[f"{m.id}/{c.id}"]
            full = claim_cost(plans.of(m.id, "full"), c, inputs.model, inputs.rates, _at(inputs)).text()
            assert row["Cost at full"] == full and ("GPU-h" in full or "no training" in full)
            if result is None:
                assert row["Verdict at functional"] == "**not run**"
                assert row["Run records"] == "the table was not run into this folder"
                continue
            verdict = next(v for v in result.verdicts if v.claim == c.id)
            assert row["Verdict at functional"] == f"**{verdict.status}**"
            hashes = [r.hash for row_id in rows_read(m, c) for r in result.measured.runs(row_id)]
            assert hashes and all(f"`{h}`" in row["Run records"] for h in hashes)


def test_a_finding_that_spans_tables_is_decided_and_priced_with_every_table_it_reads(manifests, inputs):
    rows = claim_table(render(build_appendix([(m, None) for m in manifests], "full", inputs, False), "md"))
    by_id = {m.id: m for m in manifests}
    t3 = by_id["table3"]
    claim = next(c for c in t3.claims if c.id == "fig2_depthwise_gap_rises_with_classes")  # CIFAR-10, -100, Tiny
    assert rows["table3/fig2_depthwise_gap_rises_with_classes"]["Decided by"].startswith(
        "`repro run table3 headline_cifar10 table2 --profile full`"
    )
    full = _at(inputs)
    tables = claim_tables(full["table3"], claim, full)
    assert [t.id for t in tables] == ["table3", "headline_cifar10", "table2"]
    assert [sorted(r.id for r in t.manifest.rows) for t in tables[1:]] == [["dw072_dense", "dw072_moe"]] * 2
    alone = claim_cost(full["table3"], claim, inputs.model, inputs.rates)
    spanning = claim_cost(full["table3"], claim, inputs.model, inputs.rates, full)
    own_seeds, c10_seeds, c100_seeds = (
        by_id[i].profiles["full"].seeds for i in ("table3", "headline_cifar10", "table2")
    )
    assert alone.runs == 2 * own_seeds and spanning.runs == alone.runs + 2 * c10_seeds + 2 * c100_seeds
    assert rows["table3/fig2_depthwise_gap_rises_with_classes"]["Cost at full"] == spanning.text()


def test_the_badge_follows_what_the_profile_is_evidence_of(manifests, inputs):
    rows = claim_table(render(build_appendix([(m, None) for m in manifests], "functional", inputs, False), "md"))
    t1 = find_manifest("table1")
    left_out = t1.profiles["functional"].left_out_by("table1", "std_h2048_moe")
    assert left_out == "its exclude list"  # the functional profile trains no h = 2048 row
    assert rows["table1/t1_high_rho_standard_flips_positive"]["Badge at functional"] == (
        "none: its rows are not trained at functional"
    )
    assert rows["table1/t1_high_rho_standard_flips_positive"]["Cost at functional"] == (
        "its rows are not trained at functional"
    )
    assert rows["table1/t1_sign_follows_rho"]["Badge at functional"] == "Functional"
    assert rows["table1/t1_sign_follows_rho"]["Decided by"].startswith("`repro table1 --profile full`")
    assert rows["table6/rho_r18_head"]["Decided by"].startswith("`repro table6 --profile functional` on the CPU")


def test_the_expected_result_is_the_rule_and_the_papers_value_at_its_printed_precision():
    t6 = find_manifest("table6")
    claim = next(c for c in t6.claims if c.id == "rho_r18_head")
    assert expected_result(t6, claim) == (
        "a measured value equals the reported one within its printed precision; "
        "paper: r18_head.rho = 0.06%, to ±0.005% (as printed) (Section 4.5)"
    )  # 0.06%: half a unit of 0.01
    t2 = find_manifest("table2")
    gap = next(c for c in t2.claims if c.id == "c100_dw072_gap")
    assert expected_result(t2, gap).endswith("settings: alpha 0.05")


def test_a_claim_that_trains_nothing_lists_no_reading_that_changes_only_training(manifests, inputs):
    rows = claim_table(render(build_appendix([(m, None) for m in manifests], "full", inputs, False), "md"))
    readings = readings_by_id()
    full = _at(inputs)
    counted = 0
    for m in manifests:
        for c in m.claims:
            listed = rows[f"{m.id}/{c.id}"]["Readings that can change it"].split("; ")[0]
            ids = [] if listed == "none" else listed.split(", ")
            assert set(ids) <= {r.id for t in claim_tables(full[m.id], c, full) for r in t.manifest.readings}
            trains = rows_read(m, c) and c.scope != "analytic"  # an analytic claim reads its rows' counts
            if not trains and not any(readings[i].applies_to_claim(m.id, c.id) for i in ids):
                counted += 1
                assert not [i for i in ids if all(readings[i].training_only(a) for a in readings[i].alternatives)]
    assert counted > 0


def test_an_analytic_claim_on_trained_rows_is_priced_and_listed_as_counting_them(manifests, inputs):
    """table3/tiny_flops_reduction_negligible reads a comparison's FLOP reduction: its rows train for other claims,
    and the appendix priced it at their training (2.8 GPU-h, 10 runs) and listed training-only readings."""
    rows = claim_table(render(build_appendix([(m, None) for m in manifests], "full", inputs, False), "md"))
    table3 = next(m for m in manifests if m.id == "table3")
    claim = next(c for c in table3.claims if c.id == "tiny_flops_reduction_negligible")
    assert claim.scope == "analytic" and rows_read(table3, claim)  # it reads trained rows
    row = rows["table3/tiny_flops_reduction_negligible"]
    assert "no training" in row["Cost at full"] and row["Decided by"].endswith("on the CPU (FLOP counts)")
    readings = readings_by_id()
    listed = row["Readings that can change it"].split("; ")[0].split(", ")
    assert listed and not [i for i in listed if all(readings[i].training_only(a) for a in readings[i].alternatives)]


def test_every_command_the_appendix_names_is_a_command_of_repro(manifests, inputs):
    md = render(build_appendix([(m, None) for m in manifests], "functional", inputs, False), "md")
    commands = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    named = set(re.findall(r"`repro ([\w-]+)", md))
    assert named and named <= commands | set(manifest_ids()), named - commands  # `repro <id>` is `repro run <id>`
    assert {m.id for m in manifests} <= named  # every table's command, in its claims' rows


def test_the_container_files_are_read_as_data(tmp_path):
    container = read_container(REPO_ROOT)
    gpu = container.gpu_compose
    assert (gpu.file, gpu.service, gpu.gpus.name) == ("docker-compose.yml", "repro", "REPRO_GPUS")
    assert [c.file for c in container.cpu_overrides] == ["docker-compose.cpu.yml"]
    assert container.cpu_overrides[0].default("REPRO_PROFILE") == "" and gpu.default("REPRO_PROFILE") == "smoke"
    assert container.install == ("-e", ".[dev]")  # what the Dockerfile installs, less how
    compose = tmp_path / "docker-compose.x.yml"
    compose.write_text(
        "services:\n  svc:\n    image: ${IMG:-a:1}\n    deploy:\n      resources:\n"
        "        reservations:\n"
        "          devices:\n            - capabilities: [gpu]\n              count: ${N:-4}\n"
    )
    read = read_compose(compose, tmp_path)
    assert (read.image.name, read.image.default, read.gpus.default, read.drops_gpus) == ("IMG", "a:1", "4", False)
    (tmp_path / "Dockerfile").write_text("FROM python:3.11\nRUN pip install .\n")
    with pytest.raises(SchemaError, match=r"(?s)Dockerfile.*ARG BASE_IMAGE=<image>"):
        read_dockerfile(tmp_path / "Dockerfile", tmp_path)


def test_outside_a_checkout_the_appendix_is_written_from_what_is_installed(manifests, monkeypatch):
    """An installed wheel has no Dockerfile, compose files, pyproject.toml or .git: the package is described from
    its installed metadata, the container as not here, the commit as not a git checkout; nothing fails."""
    from repro.report.appendix.container import NOT_HERE, read_package
    from repro.results import provenance

    monkeypatch.setattr(provenance, "source_checkout", lambda: None)
    monkeypatch.setattr(provenance, "git_commit", provenance.git_commit.__wrapped__)  # not the checkout's, cached
    assert provenance.git_commit() == "not a git checkout"
    inputs = appendix_inputs(plan_all(manifests))
    assert NOT_HERE in inputs.container.base_image and inputs.container.gpu_compose is None
    declared = read_package(REPO_ROOT)
    assert (inputs.package.name, inputs.package.python) == (declared.name, declared.python)
    assert "torch>=2.4" in inputs.package.dependencies
    assert not any("pytest" in d for d in inputs.package.dependencies)  # the extras are not the package's
    text = render(build_appendix([(m, None) for m in manifests], "smoke", inputs, False), "md")
    assert "commit not a git checkout" in text and NOT_HERE in text and "docker compose" not in text


def test_bad_options_are_refused_before_any_work(tmp_path):
    result = runner.invoke(app, ["appendix", "--format", "pdf", "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "--format: expected md or tex, got 'pdf'" in result.output
    result = runner.invoke(app, ["appendix", "--profile", "ful", "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and "did you mean 'full'" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["appendix", "--manifests", str(empty), "--results-dir", str(tmp_path)])
    assert result.exit_code == 2 and f"{empty}: 1 problem(s): - no manifest (<id>.toml) in it" in " ".join(
        result.output.split()
    ), result.output
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]
