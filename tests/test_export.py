"""`repro export`: runs, history and verdicts as files whose rows are the records', in CSV, JSON or (with pyarrow)
Parquet; a missing package or an empty folder is one line and exit 2, before anything is written."""

import json
import re

import pandas as pd
import pytest
from fake_records import config, record, write_manifest_t, write_record, write_result
from typer.testing import CliRunner

from repro.cli import app
from repro.results.measurements import Verdict

runner = CliRunner()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_MANIFESTS", str(write_manifest_t(tmp_path)))  # table t's manifest decides claim c
    results = tmp_path / "results"
    runs = [record(config(seed=s), accuracy=0.5 + 0.1 * s) for s in range(3)]
    for r in runs:
        write_record(results, config(seed=r["seed"]), accuracy=r["metrics"]["accuracy"])
    write_result(results, "t", {"dense": runs}, verdicts=[Verdict("c", "s", "4.2", "empirical", "not run", "e")])
    damaged = write_record(results, config(seed=9))
    damaged.write_text("{")
    return results, damaged


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_csv_writes_three_files_whose_rows_are_the_records(folder, tmp_path):
    results, damaged = folder
    out = tmp_path / "out"
    done = runner.invoke(app, ["export", "--results-dir", str(results), "--out", str(out)], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    runs, history, verdicts = (pd.read_csv(out / f"{name}.csv") for name in ("runs", "history", "verdicts"))
    usable = sorted(p.stem for p in (results / "runs").glob("*.json") if p != damaged)
    assert sorted(runs.run_hash) == usable and len(usable) == 3
    assert runs.set_index("run_hash").accuracy.to_dict() == {config(seed=s).hash: 0.5 + 0.1 * s for s in range(3)}
    assert len(history) == 3 * config().epochs and set(history.run_hash) == set(usable)
    assert list(verdicts.claim) == ["c"] and verdicts.status.tolist() == ["not run"]
    assert "1 unusable run record(s) left out" in done.output and str(damaged) in done.output.replace("\n", "")
    assert all(len(line) <= 80 or " " not in line.strip() for line in done.output.splitlines())  # a path: whole
    assert re.search(r"^runs.csv +3$", done.output, re.M) and re.search(r"^history.csv +6$", done.output, re.M)


def test_json_is_one_object_per_row(folder, tmp_path):
    results, _ = folder
    done = runner.invoke(
        app, ["export", "-o", str(results), "--out", str(tmp_path / "j"), "--format", "json", "--profile", "smoke"]
    )
    assert done.exit_code == 0, done.output
    runs = json.loads((tmp_path / "j" / "runs.json").read_text())
    assert len(runs) == 3 and {r["table"] for r in runs} == {"t"} and runs[0]["chance"] == 0.1


def test_parquet_without_pyarrow_is_one_line_naming_it(folder, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    results, _ = folder
    done = runner.invoke(app, ["export", "-o", str(results), "--out", str(tmp_path / "p"), "--format", "parquet"])
    assert done.exit_code == 2
    assert _lines(done.output) == ["error: --format parquet needs pyarrow (pip install pyarrow); or use --format csv"]
    assert not (tmp_path / "p").exists()


def test_parquet_with_pyarrow(folder, tmp_path):
    pytest.importorskip("pyarrow")
    results, _ = folder
    done = runner.invoke(app, ["export", "-o", str(results), "--out", str(tmp_path / "p"), "--format", "parquet"])
    assert done.exit_code == 0, done.output
    assert len(pd.read_parquet(tmp_path / "p" / "runs.parquet")) == 3


@pytest.mark.parametrize(
    "case,message",
    [
        (
            "no records",
            "error: no usable run record in {results}/runs (1 unusable); run a table or "
            "`repro verify-all -o {results}` first",
        ),
        ("unknown profile", "error: no results of profile 'full' in {results} (profiles with results: smoke)"),
        ("bad format", "error: --format xlsx: expected one of csv, parquet, json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(folder, tmp_path, case, message):
    results, damaged = folder
    args = ["export", "-o", str(results), "--out", str(tmp_path / "x")]
    if case == "no records":
        for p in (results / "runs").glob("*.json"):
            if p != damaged:
                p.unlink()
    args += {"unknown profile": ["--profile", "full"], "bad format": ["--format", "xlsx"]}.get(case, [])
    done = runner.invoke(app, args, env={"COLUMNS": "400"})  # wide enough for the hint's path, named twice
    assert done.exit_code == 2 and _lines(done.output) == [message.format(results=results)]
    assert not (tmp_path / "x").exists()


def test_profiles_is_accepted_as_by_every_command_and_a_bad_file_refused_before_writing(folder, tmp_path):
    """Issue 49: `repro export --profiles FILE` was refused ("No such option") while every other command took it."""
    results, _ = folder
    good, bad = tmp_path / "profiles.toml", tmp_path / "bad.toml"
    good.write_text('[profiles.mine]\ndescription = "x"\nevidence = "pipeline"\n')
    bad.write_text('[profiles.mine]\ndescription = "x"\nevidence = "pipline"\n')
    out = tmp_path / "out"
    done = runner.invoke(
        app,
        ["export", "--results-dir", str(results), "--out", str(out), "--profiles", str(good)],
        env={"COLUMNS": "300"},
    )
    assert done.exit_code == 0 and (out / "runs.csv").is_file(), done.output
    refused = runner.invoke(
        app,
        ["export", "--results-dir", str(results), "--out", str(tmp_path / "not"), "--profiles", str(bad)],
        env={"COLUMNS": "300"},
    )
    assert refused.exit_code == 2 and f"error: {bad}:" in refused.output and "profiles.mine.evidence" in refused.output
    assert not (tmp_path / "not").exists()


def test_a_missing_or_unwritable_folder_is_named_before_the_folder_is_read(folder, tmp_path, monkeypatch):
    """An evaluator's first `repro export` in a folder with no results said "results is not a folder of results";
    one with --out where no file can be made read and decided every table, then failed at the first file with a
    hint about run records and resuming."""
    results, _ = folder
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(app, ["export", "-o", "nowhere"], env={"COLUMNS": "200"})
    assert done.exit_code == 2 and "no results in nowhere: the folder does not exist" in done.output, done.output
    (tmp_path / "a-file").write_text("x")
    done = runner.invoke(app, ["export", "-o", "a-file"], env={"COLUMNS": "200"})
    assert done.exit_code == 2 and "--results-dir a-file is a file, not a results folder" in done.output, done.output
    read = []
    monkeypatch.setattr("repro.results.frames.read_folder", lambda *a, **k: read.append(a))
    done = runner.invoke(app, ["export", "-o", str(results), "--out", "a-file/sub"], env={"COLUMNS": "200"})
    assert done.exit_code == 2 and "cannot write in a-file:" in done.output and "--out" in done.output, done.output
    assert not read and "resumes" not in done.output
