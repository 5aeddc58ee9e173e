"""One set of claim counts (repro.claims.headline.claim_counts): the terminal's headline, the report, `repro plan`
and the Artifact Appendix print the same line, computed once. They disagreed: the report counted 51 empirical, 12
GPU-scoped and 13 analytic claims, the terminal and the plan "53 claims", the appendix "14 analytic, 53 empirical,
13 gpu", folding self-tests and the explainer's claims in."""

import re
import shutil

import pytest
from typer.testing import CliRunner

from checkout import MANIFESTS
from repro.claims.headline import claim_counts, count_verdicts
from repro.cli import app
from repro.plan.manifest import load_all
from repro.plan.table_plan import plan_all
from repro.report.appendix import appendix_inputs, build_appendix, render
from repro.report.summary import summary_lines

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_counts_split_self_tests_the_explainer_predictions_and_derived_claims_apart():
    counts = claim_counts(load_all())
    g = counts.groups
    assert counts.total == sum(len(m.claims) for m in load_all())
    # table7's two 2x bounds are this artifact's predictions, not the paper's GPU claims; four claims follow from others
    assert (g["prediction"], g["derived"], g["self-test"], g["explainer"]) == (2, 4, 2, 4)
    line = counts.line()
    assert line == (
        f"Claims: {g['analytic'] + g['property']} analytic, {g['empirical']} empirical, {g['gpu']} "
        "GPU-scoped; apart: 2 self-tests, 4 the explainer's, 2 predictions, 4 derived, 5 extension"
    )


def test_the_report_the_plan_and_the_appendix_print_one_line():
    manifests = load_all()
    line = claim_counts(manifests).line()
    paper = [(m, None) for m in manifests if not m.is_extension()]
    beyond = [(m, None) for m in manifests if m.is_extension()]
    assert line in summary_lines(paper, None, {}, beyond)["lines"]  # the report, and verify-all's headline
    plan = runner.invoke(app, ["plan", "--gpu-hours", "1"], env={"COLUMNS": "400"})
    assert plan.exit_code == 0, plan.output
    assert line in _flat(plan.output)
    assert "53 claims" not in plan.output
    appendix = render(
        build_appendix([(m, None) for m in manifests], "full", appendix_inputs(plan_all(manifests)), False), "md"
    )
    assert _flat(appendix).count(line) >= 2  # the abstract and the evaluation
    assert not re.search(r"\d+ analytic, \d+ empirical, \d+ extension, \d+ gpu", appendix)


def test_the_verdict_counts_group_as_the_claim_counts_do():
    from test_figures import fake_result

    from repro.claims import decide_table

    manifests = [m for m in load_all() if m.id in ("table1", "table6", "table7", "table8")]
    verdicts = [v for m in manifests for v in decide_table(m, fake_result(m)).verdicts]
    by_group = {g: sum(c.values()) for g, c in count_verdicts(verdicts).items()}
    assert by_group == claim_counts(manifests).groups


@pytest.mark.slow
def test_verify_all_prints_the_line_in_its_headline_and_its_report(results_dir, tmp_path, monkeypatch):
    folder = tmp_path / "manifests"  # Table 6 alone: analytic, nothing trains
    folder.mkdir()
    shutil.copy(MANIFESTS / "table6.toml", folder)
    monkeypatch.setenv("REPRO_MANIFESTS", str(folder))
    line = claim_counts(load_all(folder)).line()
    result = runner.invoke(app, ["verify-all", "--results-dir", str(results_dir)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    headline = _flat(result.output.split("summary")[-1])
    assert line in headline
    assert line in _flat((results_dir / "smoke" / "report.md").read_text())


def test_a_derived_claim_must_name_claims_that_exist():
    import copy

    from repro.claims.across import check_across
    from repro.core.schema import SchemaError, read_toml
    from repro.plan.manifest import parse_manifest

    doc = copy.deepcopy(read_toml(MANIFESTS / "table1.toml"))
    claim = next(c for c in doc["claims"] if c["id"] == "t1_sign_follows_rho")
    claim["derived_from"] = ["t1_gap_monotonic", "t1_sign_follows_rho"]
    with pytest.raises(SchemaError) as exc:
        parse_manifest(doc, "table1.toml")
    problems = " ".join(exc.value.problems)
    assert "'t1_gap_monotonic' is no other claim of table1 (did you mean 't1_gap_monotonic_in_rho'?)" in problems
    assert "'t1_sign_follows_rho' is no other claim of table1" in problems
    claim["derived_from"] = ["table4:in_r18_head_loses_badly"]
    table1 = parse_manifest(doc, "table1.toml")
    others = [m for m in load_all() if m.id != "table1"]
    problems = check_across([table1, *others])["table1"]
    assert any("'table4:in_r18_head_loses_badly' names no claim" in p for p in problems)
