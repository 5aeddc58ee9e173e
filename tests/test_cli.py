"""The command line end to end on Table 6 (analytic, seconds)."""

import json
import re
import shutil

import pytest

from typer.testing import CliRunner

from checkout import MANIFESTS
from repro.cli import app

runner = CliRunner()


@pytest.mark.slow
def test_table6_writes_tables_and_claims(results_dir):
    result = runner.invoke(app, ["table6", "--results-dir", str(results_dir)])
    assert result.exit_code == 0, result.output
    out = results_dir / "smoke" / "table6"
    for name in ("table6.md", "table6.tex", "claims.md", "results.json"):
        assert (out / name).is_file(), name
    record = json.loads((out / "results.json").read_text())
    assert record["problems"] == []
    verdicts = {v["claim"]: v["status"] for v in record["verdicts"]}
    assert verdicts["rho_r18_head"] == "reproduced"
    assert record["provenance"]["packages"]["torch"]


@pytest.mark.slow  # Table 6 twice (the second reuses the FLOP counts)
def test_strict_says_in_one_line_why_it_exits_1(results_dir):
    """Issue 49: at smoke, --strict exited 1 with the same output as a run without it."""
    plain = runner.invoke(app, ["table6", "--results-dir", str(results_dir)], env={"COLUMNS": "200"})
    assert plain.exit_code == 0 and "--strict" not in plain.output, plain.output
    strict = runner.invoke(app, ["table6", "--strict", "--results-dir", str(results_dir)], env={"COLUMNS": "200"})
    verdicts = json.loads((results_dir / "smoke" / "table6" / "results.json").read_text())["verdicts"]
    failed = [f"table6/{v['claim']}" for v in verdicts if v["scope"] == "analytic" and v["status"] != "reproduced"]
    assert failed and strict.exit_code == 1, strict.output  # smoke decides analytic claims: some differ from the text
    said = [line for line in strict.output.splitlines() if line.startswith("--strict")]
    assert said == [
        f"--strict: exit 1: {len(failed)} claim(s) decidable at smoke here did not reproduce: "
        f"{', '.join(failed[:3])} and {len(failed) - 3} more"
    ], strict.output


def test_the_strict_line_names_the_claims_or_says_none_failed_or_that_none_could_be_decided():
    """`repro table2 --strict` at smoke decides no claim; the line said 'every claim decidable at smoke here
    reproduced', a pass for a check that checked nothing."""
    from repro.cli.run import strict_line

    assert (
        strict_line([], "smoke", 3)
        == "--strict: every claim decidable at smoke here reproduced (3): no exit 1 for the claims"
    )
    assert (
        strict_line([], "smoke", 0)
        == "--strict: no claim of these tables is decidable at smoke here: no exit 1 for the claims"
    )
    assert (
        strict_line(["t/a", "t/b"], "full", 5)
        == "--strict: exit 1: 2 claim(s) decidable at full here did not reproduce: t/a, t/b"
    )


def test_strict_counts_only_the_claims_the_profile_and_device_decide():
    from types import SimpleNamespace as Ns

    from repro.pipeline import decidable_claims

    def result(evidence, *verdicts):
        return Ns(
            manifest_id="t",
            profile_settings=Ns(evidence=evidence),
            verdicts=[Ns(claim=c, scope=s, status=v) for c, s, v in verdicts],
        )

    empirical = ("gap", "empirical", "not run")
    assert decidable_claims([result("pipeline", empirical)], "cpu") == {}  # smoke: nothing decided
    assert decidable_claims([result("paper", empirical)], "cpu") == {"t/gap": "not run"}  # a failed run counts
    gpu = ("slower", "gpu", "not run")
    assert decidable_claims([result("paper", gpu)], "cpu") == {}
    assert decidable_claims([result("paper", gpu)], "cuda:0") == {"t/slower": "not run"}
    analytic = ("rho", "analytic", "reproduced")
    assert decidable_claims([result("pipeline", analytic, empirical)], "cpu") == {"t/rho": "reproduced"}


@pytest.mark.parametrize("command", [["--help"], ["run", "--help"], ["bench", "gpu", "--help"]], ids=" ".join)
def test_help_shows_no_type_beside_a_flag_and_one_beside_a_value(command):
    result = runner.invoke(app, command, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output
    # the option's own line (run's description names `repro --help` too)
    flag = next(line for line in result.output.splitlines() if line.strip("│ ").startswith("--help"))
    assert flag.split("--help", 1)[1].split()[:1] == ["Show"], flag  # nothing between the flag and its help
    if command != ["--help"]:
        assert "<int range>" in result.output and "<str>" in result.output


def test_unknown_manifest_is_a_clear_error():
    result = runner.invoke(app, ["run", "tabel6"])
    assert result.exit_code == 2
    assert "no manifest 'tabel6' (did you mean 'table6'?)" in result.output


@pytest.mark.slow
def test_list_and_flops(results_dir, tmp_path, monkeypatch):
    manifests = tmp_path / "manifests"  # `repro list` estimates every table's cost: Table 6 keeps this quick
    manifests.mkdir()
    shutil.copy(MANIFESTS / "table6.toml", manifests)
    monkeypatch.setenv("REPRO_MANIFESTS", str(manifests))
    listed = runner.invoke(app, ["list"])
    assert listed.exit_code == 0 and "table6" in listed.output
    checked = runner.invoke(app, ["flops", "table6"])
    assert checked.exit_code == 0, checked.output
    assert "analytic = fvcore = torch/2 for every module" in checked.output
    said = " ".join(checked.output.split())  # Table 6's backbone MoE rows, k = 2 (mixing) and k = 1 (the loop)
    assert re.search(
        r"MoEConv2d layers are counted on their fewest-multiply-add path: mixed \(\d+\), "
        r"per-expert \(\d+\)\. Training runs the exact path measured time chooses",
        said,
    )


@pytest.mark.slow
def test_verify_all_writes_one_report(results_dir, tmp_path, monkeypatch):
    manifests = tmp_path / "manifests"  # Table 6 alone: the other tables train, which other tests cover
    manifests.mkdir()
    shutil.copy(MANIFESTS / "table6.toml", manifests)
    monkeypatch.setenv("REPRO_MANIFESTS", str(manifests))
    result = runner.invoke(app, ["verify-all", "--results-dir", str(results_dir)])
    assert result.exit_code == 0, result.output
    report = (results_dir / "smoke" / "report.md").read_text()
    assert "Tables regenerated:" in report and "## Claims checklist" in report
    report = (results_dir / "smoke" / "report-detail.md").read_text()  # the sections report.md links
    assert "FLOP checks passed:" in result.output
    entry = json.loads((results_dir / "smoke" / "timings.json").read_text())["commands"]["verify-all"]
    phases = {(p["phase"], p["table"]) for p in entry["phases"]}
    assert {
        ("FLOP check", ""),
        ("FLOP counting", "table6"),
        ("claims", "table6"),
        ("tables", "table6"),
        ("report", ""),
    } <= phases
    # (the FLOP check's row is left out of the table when it took under 0.05 s: counts cached by an earlier
    # command in this process, as `repro flops` in test_list_and_flops leaves them)
    assert "## Where the time went" in report and "| start-up and imports | " in report
    assert "| **total** | verify-all |" in report


def test_full_profile_without_the_dataset_fails_before_training(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA", str(tmp_path / "empty"))
    results = tmp_path / "results"
    for table, dataset, folder in (
        ("table1", "CIFAR-10", "cifar-10-batches-py"),
        ("table5", "ImageNet-1K", "imagenet"),
    ):
        result = runner.invoke(app, [table, "--profile", "full", "--results-dir", str(results), "--device", "cpu"])
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "nothing was trained" in text and dataset in text and folder in text
        assert not (results / "runs").exists()


@pytest.mark.slow
def test_results_are_kept_per_profile(results_dir, tmp_path, monkeypatch):
    """A failed run at one profile must not overwrite another profile's table, claims or report."""
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    shutil.copy(MANIFESTS / "table6.toml", manifests)
    monkeypatch.setenv("REPRO_MANIFESTS", str(manifests))
    assert runner.invoke(app, ["table6", "--results-dir", str(results_dir)]).exit_code == 0
    smoke = (results_dir / "smoke" / "table6" / "claims.md").read_text()
    assert runner.invoke(app, ["table6", "--profile", "full", "--results-dir", str(results_dir)]).exit_code == 0
    assert (results_dir / "smoke" / "table6" / "claims.md").read_text() == smoke
    assert (results_dir / "full" / "table6" / "results.json").is_file()
    reported = runner.invoke(app, ["report", "--results-dir", str(results_dir)])
    assert reported.exit_code == 0, reported.output
    assert (results_dir / "smoke" / "report.md").is_file() and (results_dir / "full" / "report.md").is_file()


def test_the_top_level_help_is_one_screen_with_the_evaluators_commands_first(monkeypatch):
    from repro.cli import manifest_ids

    monkeypatch.setenv("COLUMNS", "80")
    out = CliRunner().invoke(app, ["--help"], terminal_width=80).output
    lines = out.splitlines()
    assert len(lines) <= 40, out
    commands = [ln.split()[1] for ln in lines if ln.startswith("│ ") and ln[2] not in " -"]
    assert commands[:3] == ["verify-all", "run", "list"], commands
    assert not set(commands) & set(manifest_ids())  # the tables are aliases of `run`, named in one sentence
    assert all(i in " ".join(out.split()) for i in manifest_ids())
