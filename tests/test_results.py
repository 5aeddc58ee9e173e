"""repro.results.measurements: metric paths, the FLOP check's tally, run summaries, results.json round trip."""

import json
from pathlib import Path

import pytest

from repro.results.measurements import (
    FlopCheck,
    ManifestResult,
    Measured,
    Measuring,
    RunSummary,
    Verdict,
    comparison_metric,
    load_result,
    parse_metric_path,
    row_metric,
    save_result,
)


def test_metric_paths_are_built_and_parsed_from_one_vocabulary():
    assert row_metric("std_h128", "rho") == "rows.std_h128.rho"
    assert comparison_metric("dw", "gap") == "comparisons.dw.gap"
    assert parse_metric_path("rows.std_h128.accuracy") == ("rows", "std_h128", "accuracy")
    with pytest.raises(KeyError, match="unknown row metric 'gap'"):
        row_metric("std", "gap")  # a gap belongs to a comparison
    with pytest.raises(ValueError, match="expected 'rows.<id>.<metric>'"):
        parse_metric_path("rows.std")
    with pytest.raises(ValueError, match="unknown metric 'acc'"):
        parse_metric_path("rows.std.acc")


def test_measured_accessors_write_the_paths_claims_read():
    measuring = Measuring()
    measuring.set_row("a", "accuracy", {0: 0.5, 1: 0.6})
    measuring.set_comparison("c", "flops_ratio", 0.8)
    m = measuring.done()
    assert m.metrics == {"rows.a.accuracy": {0: 0.5, 1: 0.6}, "comparisons.c.flops_ratio": 0.8}
    assert m.row("a", "accuracy") == {0: 0.5, 1: 0.6} and m.row("b", "accuracy") is None
    assert m.comparison("c", "flops_ratio") == 0.8


def test_flop_check_counts_models_that_passed_without_reading_messages():
    check = FlopCheck()
    check.add("t6", "a", [])
    check.add("t6", "b:odd", ["fvcore 10 != analytic 12 at head"])  # a colon in the id no longer matters
    check.add("t1", "c", [])
    assert check.passed == 2
    assert check.problems == ["t6/b:odd: fvcore 10 != analytic 12 at head"]


def _record(seed=0, accuracies=(0.2, 0.5, 0.4)):
    history = [{"test_accuracy": a, "train_accuracy": a + 0.1, "tau": 1.0 - i / 10} for i, a in enumerate(accuracies)]
    return {
        "seed": seed,
        "config_hash": "abc123",
        "history": history,
        "metrics": {
            "accuracy": accuracies[-1],
            "final_accuracy": accuracies[-1],
            "peak_accuracy": max(accuracies),
            "chance": 0.1,
        },
        "routing": {"expert_usage": [3, 1]},
        "provenance": {"device": "cpu: x86_64, 2 threads"},
    }


def test_run_summary_from_a_record_and_back():
    s = RunSummary.from_record(_record())
    assert (s.accuracy, s.peak_accuracy, s.final_accuracy, s.chance) == (0.4, 0.5, 0.4, 0.1)
    assert s.test_accuracy_by_epoch == [0.2, 0.5, 0.4] and s.tau_by_epoch == [1.0, 0.9, 0.8]
    assert RunSummary.from_dict({**s.to_dict(), "added_later": 1}) == s  # unknown keys of newer writers ignored


def test_run_summary_sums_each_backbone_moe_routers_shift_over_the_epochs():
    from repro.measure.accuracy import routers_moved

    record = _record()
    for epoch, shifts in zip(record["history"], ({"a": 0.0, "b": 0.25}, {"a": 0.0, "b": 0.5}, {"a": 0.0})):
        epoch["routing_layers"] = {name: {"entropy": 1.0, "router_shift": v} for name, v in shifts.items()}
    summary = RunSummary.from_record(record)
    assert summary.router_shift == {"a": 0.0, "b": 0.75}
    assert routers_moved(summary.router_shift) == (0.75, 0.5)  # the largest shift; one layer of two moved
    assert RunSummary.from_record(_record()).router_shift == {} and routers_moved({}) is None


def test_results_json_round_trip(tmp_path):
    measured = Measured(
        metrics={"rows.a.rho": 0.25}, details={"runs": {"a": [RunSummary.from_record(_record()).to_dict()]}}
    )
    verdict = Verdict("c1", "s", "4.2", "analytic", "reproduced", "rho 25%")
    result = ManifestResult(
        "t", "T", "Table 1", "table1", "smoke", measured, [verdict], {"device_type": "cuda", "device": "cuda: H200"}
    )
    save_result(result, tmp_path)
    back = load_result(tmp_path, "smoke", "t")
    assert back.to_dict() == result.to_dict()
    assert back.device_type == "cuda" and back.measured.runs("a")[0].seed == 0
    assert load_result(tmp_path, "smoke", "absent") is None and load_result(tmp_path, "full", "t") is None
    assert (tmp_path / "smoke" / "t" / "results.json").is_file()


def test_results_dir_is_checked_before_any_work(tmp_path, monkeypatch):
    import shutil as sh

    from repro.results.measurements import ResultsDirError, check_results_dir

    check_results_dir(tmp_path / "new" / "results")  # created
    assert (tmp_path / "new" / "results").is_dir() and not list((tmp_path / "new" / "results").iterdir())
    (tmp_path / "file").write_text("")
    with pytest.raises(ResultsDirError, match="is a file, not a folder"):
        check_results_dir(tmp_path / "file")
    with pytest.raises(ResultsDirError, match="cannot write in the results directory"):
        check_results_dir(tmp_path / "file" / "below")
    monkeypatch.setattr(sh, "disk_usage", lambda p: sh._ntuple_diskusage(10 << 30, 10 << 30, 5 << 20))
    with pytest.raises(ResultsDirError, match="5 MiB free"):
        check_results_dir(tmp_path)


def test_cli_refuses_an_unwritable_results_dir_up_front(tmp_path):
    from typer.testing import CliRunner

    from repro.cli import app

    (tmp_path / "file").write_text("")
    out = CliRunner().invoke(app, ["table6", "--results-dir", str(tmp_path / "file")])
    text = " ".join(out.output.split())
    assert out.exit_code == 2 and "is a file, not a folder" in text and "nothing was run" in text


@pytest.mark.parametrize("link", ["results", "results/runs", "results/smoke"])
def test_a_dangling_symlink_in_the_results_is_named_with_its_target(tmp_path, link):
    """Issue 41, item 14: a dangling symlink as the results folder gave "cannot write ...: File exists"."""
    from typer.testing import CliRunner

    from repro.cli import app

    (tmp_path / link).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / link).symlink_to(tmp_path / "unmounted" / "disk")
    out = CliRunner().invoke(app, ["table6", "--results-dir", str(tmp_path / "results")], env={"COLUMNS": "300"})
    assert out.exit_code == 2 and "File exists" not in out.output, out.output
    assert (
        f"error: {tmp_path / link} is a symbolic link to {tmp_path / 'unmounted' / 'disk'}, which does not "
        "exist; create that folder (or mount its disk), or choose another with --results-dir; nothing was run"
        in out.output
    ), out.output
    assert not (tmp_path / "unmounted").exists()


@pytest.fixture
def mini_from_records(tmp_path):
    """The executor tests' tiny table run from records written without training (tests/fake_records.py): its
    results.json, and the CLI arguments that find its manifest and profiles."""
    import sys

    from typer.testing import CliRunner

    from fake_records import record  # tests/fake_records.py
    from repro.cli import app
    from repro.plan.manifest import load_all
    from repro.plan.run_config import planned_runs

    sys.path.insert(0, str(Path(__file__).parent / "execution"))
    from minitable import write_manifest

    env = write_manifest(tmp_path)
    args = ["--manifests", env["REPRO_MANIFESTS"], "--profiles", env["REPRO_PROFILES"]]
    manifest = next(m for m in load_all(Path(env["REPRO_MANIFESTS"]), Path(env["REPRO_PROFILES"])) if m.id == "mini")
    results = tmp_path / "results"
    (results / "runs").mkdir(parents=True)
    for i, p in enumerate(planned_runs(manifest, manifest.profiles["smoke"])):
        (results / "runs" / f"{p.cfg.hash}.json").write_text(json.dumps(record(p.cfg, accuracy=0.3 + 0.1 * i)))
    out = CliRunner().invoke(app, ["run", "mini", "-o", str(results), *args])
    assert out.exit_code == 0 and "4 reused" in out.output, out.output
    return results, args


@pytest.mark.parametrize(
    "damage", [lambda text: text[: len(text) // 2], lambda text: '{"schema": 99}'], ids=["truncated", "schema 99"]
)
def test_report_rebuilds_a_damaged_results_json_from_the_run_records(mini_from_records, damage):
    """Issue 41, item 6: a truncated results.json crashed `report` (JSONDecodeError), {"schema": 99} too
    (KeyError 'metrics'); it can be rebuilt from the run records."""
    from typer.testing import CliRunner

    from repro.cli import app

    results, args = mini_from_records
    path = results / "smoke" / "mini" / "results.json"
    whole = json.loads(path.read_text())
    path.write_text(damage(path.read_text()))
    damaged = path.read_bytes()
    records = {p.name: p.read_bytes() for p in (results / "runs").iterdir()}
    out = CliRunner().invoke(app, ["report", "-o", str(results), *args], env={"COLUMNS": "300"})
    assert out.exit_code == 0 and "Traceback" not in out.output, out.output
    assert f"warning: table result {path} is unusable (" in out.output
    assert "mini: results.json rebuilt from the run records" in out.output
    rebuilt = json.loads(path.read_text())
    assert rebuilt["metrics"] == whole["metrics"] and rebuilt["details"]["runs"] == whole["details"]["runs"]
    aside = list(path.parent.glob("results.json.invalid-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged  # kept for inspection
    assert {p.name: p.read_bytes() for p in (results / "runs").iterdir()} == records  # nothing trained or rewritten
    assert "mini" in (results / "smoke" / "report.md").read_text()


def test_a_results_json_that_cannot_be_read_is_not_damage(tmp_path, monkeypatch):
    from repro.results.measurements import ResultUnusable

    path = tmp_path / "smoke" / "t" / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    with pytest.raises(ResultUnusable, match=r"missing keys \['manifest'") as damaged:
        load_result(tmp_path, "smoke", "t")
    from repro.core import jsonfile

    real = jsonfile.open_regular  # every JSON of a results folder is opened there (the suite may run as root)
    monkeypatch.setattr(
        jsonfile,
        "open_regular",
        lambda file: (_ for _ in ()).throw(PermissionError(13, "Permission denied")) if file == path else real(file),
    )
    with pytest.raises(ResultUnusable, match=r"it cannot be read \(Permission denied\)") as unreadable:
        load_result(tmp_path, "smoke", "t")
    assert damaged.value.damaged and not unreadable.value.damaged


def test_what_a_table_measured_and_its_result_are_frozen_and_stages_make_new_ones():
    import dataclasses

    from repro.results.measurements import derive_comparisons

    measured = Measured(metrics={"rows.a.total_macs": 50.0, "rows.b.total_macs": 100.0, "rows.a.rho": 0.2})
    result = ManifestResult("t", "T", "Table 1", "table1", "smoke", measured, [], {})
    verdict = Verdict("c1", "s", "4.2", "analytic", "reproduced", "rho 25%")
    for value, name in ((measured, "metrics"), (result, "verdicts"), (result, "measured"), (verdict, "status")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)

    class Comparison:
        id, row, baseline = "ab", "a", "b"

    derived = derive_comparisons([Comparison()], measured)
    assert derived.comparison("ab", "flops_reduction") == 0.5 and derived.comparison("ab", "rho") == 0.2
    assert set(measured.metrics) == {"rows.a.total_macs", "rows.b.total_macs", "rows.a.rho"}  # not written into
    combined = Measured.combine([measured, Measured(problems=["x"], details={"runs": {"a": []}})])
    assert combined.problems == ["x"] and combined.metrics == measured.metrics and measured.problems == []
    assert measured.with_details({"runs": {}}).details == {"runs": {}} and measured.details == {}


def test_a_results_folder_that_is_a_symlink_loop_is_named_as_one(tmp_path):
    """A link loop as the results folder was called "a symbolic link to b, which does not exist" (b is there)."""
    from typer.testing import CliRunner

    from repro.cli import app

    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    out = CliRunner().invoke(app, ["table6", "--results-dir", str(tmp_path / "a")], env={"COLUMNS": "300"})
    assert out.exit_code == 2 and "does not exist" not in out.output, out.output
    assert f"error: {tmp_path / 'a'} is a symbolic link that leads back to itself" in out.output, out.output


@pytest.mark.parametrize("target", ["unmounted/disk", "loop"])
def test_status_refuses_a_results_folder_behind_a_broken_link(tmp_path, target):
    """`repro status -o LINK` on a link to nowhere counted every run pending, and on a link loop listed every run
    failed ("Too many levels of symbolic links"), exiting 0 both times (an evaluator's walk-through)."""
    from typer.testing import CliRunner

    from repro.cli import app

    link = tmp_path / "results"
    if target == "loop":
        (tmp_path / "loop").symlink_to("results")
    link.symlink_to(tmp_path / target)
    out = CliRunner().invoke(app, ["status", "--results-dir", str(link)], env={"COLUMNS": "300"})
    assert out.exit_code == 2, out.output
    assert out.output.startswith(f"error: {link} is a symbolic link"), out.output
    assert "failed" not in out.output and "pending" not in out.output
