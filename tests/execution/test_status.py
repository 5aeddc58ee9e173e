"""`repro status`: a run's state read from its files alone (record, lock, failure, Slurm marker, checkpoint)."""

import json
import os
import socket
import time

from repro.runtime.locks import LockSettings
from repro.execution.status import run_state

SETTINGS = LockSettings(stale_after_s=60)
NOW = 1_000_000.0


def _write(runs, name, obj, mtime=NOW):
    path = runs / name
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    os.utime(path, (mtime, mtime))


def test_each_state_from_the_files_of_a_run(tmp_path):
    _write(tmp_path, "a.json", {"config_hash": "a", "wall_seconds": 12.4,
                                "provenance": {"executor": {"host": "n1", "name": "slurm"}}})
    assert (run_state(tmp_path, "a", "t/a", SETTINGS, NOW).state, run_state(tmp_path, "a", "t/a", SETTINGS, NOW).detail) \
        == ("done", "12 s on n1 (slurm)")

    holder = {"host": "n2", "pid": 7, "started": NOW - 300, "slurm_array_job_id": "12", "slurm_array_task_id": "3"}
    _write(tmp_path, "b.lock", holder, mtime=NOW - 5)
    b = run_state(tmp_path, "b", "t/b", SETTINGS, NOW)
    assert (b.state, b.detail) == ("running", "n2:7 (Slurm job 12_3), for 300 s, last heartbeat 5 s ago")

    _write(tmp_path, "c.failed.json", {"error": "RuntimeError: width must be positive\ntraceback", "executor": {"host": "n3"}})
    c = run_state(tmp_path, "c", "t/c", SETTINGS, NOW)
    assert (c.state, c.detail) == ("failed", "on n3: RuntimeError: width must be positive")

    _write(tmp_path, "d.lock", {**holder, "started": NOW - 1000}, mtime=NOW - 100)  # no heartbeat for 100 s
    _write(tmp_path, "d.ckpt", "x")
    d = run_state(tmp_path, "d", "t/d", SETTINGS, NOW)
    assert d.state == "pending" and d.detail.startswith("interrupted (n2:7 (Slurm job 12_3), for 1000 s, last heartbeat 100 s ago")
    assert d.detail.endswith("a checkpoint is kept: it resumes")

    _write(tmp_path, "e.slurm.json", {"job_id": "12_4"})
    assert run_state(tmp_path, "e", "t/e", SETTINGS, NOW).detail == "submitted as Slurm job 12_4"
    assert (run_state(tmp_path, "f", "t/f", SETTINGS, NOW).state, run_state(tmp_path, "f", "t/f", SETTINGS, NOW).detail) \
        == ("pending", "")


def test_a_record_wins_over_a_leftover_lock_and_a_truncated_record_does_not_count(tmp_path):
    _write(tmp_path, "a.json", '{"config_hash": "a", "wall_')
    assert run_state(tmp_path, "a", "t/a", SETTINGS, NOW).state == "pending"
    _write(tmp_path, "a.lock", {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}, time.time())
    assert run_state(tmp_path, "a", "t/a", SETTINGS).state == "running"
    _write(tmp_path, "a.json", {"config_hash": "a", "wall_seconds": 1})
    assert run_state(tmp_path, "a", "t/a", SETTINGS).state == "done"
