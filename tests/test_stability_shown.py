"""Each decided empirical verdict's stability (repro.claims.stability) is stored with it and shown beside it: the
claims checklist (report.md, claims.md), the terminal's checklist, the Artifact Appendix and the verdicts frame;
a verdict without one (not run, inconclusive, analytic) shows none, empty rather than 0."""

import dataclasses

import pytest

from repro.claims import decide_table
from repro.plan.manifest import find_manifest, with_profiles
from repro.plan.table_plan import plan_all
from repro.results.measurements import save_result
from repro.spec.profiles import Profile, shipped_profiles

PAPER = "paper_check"  # a profile of the paper's data: its empirical claims are decided


@pytest.fixture(scope="module")
def decided():
    from test_figures import fake_result

    manifest = with_profiles(find_manifest("table2"), {**shipped_profiles(), PAPER: Profile("paper data", "paper")})
    from repro.claims.stats import paired_gap

    result = fake_result(manifest, PAPER)
    wide, dense = {0: 0.60, 1: 0.61, 2: 0.605}, {0: 0.50, 1: 0.505, 2: 0.50}  # clearly above: decided
    moe, twin = {0: 0.52, 1: 0.525, 2: 0.522}, {0: 0.50, 1: 0.502, 2: 0.501}
    measured = result.measured.with_metrics(
        {
            **{f"rows.{r.id}.chance": 0.01 for r in manifest.rows},
            "rows.dw2_moe.accuracy": wide,
            "rows.std_dense.accuracy": dense,
            "rows.dw072_moe.accuracy": moe,
            "rows.dw072_dense.accuracy": twin,
            "comparisons.dw072.gap": paired_gap(moe, twin).to_dict(),
        }
    )
    result = dataclasses.replace(
        result,
        measured=measured,
        provenance={
            "device_type": "cuda",
            "git_commit": "0" * 40,
            "device": "cuda: test",
            "time": "now",
            "packages": {},
        },
        profile_settings=manifest.profiles[PAPER],
    )
    return manifest, decide_table(manifest, result)


def test_a_decided_empirical_verdict_carries_its_stability_and_the_others_none(decided):
    _, result = decided
    by_id = {v.claim: v for v in result.verdicts}
    wide, gap = by_id["c100_wide_dw_moe_beats_standard_dense"], by_id["c100_dw072_gap"]
    for v in result.verdicts:
        if v.status in ("reproduced", "not reproduced"):
            assert 0.0 <= v.stability <= 1.0, v.claim
        else:
            assert v.stability is None and v.stability_text == "", v.claim
    assert any(v.stability is not None for v in (wide, gap))


def test_the_checklists_the_terminal_the_appendix_and_the_frame_show_it(decided, tmp_path):
    from io import StringIO

    from rich.console import Console

    from repro.cli.checklist import verdicts_grid
    from repro.cli.common import print_grid
    from repro.report.appendix import appendix_inputs, build_appendix, render
    from repro.report.render import render_claims_md, render_report
    from repro.results import verdicts

    manifest, result = decided
    v = next(v for v in result.verdicts if v.stability is not None)
    claims_md = render_claims_md(manifest, result)
    row = next(line for line in claims_md.splitlines() if f"(`{v.claim}`)" in line)
    assert f"**{v.status_text}** | {v.stability_text} |" in row
    report = render_report([(manifest, result)], {"lines": [], "per_table": []})
    row = next(line for line in report.splitlines() if f"(`{v.claim}`)" in line and line.startswith("| table2 |"))
    assert f"| {v.stability_text} |" in row and "| Stability |" in report
    _, grid = verdicts_grid([("table2", result.verdicts)], evidence=False)
    screen = Console(file=StringIO(), width=80)
    print_grid(grid, out=screen)
    assert f"stability {v.stability:.2f}" in screen.file.getvalue()
    appendix = render(build_appendix([(manifest, result)], PAPER, appendix_inputs(plan_all([manifest])), True), "md")
    assert f"**{v.status_text}** (stability {v.stability_text})" in appendix
    save_result(result, tmp_path)
    frame = verdicts(tmp_path).set_index("claim")
    assert frame.loc[v.claim, "stability"] == pytest.approx(v.stability)
    undecided = [u.claim for u in result.verdicts if u.stability is None]
    assert frame.loc[undecided, "stability"].isna().all()  # empty, not 0


def test_repro_export_writes_the_stability_into_verdicts_csv(decided, tmp_path):
    """What an evaluator opens in a notebook: `repro export` re-decides each table's verdicts from its result
    (repro.results.frames), and its verdicts.csv carries the stability beside each decided verdict."""
    import pandas as pd
    from typer.testing import CliRunner

    from repro.cli import app

    from fake_records import config, write_record

    manifest, result = decided
    save_result(result, tmp_path / "results")
    write_record(tmp_path / "results", config(seed=0))  # export reads a folder that holds runs
    out = tmp_path / "export"
    done = CliRunner().invoke(
        app, ["export", "--results-dir", str(tmp_path / "results"), "--out", str(out)], env={"COLUMNS": "80"}
    )
    assert done.exit_code == 0, done.output
    frame = pd.read_csv(out / "verdicts.csv").set_index("claim")
    stable = {v.claim: v.stability for v in result.verdicts if v.stability is not None}
    assert stable and frame.loc[list(stable), "stability"].tolist() == pytest.approx(list(stable.values()))
    assert frame.loc[[v.claim for v in result.verdicts if v.stability is None], "stability"].isna().all()


def test_verify_all_lists_an_unstable_reproduced_verdict_instead_of_counting_it_with_the_rest():
    """verify-all's checklist without -v lists what did not reproduce and counts the rest "Not listed: N
    reproduced": a reproduced verdict that fewer than 80% of its seeds' resamples give was one of N, read as
    solid as the others (an evaluator's walk-through of the claims checklist)."""
    from repro.cli.checklist import verdicts_grid
    from repro.results.measurements import Verdict

    def verdict(claim: str, status: str, stability: float) -> Verdict:
        return Verdict(claim, "a gap", "4.1", "empirical", status, "gap", stability=stability)  # type: ignore[arg-type]

    solid, shaky = verdict("solid_gap", "reproduced", 0.97), verdict("shaky_gap", "reproduced", 0.55)
    failed = verdict("failed_gap", "not reproduced", 0.9)
    lines, grid = verdicts_grid([("t", [solid, shaky, failed])], evidence=False, quiet=True)
    listed = [str(row[0]) for row in grid.cells]
    assert listed == ["shaky_gap", "failed_gap"]
    assert "stability 0.55: unstable" in str(grid.cells[0][1])
    assert [str(line) for line in lines] == ["Not listed: 1 reproduced (-v lists them, each with its evidence)"]


def test_the_headline_counts_the_unstable_verdicts_beside_their_verdict(decided):
    """The report's headline said 'Empirical (training) claims (2): reproduced 2' whether or not the seeds' resamples
    gave those verdicts: the count of unstable ones stands beside each verdict that has some."""
    from repro.report.summary import summary_lines

    manifest, result = decided
    shaky = {v.claim for v in result.verdicts if v.stability is not None}
    assert shaky
    verdicts = [dataclasses.replace(v, stability=0.5) if v.claim in shaky else v for v in result.verdicts]
    line = next(
        line
        for line in summary_lines([(manifest, dataclasses.replace(result, verdicts=verdicts))], None, {})["lines"]
        if line.startswith("Empirical")
    )
    statuses = {v.status for v in verdicts if v.claim in shaky}
    for status in statuses:
        n = sum(1 for v in verdicts if v.claim in shaky and v.status == status)
        assert f"{status} {n} ({n} unstable under their seeds)" in line, line
    solid = next(
        line for line in summary_lines([(manifest, result)], None, {})["lines"] if line.startswith("Empirical")
    )
    assert "unstable" not in solid  # the fixture's gaps are clear: every resample decides them alike


def test_the_appendix_gives_a_results_badge_only_where_the_verdict_earns_it(decided):
    """With results, the Artifact Appendix put "Results Reproduced" in the badge column of every claim at a profile
    of the paper's data, beside a verdict of "not reproduced" as beside a reproduced one that its seeds' resamples
    do not give (an evaluator's reading of the appendix): the badge is what the profile supports, the verdict says
    whether this folder earned it."""
    from test_appendix import claim_table

    from repro.plan.table_plan import plan_all
    from repro.report.appendix import appendix_inputs, build_appendix, render

    manifest, result = decided
    decided_ids = [v.claim for v in result.verdicts if v.stability is not None]
    assert len(decided_ids) >= 2
    failed, shaky = decided_ids[:2]
    verdicts = [
        dataclasses.replace(v, status="not reproduced")
        if v.claim == failed
        else dataclasses.replace(v, status="reproduced", stability=0.5)
        if v.claim == shaky
        else v
        for v in result.verdicts
    ]
    result = dataclasses.replace(result, verdicts=verdicts)
    inputs = appendix_inputs(plan_all([manifest]))
    rows = claim_table(render(build_appendix([(manifest, result)], PAPER, inputs, True), "md"))
    badge = f"Badge at {PAPER}"
    assert rows[f"table2/{failed}"][badge] == "none here: not reproduced"
    assert rows[f"table2/{shaky}"][badge] == "Results Reproduced, unstable under its seeds"
    without = claim_table(render(build_appendix([(manifest, None)], PAPER, inputs, False), "md"))
    assert without[f"table2/{failed}"][badge] == "Results Reproduced"  # what the profile supports, no results read
