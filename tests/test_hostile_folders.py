"""Results and data folders made by someone else (issue 45): each case a hostile co-author or a careless evaluator
tried is refused or handled with one line and the exit code a script reads; nothing is written outside the
results folder, no code from a data or results folder runs, and no command hangs."""

import os
import pickle
import signal

import numpy as np
import pandas as pd
import pytest
from fake_records import config, record, rho_deciding, write_manifest_t, write_record, write_result
from typer.testing import CliRunner

from repro.cli import app
from repro.results.measurements import Verdict

runner = CliRunner()
BOMB = "[" * 400_000  # JSON nested 400,000 deep: json's parser raised RecursionError on it
PROVENANCE = {"git_commit": "0123456789abcdef", "time": "t", "device": "cpu", "packages": {}}


@pytest.fixture
def deadline():
    """A command that blocks fails the test instead of hanging the suite."""

    def expired(signum, frame):
        raise AssertionError("the command blocked")

    before = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A results folder of table `t` (tests/fake_records.py): three usable records, and its results.json."""
    monkeypatch.setenv("REPRO_MANIFESTS", str(write_manifest_t(tmp_path)))
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "results"
    runs = [record(config(seed=s), accuracy=0.5 + 0.1 * s) for s in range(3)]
    for r in runs:
        write_record(folder, config(seed=r["seed"]), accuracy=r["metrics"]["accuracy"])
    write_result(folder, "t", {"dense": runs}, metrics=rho_deciding("reproduced"), provenance=PROVENANCE)
    return folder


def invoke(*args: str):
    done = runner.invoke(app, [*args], env={"COLUMNS": "80"})
    return done, [line for line in done.output.splitlines() if line.strip()]


# --------------------------------------------------------------------------- 1: a pickle that runs code
class _Runs:
    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_counting_a_cifar_folder_runs_no_code_from_it(tmp_path, monkeypatch):
    """`repro list --data-dir DIR` counted the images of every batch with plain pickle.load: a data_batch_1 that
    reduces to os.system(...) ran it."""
    from repro.data.sizes import split_sizes

    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    marker = tmp_path / "ran"
    (folder / "data_batch_1").write_bytes(pickle.dumps({"data": _Runs(f"touch {marker}"), "labels": [0]}))
    for name, n in (("data_batch_2", 7), ("test_batch", 3)):
        (folder / name).write_bytes(pickle.dumps({"data": np.zeros((n, 3072), np.uint8), "labels": [0] * n}))
    refused = r"data_batch_1: not counted: it names \w+\.system, which a CIFAR batch never holds"
    with pytest.warns(UserWarning, match=refused):  # the list names the file it left out
        done, _ = invoke("list", "--data-dir", str(tmp_path / "data"))
    assert done.exit_code == 0, done.output
    with pytest.warns(UserWarning, match=refused):
        sizes = split_sizes("cifar10", tmp_path / "data", cache=tmp_path / "fresh")  # counted anew: it says so again
    assert not marker.exists() and (sizes.train, sizes.test) == (7, 3)


# --------------------------------------------------------------------------- 2: writes through symbolic links
def test_a_linked_log_is_refused_before_anything_runs_and_its_target_is_untouched(results, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("theirs\n")
    (results / "smoke").mkdir(exist_ok=True)
    os.symlink(victim, results / "smoke" / "repro.log")
    done, lines = invoke("run", "t", "-o", str(results), "--profile", "smoke")
    said = " ".join(lines)
    assert done.exit_code == 1 and said.startswith(f"error: refused to write {results}/smoke/repro.log:")
    assert f"repro.log is a symbolic link (to {victim})" in said and victim.read_text() == "theirs\n"
    assert not list((results / "runs").glob("*.lock"))  # nothing started


def test_a_linked_export_folder_is_refused_and_nothing_lands_in_its_target(results, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, results / "export")
    done, lines = invoke("export", "-o", str(results))
    assert done.exit_code == 1 and " ".join(lines).startswith(f"error: refused to write {results}/export/")
    assert list(target.iterdir()) == []


def test_a_linked_figures_folder_is_refused_before_the_report_renders(results, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, results / "smoke" / "figures")
    done, lines = invoke("report", "-o", str(results))
    assert done.exit_code == 2 and list(target.iterdir()) == []
    assert f"{results}/smoke/figures is a symbolic link (to {target})" in " ".join(lines)


# --------------------------------------------------------------------------- 3, 4: JSON bombs and FIFOs
def test_a_nesting_bomb_or_a_fifo_in_runs_is_left_out_and_named_by_every_reader(results, tmp_path, deadline):
    (results / "runs" / "bbbbbbbbbbbbbbbb.json").write_text(BOMB)
    os.mkfifo(results / "runs" / "aaaaaaaaaaaaaaaa.json")
    done, lines = invoke("export", "-o", str(results), "--out", str(tmp_path / "out"))
    assert done.exit_code == 0, done.output
    assert "2 unusable run record(s) left out, as `repro run` would set them aside:" in lines
    said = " ".join(lines)
    assert "aaaaaaaaaaaaaaaa.json: it is a FIFO, not a regular file" in said
    assert "bbbbbbbbbbbbbbbb.json: it nests deeper than 64 levels" in said
    done, lines = invoke("compare", str(results), str(results))
    assert done.exit_code == 0 and "A: " in done.output and "(2 unusable run record(s) left out)" in " ".join(lines)
    done, _ = invoke("report", "-o", str(results))
    assert done.exit_code == 0, done.output


def test_a_planned_runs_record_that_is_a_bomb_or_a_fifo_is_set_aside_by_run_and_named_by_status(tmp_path, deadline):
    from repro.execution.runs import RunRequest, pending_runs

    for damage in ("bomb", "fifo"):
        folder = tmp_path / damage
        cfg = config()
        path = write_record(folder, cfg)
        path.unlink()
        path.write_text(BOMB) if damage == "bomb" else os.mkfifo(path)
        _, todo = pending_runs([RunRequest(cfg, "t/a")], folder)  # what `repro run` decides
        assert [t.cfg.hash for t in todo] == [cfg.hash] and not path.exists()
        assert len(list(path.parent.glob(f"{path.name}.invalid-*"))) == 1


def test_status_names_a_planned_runs_fifo_and_does_not_block(results, tmp_path, deadline):
    from repro.plan.manifest import load_all
    from repro.plan.run_config import planned_runs

    manifest = load_all(tmp_path / "manifests")[0]  # table t (the fixture's)
    first, second = planned_runs(manifest, manifest.profiles["smoke"])[:2]
    os.mkfifo(results / "runs" / f"{first.cfg.hash}.json")
    os.mkfifo(results / "runs" / f"{second.cfg.hash}.lock")
    done, lines = invoke("status", "t", "-o", str(results), "-v")
    said = " ".join(lines)
    assert done.exit_code == 0, done.output
    assert f"({first.cfg.hash[:12]}): its record is unusable (it is a FIFO, not a regular file)" in said
    assert f"{second.cfg.hash}.lock, which cannot be used: it is a FIFO, not a regular file" in said


def test_a_bomb_in_results_json_or_timings_json_is_one_line_not_a_traceback(results, tmp_path, deadline):
    (results / "smoke" / "timings.json").write_text(BOMB)
    done, _ = invoke("report", "-o", str(results))
    assert done.exit_code == 0, done.output
    (results / "smoke" / "t" / "results.json").write_text(BOMB)
    done, lines = invoke("export", "-o", str(results), "--out", str(tmp_path / "out"))
    assert done.exit_code == 2 and " ".join(lines) == (
        f"error: {results}/smoke/t/results.json cannot be read: it nests deeper than 64 levels"
    )
    done, lines = invoke("compare", str(results), str(results))
    assert done.exit_code == 2 and "it nests deeper than 64 levels" in " ".join(lines)
    done, lines = invoke("report", "-o", str(results))  # set aside and rebuilt from the records: nothing trains
    assert done.exit_code == 0, done.output
    assert any(line.startswith("t: results.json rebuilt from the run records") for line in lines)
    assert len(list((results / "smoke" / "t").glob("results.json.invalid-*"))) == 1


# --------------------------------------------------------------------------- 7, 8: CSV injection, forged verdicts
def test_a_formula_in_a_record_is_exported_as_text(results, tmp_path):
    formula = '=HYPERLINK("http://evil.example/","click")'
    cfg = config(seed=7)
    write_record(
        results,
        cfg,
        provenance={"device": formula, "device_type": "cpu", "reproducibility": {"threads": 1, "deterministic": False}},
    )
    done, _ = invoke("export", "-o", str(results), "--out", str(tmp_path / "out"))
    assert done.exit_code == 0, done.output
    text = (tmp_path / "out" / "runs.csv").read_text()
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text and ',"=HYPERLINK' not in text
    runs = pd.read_csv(tmp_path / "out" / "runs.csv").set_index("run_hash")
    assert runs.device[cfg.hash] == "'" + formula and runs.accuracy.dtype == float  # numbers stay numbers


def test_a_verdict_typed_into_results_json_is_never_exported_or_compared(results, tmp_path):
    forged = [Verdict("c", "s", "4.2", "analytic", "reproduced", "typed by hand")]
    runs = [record(config(seed=s), accuracy=0.5 + 0.1 * s) for s in range(3)]
    write_result(
        results, "t", {"dense": runs}, verdicts=forged, metrics=rho_deciding("not reproduced"), provenance=PROVENANCE
    )
    done, _ = invoke("export", "-o", str(results), "--out", str(tmp_path / "out"))
    assert done.exit_code == 0, done.output
    verdicts = pd.read_csv(tmp_path / "out" / "verdicts.csv")
    assert verdicts.status.tolist() == ["not reproduced"] and "typed by hand" not in verdicts.evidence[0]


# --------------------------------------------------------------------------- low: the terminal, status -o FILE
def test_escape_sequences_in_a_file_name_reach_the_terminal_as_text(results, tmp_path):
    name = "\x1b]0;owned\x07\x1b[2J"
    (results / "runs" / f"{name}.json").write_text("{")
    done, lines = invoke("export", "-o", str(results), "--out", str(tmp_path / "out"))
    assert done.exit_code == 0 and "\x1b" not in done.output and "\x07" not in done.output
    assert "?]0;owned?[2J.json: not valid JSON" in " ".join(lines)
    done, _ = invoke("compare", str(results), str(results))
    assert "\x1b" not in done.output


@pytest.mark.parametrize("command", ["status", "report", "appendix"])
def test_a_file_given_as_the_results_folder_is_refused_as_one(tmp_path, command):
    """`report -o FILE` said 'the folder does not exist', `appendix -o FILE` 'cannot write FILE/smoke/...: File
    exists; check the disk'."""
    file = tmp_path / "results.txt"
    file.write_text("")
    done, lines = invoke(command, "-o", str(file))
    assert done.exit_code == 2 and " ".join(lines) == f"error: --results-dir {file} is a file, not a results folder"
    assert file.read_text() == ""


def test_an_interrupted_export_leaves_the_old_set_or_the_new_one(results, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert invoke("export", "-o", str(results), "--out", str(out))[0].exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    write_record(results, config(seed=5), accuracy=0.9)  # the next export's runs.csv differs
    real = os.replace

    def interrupted(src, dst, **kw):  # Ctrl-C between the first file's rename and the others'
        real(src, dst, **kw)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):  # the app lets Ctrl-C through to its caller (repro.cli._Group)
        runner.invoke(app, ["export", "-o", str(results), "--out", str(out)])
    monkeypatch.setattr(os, "replace", real)
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(after) == sorted(before) and after["runs.csv"] != before["runs.csv"]
    fresh = tmp_path / "fresh"
    assert invoke("export", "-o", str(results), "--out", str(fresh))[0].exit_code == 0
    assert after == {p.name: p.read_bytes() for p in fresh.iterdir()}  # the whole new set, not a mix
