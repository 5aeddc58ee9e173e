"""The files of a run in runs/: the temporary files a killed write leaves are removed when runs next start, and the
runs another process holds are polled until they end or are left."""

import os
import socket
import subprocess
import sys
import time

from fake_records import config, write_record  # tests/fake_records.py

from repro.execution.files import poll_waiting, remove_stale_temporaries, runs_dir
from repro.execution.protocol import RunState
from repro.execution.runs import RunRequest, execute_runs
from repro.runtime.locks import LockSettings, RunLock, try_lock

SETTINGS = LockSettings()  # stale after 600 s


def _tmp(results, name, age, size=10):
    path = runs_dir(results) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (time.time() - age, time.time() - age))
    return path


def test_stale_temporary_files_are_removed_when_runs_start_and_live_or_recent_ones_kept(tmp_path, capsys):
    """Issue 41, item 8: after ten kill -9s, runs/ held a 64.6 MB .ckpt.*.tmp and two of about 12 MB, never
    removed."""
    dead = int(
        subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True).stdout
    )
    here = socket.gethostname()
    cfg = config()
    write_record(tmp_path, cfg)
    gone = [
        _tmp(tmp_path, f".{cfg.hash}.ckpt.{dead}@{here}.a1b2.tmp", 700, 3 << 20),  # its writer exited
        _tmp(tmp_path, f".{cfg.hash}.json.{dead}@elsewhere.c3d4.tmp", 700),  # another host's: age decides
        _tmp(tmp_path, f".{cfg.hash}.ckpt.e5f6.tmp", 700),
    ]  # named before temporary files named their writer
    kept = [
        _tmp(tmp_path, f".{cfg.hash}.ckpt.{os.getpid()}@{here}.g7h8.tmp", 700),  # its writer is alive
        _tmp(tmp_path, f".{cfg.hash}.ckpt.{dead}@{here}.i9j0.tmp", 30),  # younger than the lock timeout
        _tmp(tmp_path, f".{cfg.hash}.json.{dead}@elsewhere.k1l2.tmp", 30),
    ]
    batch = execute_runs([RunRequest(cfg, "r")], tmp_path, "cpu")
    assert batch.counts.reused == 1 and not batch.errors
    assert [p.exists() for p in gone] == [False] * 3 and [p.exists() for p in kept] == [True] * 3
    said = capsys.readouterr().out
    assert f"removed 3 temporary file(s) (3.0 MiB) that stopped writes left in {runs_dir(tmp_path)}" in said
    assert remove_stale_temporaries(tmp_path, SETTINGS) == []  # nothing more to remove
    assert remove_stale_temporaries(tmp_path, SETTINGS, now=time.time() + 600) == sorted(kept[1:])


def test_polling_the_held_runs_books_those_that_ended_returns_those_left_and_keeps_those_still_held(tmp_path):
    """Both executors poll the runs another process holds through poll_waiting: the local one queues the runs left
    again, the Slurm one submits them again."""
    held, recorded, left = (config(seed) for seed in range(3))
    write_record(tmp_path, recorded)
    requests = {cfg.hash: RunRequest(cfg, f"r seed {seed}") for seed, cfg in enumerate((held, recorded, left))}
    waiting = {h: (request, time.time()) for h, request in requests.items()}
    lock = try_lock(runs_dir(tmp_path), held.hash, SETTINGS, "r seed 0")
    assert isinstance(lock, RunLock)
    try:
        ended, free = poll_waiting(tmp_path, waiting, SETTINGS)
    finally:
        lock.release()
    assert [(o.run_hash, o.state) for o in ended] == [(recorded.hash, RunState.RECORDED)]
    assert free == [requests[left.hash]]
    assert list(waiting) == [held.hash]
    ended, free = poll_waiting(tmp_path, waiting, SETTINGS)  # its holder released it without a record
    assert (ended, free, waiting) == ([], [requests[held.hash]], {})
