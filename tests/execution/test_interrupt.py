"""Ctrl-C / SIGTERM while a table trains: stop within seconds, keep what finished, resume to the same table."""

import dataclasses
import json
import os
import re
import signal
import time

import pytest
import torch

import repro.execution.local as local
from repro.runtime.interrupt import RunsInterrupted, clean_after_kill
from repro.plan.manifest import Row
from fake_records import PROFILE as FAKE  # tests/fake_records.py
from repro.models import Component
from repro.plan.run_config import resolve
from repro.core.settings import Settings
from repro.execution.runs import RunRequest, checkpoint_path, execute_runs, record_path, runs_dir
from .minitable import _terminal_signals, counts, repro, write_manifest

PROFILE = dataclasses.replace(FAKE, seeds=3)  # tests/fake_records.py's but for these fields
ROW = Row(
    id="r",
    label="r",
    dataset="cifar10",
    backbone=Component("cifar_standard"),
    head=Component("dense"),
    measures=("accuracy",),
)
EVERY_EPOCH = Settings(checkpoint_seconds=0.0)  # a checkpoint after every epoch: runs here are stopped after one


def test_the_message_says_what_was_kept_and_how_to_resume():
    assert RunsInterrupted(5, [2, 1], 9).message() == (
        "interrupted: 5 runs recorded, 2 interrupted (checkpoints kept at epoch 2 and 1), 9 not started; "
        "rerun the same command to resume"
    )
    assert RunsInterrupted(1, [None, 3, None, 1, 2], 0).message("repro mini --jobs 2") == (
        "interrupted: 1 run recorded, 5 interrupted (checkpoints kept at epoch 3, 2 and 1; 2 before their first "
        "epoch), 0 not started; rerun `repro mini --jobs 2` to resume"
    )
    assert RunsInterrupted(0, [None], 3).message() == (
        "interrupted: 0 runs recorded, 1 interrupted (1 before its first epoch), 3 not started; "
        "rerun the same command to resume"
    )


def test_ctrl_c_in_process_keeps_the_record_and_the_checkpoint_and_resumes(tmp_path, monkeypatch):
    cfgs = [resolve(ROW, PROFILE, seed=s) for s in range(3)]
    requests = [RunRequest(c, f"r seed {c.seed}") for c in cfgs]
    real = local._apply

    def ctrl_c_after_first_epoch_of_seed_1(event, progress, tasks):
        if event[1] == "r seed 1" and event[2] == 1:
            raise KeyboardInterrupt
        real(event, progress, tasks)

    monkeypatch.setattr(local, "_apply", ctrl_c_after_first_epoch_of_seed_1)
    with pytest.raises(RunsInterrupted) as caught:
        execute_runs(requests, tmp_path, "cpu", jobs=1, settings=EVERY_EPOCH)
    assert (caught.value.recorded, caught.value.checkpoints, caught.value.not_started) == (1, [1], 1)
    runs = runs_dir(tmp_path)
    assert record_path(tmp_path, cfgs[0]).is_file() and not record_path(tmp_path, cfgs[1]).exists()
    assert torch.load(checkpoint_path(tmp_path, cfgs[1]), weights_only=True)["epoch"] == 1
    assert not list(runs.glob("*.lock")) and not list(runs.glob(".*.tmp")) and not list(runs.glob("*.failed.json"))

    monkeypatch.setattr(local, "_apply", real)
    batch = execute_runs(requests, tmp_path, "cpu", jobs=1, settings=EVERY_EPOCH)
    assert (batch.counts.trained, batch.counts.reused) == (2, 1) and not batch.errors
    assert batch.records[cfgs[1].hash]["resumed_from_epoch"] == 1


def test_a_killed_workers_lock_and_temporary_files_are_removed_but_not_another_holders(tmp_path):
    tmp_path.joinpath("abc.lock").write_text(json.dumps({"pid": 4242}))
    tmp_path.joinpath("def.lock").write_text(json.dumps({"pid": 99}))
    for name in (".abc.ckpt.x1.tmp", ".abc.json.x2.tmp", ".def.ckpt.x3.tmp", "abc.ckpt"):
        tmp_path.joinpath(name).write_bytes(b"x")
    clean_after_kill(tmp_path, "abc", 4242)
    clean_after_kill(tmp_path, "def", 4242)  # its lock names another process: left for the stale-lock rule
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc.ckpt", "def.lock"]


def test_a_second_sigterm_does_not_cut_a_workers_unwinding_short():
    """A SIGTERM to the whole process group (`timeout`, a batch system) reaches a worker, and the main process sends
    it another: that one interrupted the first's unwinding, and the run's lock was left behind (3 of 13 tries of
    `timeout -s TERM N repro table9`)."""
    from repro.runtime.interrupt import _worker_sigterm, training

    with training():
        with pytest.raises(KeyboardInterrupt):
            _worker_sigterm(signal.SIGTERM, None)
        try:
            _worker_sigterm(signal.SIGTERM, None)  # ignored: the first one is unwinding the run
        except KeyboardInterrupt:
            pytest.fail("a second SIGTERM interrupted the unwinding of the first")
    with training():  # the next run is interrupted afresh
        with pytest.raises(KeyboardInterrupt):
            _worker_sigterm(signal.SIGTERM, None)


def _exits_at_once() -> None:
    pass


def test_a_lock_left_by_a_worker_that_ended_is_removed_when_the_workers_are_stopped(tmp_path):
    """A worker that ended (not killed) with its run's lock still on disk: a signal landed between taking the lock
    and the block that releases it. The lock named a dead process and waited for the stale-lock rule; on another
    host, sharing the folder, for --stale-lock-after seconds."""
    import multiprocessing
    from concurrent.futures import Future

    worker = multiprocessing.get_context("spawn").Process(target=_exits_at_once)
    worker.start()
    worker.join()
    cfg = resolve(ROW, PROFILE, seed=0)
    runs = runs_dir(tmp_path)
    runs.mkdir(parents=True)
    lock = runs / f"{cfg.hash}.lock"
    lock.write_text(json.dumps({"pid": worker.pid, "host": "this"}))
    ended: Future = Future()
    ended.set_exception(KeyboardInterrupt("SIGTERM"))
    slot = local.Slot("cpu/0")

    class Pool:
        _processes = {worker.pid: worker}

    stopped = local._stop_workers({ended: (slot, RunRequest(cfg, "r"))}, {slot.name: Pool()}, tmp_path)
    assert [r.cfg.hash for r in stopped] == [cfg.hash] and not lock.exists()


def test_a_lock_of_a_run_submitted_as_the_signal_came_is_removed_when_the_workers_are_stopped(tmp_path):
    """The signal lands after the scheduler hands a worker its next run and before it notes the run in `running`
    (the SIGHUP case of the subprocess test below stops the table as the first record appears, when the next run is
    handed over): the worker takes the run's lock, is killed as an idle one, and its lock was left for the
    stale-lock rule. Another host's lock, and one naming a process that is not a worker, are left alone."""
    import multiprocessing
    import socket

    worker = multiprocessing.get_context("spawn").Process(target=_exits_at_once)
    worker.start()
    worker.join()
    runs = runs_dir(tmp_path)
    runs.mkdir(parents=True)
    here = socket.gethostname()
    locks = {name: runs / f"{name}.lock" for name in ("handed_over", "other_host", "other_process")}
    locks["handed_over"].write_text(json.dumps({"pid": worker.pid, "host": here}))
    locks["other_host"].write_text(json.dumps({"pid": worker.pid, "host": here + "-not"}))
    locks["other_process"].write_text(json.dumps({"pid": worker.pid + 1, "host": here}))
    runs.joinpath(".handed_over.ckpt.x1.tmp").write_bytes(b"x")

    class Pool:
        _processes = {worker.pid: worker}

    assert local._stop_workers({}, {"cpu/0": Pool()}, tmp_path) == []  # the scheduler knew of no running run
    assert sorted(p.name for p in runs.iterdir()) == ["other_host.lock", "other_process.lock"]


# The subprocess tests: the tiny table (tests/execution/minitable.py), long enough that a signal lands mid-table.
EPOCHS, SAMPLES = 4, 320
PATTERN = re.compile(
    r"mini interrupted: (\d+) runs? recorded, (\d+) interrupted(?: \(([^)]*)\))?, (\d+) not started; "
    r"rerun `(.+)` to resume"
)


def _table(results):
    record = json.loads((results / "smoke" / "mini" / "results.json").read_text())
    return record["metrics"]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole")
    proc = repro(folder / "results", write_manifest(folder, EPOCHS, SAMPLES), "--jobs", "2")
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    return _table(folder / "results")


@pytest.mark.slow
@pytest.mark.parametrize(
    "jobs,signum,group",
    [("2", signal.SIGINT, True), ("1", signal.SIGTERM, False), ("2", signal.SIGHUP, True), ("2", signal.SIGQUIT, True)],
    ids=["ctrl-c jobs 2", "sigterm jobs 1", "closed terminal jobs 2", "ctrl-backslash jobs 2"],
)
def test_a_signal_stops_the_table_in_seconds_and_a_rerun_completes_it_identically(tmp_path, whole, jobs, signum, group):
    """Issue 41, item 10: a closed terminal (SIGHUP) exited 129 with no "interrupted" line and left locks; SIGQUIT
    dumped core."""
    env = write_manifest(tmp_path, EPOCHS, SAMPLES)
    results = tmp_path / "results"
    runs = results / "runs"
    proc = repro(results, env, "--jobs", jobs)
    deadline = time.time() + 600
    while not (runs.exists() and any(runs.glob("*.json"))):
        assert proc.poll() is None and time.time() < deadline, proc.stdout.read()
        time.sleep(0.05)
    sent = time.monotonic()
    (os.killpg if group else os.kill)(proc.pid, signum)  # a terminal's Ctrl-C reaches the whole group
    out, _ = proc.communicate(timeout=60)
    seconds = time.monotonic() - sent
    print(f"{signal.Signals(signum).name} --jobs {jobs}: exited {proc.returncode} after {seconds:.2f} s")
    assert proc.returncode == 130 and seconds < 10, out
    found = PATTERN.search(out)
    assert found, out
    recorded, interrupted, not_started = int(found[1]), int(found[2]), int(found[4])
    assert recorded + interrupted + not_started == 4 and 1 <= recorded < 4 and f"--jobs {jobs}" in found[5]
    finished = {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert len(finished) == recorded
    kept = sorted((torch.load(p, weights_only=True)["epoch"] for p in runs.glob("*.ckpt")), reverse=True)
    said = re.search(r"kept at epoch ([\d, and]+)", found[3] or "")
    assert sorted(int(e) for e in re.findall(r"\d+", said[1] if said else "")) == sorted(kept)
    assert interrupted >= len(kept)
    left = [p.name for pattern in ("*.lock", ".*.tmp", "*.failed.json") for p in runs.glob(pattern)]
    assert not left, (left, [(p.name, p.read_text()[:300]) for p in runs.glob("*.lock")], out)  # what it left, and why
    assert not (results / "smoke" / "mini" / "results.json").exists()

    again = repro(results, env, "--jobs", jobs)
    out, _ = again.communicate(timeout=900)
    assert again.returncode == 0, out
    assert counts(out) == (4 - recorded, recorded, 0)
    assert {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json") if p.name in finished} == finished
    assert not list(runs.glob("*.ckpt")) and not list(runs.glob("*.invalid-*"))
    assert _table(results) == whole


def test_the_interrupt_summary_counts_a_record_written_after_the_last_booking(tmp_path, monkeypatch):
    """A record written just before the signal, not yet booked by the scheduler, counts as recorded: the
    summary reads the disk ("sigterm jobs 1" once said 0 recorded, 1 interrupted, with the record there)."""
    from repro.core.fsutil import FolderWriter

    cfgs = [resolve(ROW, PROFILE, seed=s) for s in range(3)]
    real = FolderWriter.write_json  # how the records are written

    def then_interrupted(self, path, obj):
        real(self, path, obj)
        if str(path).endswith(f"{cfgs[0].hash}.json"):
            raise KeyboardInterrupt  # SIGTERM between the record's write and its booking

    monkeypatch.setattr(FolderWriter, "write_json", then_interrupted)
    with pytest.raises(RunsInterrupted) as caught:
        execute_runs([RunRequest(c, f"r seed {c.seed}") for c in cfgs], tmp_path, "cpu", jobs=1, settings=EVERY_EPOCH)
    assert (caught.value.recorded, caught.value.checkpoints, caught.value.not_started) == (1, [], 2)
    assert not checkpoint_path(tmp_path, cfgs[0]).exists() and not list(runs_dir(tmp_path).glob("*.lock"))


REPORT = """
import os, signal, sys

import repro.report.summary as summary

real, how = summary.write_report, sys.argv.pop(1)


class Finalized:
    def __del__(self):  # a KeyboardInterrupt raised here is printed ("Exception ignored in") and dropped
        os.kill(os.getpid(), signal.SIGINT)


def interrupted(*args, **kwargs):
    if how == "swallowed":
        Finalized()
    else:
        os.kill(os.getpid(), getattr(signal, how))
    return real(*args, **kwargs)


summary.write_report = interrupted
from repro.cli import main

main()  # the `repro` entry point: the one place SIGTERM and Ctrl-C are handled
"""


@pytest.fixture(scope="module")
def table6_results(tmp_path_factory):
    from typer.testing import CliRunner

    from repro.cli import app

    results = tmp_path_factory.mktemp("report") / "results"
    assert CliRunner().invoke(app, ["table6", "--results-dir", str(results)]).exit_code == 0
    assert CliRunner().invoke(app, ["report", "--results-dir", str(results)]).exit_code == 0
    return results


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "swallowed"])
def test_report_keeps_the_interrupt_contract(table6_results, tmp_path, how):
    """Issue 22, item 5: `repro report` exited 143 with no output on SIGTERM, and on Ctrl-C either 130 silently
    or, when the KeyboardInterrupt landed in a finalizer, 'Exception ignored' and then exit 0."""
    import subprocess
    import sys

    before = (table6_results / "smoke" / "report.md").read_bytes()
    script = tmp_path / "report_interrupted.py"
    script.write_text(REPORT)
    out = subprocess.run(
        [sys.executable, str(script), how, "report", "--results-dir", str(table6_results)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "300"},
        preexec_fn=_terminal_signals,
    )
    assert out.returncode == 130, out.stdout + out.stderr
    assert "report interrupted: the run records and results are untouched" in out.stderr
    assert "rerun `repro report --results-dir" in out.stderr and "Traceback" not in out.stderr
    if how != "swallowed":  # stopped before rendering: the last report stays as it was
        assert (table6_results / "smoke" / "report.md").read_bytes() == before


def _session(sid: int) -> list[str]:
    """The processes of a session still alive (the command under test leads its own): 'pid command' each."""
    out = []
    for proc in os.listdir("/proc"):
        if proc.isdigit():
            try:
                with open(f"/proc/{proc}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                if int(fields[3]) == sid and fields[0] != "Z":
                    with open(f"/proc/{proc}/cmdline", "rb") as fh:
                        out.append(f"{proc} {fh.read().replace(bytes(1), b' ').decode(errors='replace')[:80]}")
            except (OSError, IndexError, ValueError):
                continue
    return out


KILLS, KILL_EPOCHS = 10, 12


def _epochs_done(runs) -> int:
    """Epochs finished and kept, over the table's runs: a record's all, a checkpoint's its epoch."""
    done = 0
    for path in runs.glob("*.json"):
        if not path.name.endswith(".failed.json"):
            done += KILL_EPOCHS
    for path in runs.glob("*.ckpt"):
        try:
            done += torch.load(path, weights_only=True)["epoch"]
        except (OSError, RuntimeError, EOFError):  # replaced or removed while read: counted at the next look
            pass
    return done


@pytest.fixture(scope="module")
def whole_longer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole_longer")
    proc = repro(folder / "results", write_manifest(folder, KILL_EPOCHS, SAMPLES), "--jobs", "2")
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    return _table(folder / "results")


@pytest.mark.slow
def test_ten_sigkills_of_the_main_process_alone_leave_no_process_and_the_table_equals_a_clean_runs(
    tmp_path, whole_longer
):
    """Issue 41, item 2: kill -9 of the main process only (the OOM killer; not the group, as a terminal's Ctrl-C
    is) left both pool workers and the resource tracker alive under pid 1, minutes later. Each kill lands once
    the table has kept a random number of epochs (of 48; the last at 36 at most, so the table never ends first,
    however fast the machine), then after a random part of a second."""
    import random

    env = write_manifest(tmp_path, KILL_EPOCHS, SAMPLES)
    results = tmp_path / "results"
    runs = results / "runs"
    rng, written, gone_after = random.Random(41), {}, []
    targets = sorted(rng.sample(range(1, 3 * KILL_EPOCHS + 1), KILLS))
    for kill, target in enumerate(targets):
        proc = repro(results, env, "--jobs", "2")
        deadline = time.time() + 600
        while not (any(runs.glob("*.lock")) and _epochs_done(runs) >= target):
            assert proc.poll() is None and time.time() < deadline, f"the table ended before kill {kill + 1}"
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.3))
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.wait()  # the main process only: its output pipe stays open while any child holds it
        while _session(proc.pid) and time.monotonic() - killed < 10:
            time.sleep(0.1)
        gone_after.append(time.monotonic() - killed)
        assert _session(proc.pid) == [], f"kill {kill + 1}: alive 10 s after the kill: {_session(proc.pid)}"
        proc.communicate(timeout=60)
        assert not list(runs.glob("*.lock")), f"kill {kill + 1}: locks left: {list(runs.glob('*.lock'))}"
        for path in runs.glob("*.json"):
            assert written.setdefault(path.name, path.stat().st_mtime_ns) == path.stat().st_mtime_ns  # never rewritten
    print(
        f"{len(gone_after)} SIGKILLs of the main process: every process of the command gone "
        f"{min(gone_after):.1f}-{max(gone_after):.1f} s after each; kept epochs at the kills {targets} or more "
        f"of {4 * KILL_EPOCHS}; {len(written)} of 4 runs recorded before the last"
    )
    again = repro(results, env, "--jobs", "2")
    out, _ = again.communicate(timeout=900)
    assert again.returncode == 0, out
    assert {p.name: p.stat().st_mtime_ns for p in runs.glob("*.json") if p.name in written} == written
    assert not list(runs.glob("*.ckpt")) and not list(runs.glob(".*.tmp")) and not list(runs.glob("*.failed.json"))
    assert _table(results) == whole_longer
