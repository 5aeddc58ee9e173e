"""repro.results.frames: a results folder as DataFrames, built from the files alone (records and results.json),
with pandas imported only when a frame is asked for."""

import json
import re
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest
from fake_records import config, record, write_record, write_result

from checkout import REPO_ROOT
from repro.results import frames
from repro.results.measurements import Verdict


@pytest.fixture
def folder(tmp_path):
    """Two rows of two seeds in table `t`, the dense row's runs shared with table `u`, one unusable record, and
    one record no table used."""
    results = tmp_path / "results"
    dense = [record(config(seed=s), accuracy=a) for s, a in ((0, 0.5), (1, 0.7))]
    moe = [record(config(seed=s, profile=_profile(threads=2)), accuracy=a) for s, a in ((0, 0.6), (1, 0.9))]
    for r in dense + moe:
        write_record(
            results,
            config(seed=r["seed"], profile=_profile(threads=r["config"]["threads"])),
            accuracy=r["metrics"]["accuracy"],
        )
    write_record(results, config(seed=5))  # in no table
    bad = write_record(results, config(seed=7))
    bad.write_text(bad.read_text()[:40])
    verdicts = [
        Verdict("a", "s", "4.2", "empirical", "reproduced", "e", p_value=0.01, rule="row_above", rows=["dense", "moe"]),
        Verdict("b", "s", "4.2", "empirical", "not reproduced", "e", p_value=0.04),
        Verdict("f", "s", "4.5", "analytic", "reproduced", "e", rule="matches_paper", tolerance=0.005),
    ]
    write_result(
        results,
        "t",
        {"dense": dense, "moe": moe},
        verdicts=verdicts,
        metrics={"rows.moe.rho": 0.25, "rows.dense.rho": 0.0},
    )
    write_result(results, "u", {"shared_dense": dense})
    return results, bad


def _profile(threads: int):
    import dataclasses

    from fake_records import PROFILE

    return dataclasses.replace(PROFILE, threads=threads)


def test_runs_is_one_row_per_usable_record_with_every_table_that_used_it(folder):
    results, bad = folder
    runs = frames.runs(results)
    assert list(runs.columns) == list(frames.RUN_COLUMNS)
    assert len(runs) == 5 and runs.run_hash.is_unique  # 6 files, one unusable
    assert runs.attrs["unusable"] == {str(bad): frames.read_folder(results).records.unusable[bad]}
    by_hash = runs.set_index("run_hash")
    shared = by_hash.loc[config(seed=1).hash]
    assert (shared.table, shared.row, shared.profile) == ("t;u", "dense;shared_dense", "smoke;smoke")
    assert (shared.accuracy, shared.seed, shared.threads, shared.data, shared.rho) == (0.7, 1, 1, "synthetic", 0.0)
    moe = by_hash.loc[config(seed=0, profile=_profile(threads=2)).hash]
    assert (moe.row, moe.threads, moe.rho, moe.epochs, moe.wall_seconds) == ("moe", 2, 0.25, 2, 12.4)
    lone = by_hash.loc[config(seed=5).hash]
    assert pd.isna(lone.table) and lone.dataset == "cifar10" and lone.backbone == "cifar_standard"
    assert set(frames.runs(results, profile="smoke").run_hash) == set(runs.run_hash) - {config(seed=5).hash}
    with pytest.warns(UserWarning, match="no results of profile 'other' in .*: the frame is empty; profiles with"):
        assert frames.runs(results, profile="other").empty


def test_history_is_one_row_per_run_and_epoch(folder):
    results, _ = folder
    history = frames.history(results)
    assert list(history.columns) == list(frames.HISTORY_COLUMNS)
    assert len(history) == 5 * 2 and sorted(history.epoch.unique()) == [1, 2]
    assert history.groupby("run_hash").size().eq(2).all()


def test_verdicts_are_one_row_per_claim_and_profile_with_holm_over_the_profile(folder):
    from repro.results.family import holm_adjust

    results, _ = folder
    verdicts = frames.verdicts(results).set_index("claim")
    assert list(frames.verdicts(results).columns) == list(frames.VERDICT_COLUMNS)
    assert len(verdicts) == 3
    stored = [
        Verdict("a", "s", "4.2", "empirical", "reproduced", "e", p_value=0.01),
        Verdict("b", "s", "4.2", "empirical", "not reproduced", "e", p_value=0.04),
    ]
    stored, _ = holm_adjust(stored)  # the report's rule
    assert verdicts.p_holm.loc["a"] == stored[0].p_holm == 0.02 and verdicts.p_holm.loc["b"] == stored[1].p_holm
    assert (verdicts.rule.loc["a"], verdicts.rows.loc["a"], verdicts.tolerance.loc["f"]) == (
        "row_above",
        "dense;moe",
        0.005,
    )
    assert verdicts.p_holm.isna().loc["f"] and verdicts.table.loc["a"] == "t"


def test_row_stats_are_the_mean_and_sample_sd_over_seeds(folder):
    results, _ = folder
    stats = frames.row_stats(frames.row_seeds(results)).set_index(["table", "row"])
    assert stats.loc[("t", "moe"), "seeds"] == 2
    assert stats.loc[("t", "moe"), "accuracy_mean"] == pytest.approx(0.75, abs=1e-15)
    assert stats.loc[("t", "moe"), "accuracy_sd"] == pytest.approx(0.3 / 2**0.5, abs=1e-15)  # ddof=1
    assert stats.loc[("u", "shared_dense"), "accuracy_mean"] == pytest.approx(0.6, abs=1e-15)
    assert list(frames.row_stats(frames.row_seeds(results).iloc[:0]).columns) == list(frames.ROW_STAT_COLUMNS)


def test_row_stats_of_a_folder_or_of_runs_is_refused_saying_what_it_takes(folder):
    """row_stats("results") raised AttributeError ('str' object has no attribute 'empty'); on `runs`, whose shared
    record joins its uses in one cell ('t;u'), it grouped them as one row of a table 't;u'."""
    results, _ = folder
    with pytest.raises(TypeError, match=re.escape(f"row_stats(row_seeds('{results}'))")):
        frames.row_stats(results)
    with pytest.raises(ValueError, match="joins several uses in a cell with ';'"):
        frames.row_stats(frames.runs(results))
    with pytest.raises(ValueError, match="has no column seed, accuracy"):
        frames.row_stats(frames.row_seeds(results)[["profile", "table", "row", "chance", "rho"]])


@pytest.mark.parametrize("name", ["smok", "Smoke"])
def test_a_profile_with_no_results_warns_naming_the_closest_and_those_there(folder, name):
    """A misspelt profile gave every frame empty, with no word of why (the commands refuse it naming the closest)."""
    results, _ = folder
    with pytest.warns(UserWarning) as caught:
        assert frames.verdicts(results, profile=name).empty
    (warning,) = caught
    assert str(warning.message) == (
        f"no results of profile '{name}' in {results} (did you mean 'smoke'?): the frame is empty; profiles with "
        "results: smoke"
    )
    assert warning.filename == __file__  # it points at the caller's line, not into the package


def test_a_profile_folder_or_the_records_folder_given_for_the_results_folder_is_refused(folder):
    """Given results/smoke or results/runs, every frame was empty, with no word of why."""
    results, _ = folder
    with pytest.raises(frames.FolderError) as caught:
        frames.runs(results / "smoke")
    assert str(caught.value) == (
        f"{results / 'smoke'} is the folder of profile 'smoke' inside a results folder: give the results folder above "
        f"it, {results} (its runs/ holds the run records), and the profile 'smoke'"
    )
    with pytest.raises(frames.FolderError, match=re.escape(f"give the results folder above it, {results}")):
        frames.history(results / "runs")
    empty = results.parent / "empty"
    empty.mkdir()
    assert frames.runs(empty).empty  # a folder nothing has run into yet is a results folder with no records


def test_data_provenance_and_readings():
    synthetic = {"config": {"data": "synthetic"}, "provenance": {}}
    assert frames.data_kind(synthetic, []) == "synthetic"
    assert frames.data_kind({"config": {"data": "digits"}, "provenance": {}}, []) == "stand-in"
    real = {"config": {"data": "real", "dataset": "cifar10"}, "provenance": {"allow_unverified_data": True}}
    assert frames.data_kind(real, []) == "unverified"  # allowed and no check stored: not known to be verified
    assert frames.data_kind({**real, "provenance": {}}, []) == "verified"
    assert frames.reading_of("dw_h512__torch_init") == "conv-init/torch_init"


@pytest.mark.parametrize(
    "dataset, check, kind",
    [
        ("cifar10", {"checksum": "md5 verified", "unverified": []}, "verified"),
        ("cifar10", {"checksum": "md5 mismatch accepted", "unverified": ["data_batch_1: md5 a != b"]}, "unverified"),
        # a folder of any images in Tiny-ImageNet's or ImageNet's layout passes its check: no md5 was compared
        ("tiny_imagenet", {"checksum": "no checksum published", "unverified": []}, "unchecked"),
        ("imagenet", {"checksum": "archive md5s checked by torchvision at extraction", "unverified": []}, "unchecked"),
    ],
)
def test_the_paper_data_is_verified_only_where_a_check_matched_its_published_checksums(dataset, check, kind):
    details = {"data_checks": {"checks": [{"dataset": dataset, **check}]}}
    table = SimpleNamespace(measured=SimpleNamespace(details=details))
    record = {"config": {"data": "real", "dataset": dataset}, "provenance": {}}
    assert frames.data_kind(record, [table]) == kind
    assert frames.reading_of("dw_h512_dense") is None


def test_a_missing_folder_or_a_broken_results_json_is_named(tmp_path, folder):
    with pytest.raises(frames.FolderError, match="nowhere does not exist"):
        frames.runs(tmp_path / "nowhere")
    results, _ = folder
    broken = results / "smoke" / "t" / "results.json"
    broken.write_text(json.dumps({"manifest": "t"}))
    with pytest.raises(frames.FolderError, match=f"{broken} is not a table's results.json: KeyError"):
        frames.verdicts(results)


def test_importing_the_results_package_leaves_pandas_out():
    code = (
        "import sys, repro.results, repro.results.frames; print('pandas' in sys.modules); "
        "from repro.results import runs; print('pandas' in sys.modules, runs.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False", "repro.results.frames"]
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        import repro.results

        repro.results.nothing  # noqa: B018


def test_docs_give_every_column_of_every_frame_once_in_its_section():
    """docs/results-data.md: one line per column, with its unit, under the frame's heading."""
    import re

    from checkout import REPO_ROOT
    from repro.results.frames import (
        HISTORY_COLUMNS,
        READING_COLUMNS,
        ROW_SEED_COLUMNS,
        ROW_STAT_COLUMNS,
        RUN_COLUMNS,
        VERDICT_COLUMNS,
    )

    doc = (REPO_ROOT / "docs" / "results-data.md").read_text()
    sections = dict(re.findall(r"^## `(\w+)`[^\n]*\n(.*?)(?=^## )", doc, re.M | re.S))
    for frame, columns in (
        ("runs", RUN_COLUMNS),
        ("history", HISTORY_COLUMNS),
        ("verdicts", VERDICT_COLUMNS),
        ("readings", READING_COLUMNS),
        ("row_seeds", ROW_SEED_COLUMNS + ROW_STAT_COLUMNS),
    ):
        listed = re.findall(r"^\| `(\w+)` \|", sections[frame], re.M)
        named = set(listed) | set(re.findall(r"`(\w+)`", sections[frame]))
        assert not set(columns) - named, f"{frame}: {sorted(set(columns) - named)} not in docs/results-data.md"
        assert len(listed) == len(set(listed)), f"{frame}: a column listed twice"


def test_readings_say_which_verdicts_an_alternative_reading_changes(tmp_path):
    """Under this reading, which verdicts change? Table 6 decided at smoke: rho_backbone_moe reproduces only
    under the stride-1 reading of the backbone MoE's layers; the k = 2 count, the 'negligible' band and one 3x3
    convolution per block move three more."""
    from repro.pipeline import Context, run_manifest
    from repro.plan.table_plan import build_plan
    from repro.plan.manifest import find_manifest
    from repro.results import readings
    from repro.results.measurements import save_result

    table6 = find_manifest("table6")
    result = run_manifest(build_plan(table6, "smoke"), Context("smoke", tmp_path)).result
    save_result(result, tmp_path)
    frame = readings(tmp_path)
    assert len(frame) == sum(len(e.alternatives) for e in result.readings) > 0
    changed = frame.query("changes")
    assert set(zip(changed.claim, changed.alternative)) == {
        ("rho_backbone_moe", "stride1"),
        ("backbone_moe_rho_independent_of_k", "per_bank_convolutions"),
        ("depthwise_raises_rho", "negligible_10pct"),
        ("tiny_convolutions_dominate", "one_conv"),
    }
    row = changed[changed.claim == "rho_backbone_moe"].iloc[0]
    assert (row.chosen_status, row.status, row.reading) == ("not reproduced", "reproduced", "backbone-moe-layers")
    with pytest.warns(UserWarning, match="no results of profile 'full'"):
        assert readings(tmp_path, profile="full").empty


def test_an_alternative_not_run_is_no_change_of_verdict(folder):
    """An alternative not counted when the table ran (a reading added since), or whose rows were not trained, has no
    verdict: `changes` is false for it, and true for one decided otherwise."""
    from repro.results import readings

    results, _ = folder
    file = results / "smoke" / "t" / "results.json"
    data = json.loads(file.read_text())
    outcome = {"reading": "r", "label": "l", "value": "", "evidence": "e", "failed": []}
    data["readings"] = [
        {
            "claim": "f",
            "kind": "analytic",
            "chosen": {**outcome, "reading": "", "alternative": "", "status": "reproduced"},
            "alternatives": [
                {**outcome, "alternative": "counted", "status": "not reproduced"},
                {**outcome, "alternative": "added_since", "status": "not run"},
            ],
        }
    ]
    file.write_text(json.dumps(data))
    frame = readings(results).set_index("alternative")
    assert frame.changes.to_dict() == {"counted": True, "added_since": False}


FRAMES = ("runs", "history", "verdicts", "row_seeds")


@pytest.mark.parametrize("name", FRAMES)
def test_an_empty_frame_has_the_dtypes_of_a_full_one(folder, name):
    # a profile with no results gave every column object (numbers int64), so a boolean column filtered nothing:
    # runs(folder, profile="full")[lambda f: f.deterministic] had no columns at all, and a notebook's next
    # ["seed", "accuracy"] raised KeyError where a full folder's gave rows
    results, _ = folder
    full = getattr(frames, name)(results)
    with pytest.warns(UserWarning):
        empty = getattr(frames, name)(results, profile="full")
    assert empty.empty and list(empty.columns) == list(full.columns)
    assert {c: empty[c].dtype.kind for c in full} == {c: full[c].dtype.kind for c in full}


def test_an_empty_frame_filtered_by_a_boolean_column_keeps_its_columns(folder):
    results, _ = folder
    with pytest.warns(UserWarning):
        runs, readings = frames.runs(results, profile="full"), frames.readings(results, profile="full")
    assert list(runs[runs.deterministic].columns) == list(frames.RUN_COLUMNS)
    assert list(readings[readings.changes].columns) == list(frames.READING_COLUMNS)
    stats = frames.row_stats(frames.row_seeds(results, profile="smoke").iloc[:0])
    assert {c: stats[c].dtype.kind for c in ("seeds", "accuracy_mean", "rho")} == {
        "seeds": "i",
        "accuracy_mean": "f",
        "rho": "f",
    }
