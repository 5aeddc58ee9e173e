"""`repro status`: a run's state read from its files alone (record, lock, failure, Slurm marker, checkpoint),
with the same rule for a usable record as `repro run` (repro.execution.record_checks)."""

import json
import os
import socket
import time

import pytest
from fake_records import config, record, write_record  # tests/fake_records.py

from repro.execution.files import runs_dir
from repro.execution.runs import pending_runs
from repro.execution.protocol import RunRequest
from repro.execution.status import run_line
from repro.runtime.locks import LockSettings

SETTINGS = LockSettings(stale_after_s=60)
NOW = 1_000_000.0


def _write(results, name, obj, mtime=NOW):
    path = runs_dir(results) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    os.utime(path, (mtime, mtime))
    return path


def test_each_state_from_the_files_of_a_run(tmp_path):
    a, b, c, d, e, f = (config(seed) for seed in range(6))
    write_record(tmp_path, a, provenance={"executor": {"host": "n1", "name": "slurm"}, "device_type": "cpu"})
    done = run_line(tmp_path, a, "t/a", SETTINGS, NOW)
    assert (done.state, done.detail) == ("done", "12 s on n1 (slurm)")

    holder = {"host": "n2", "pid": 7, "started": NOW - 300, "slurm_array_job_id": "12", "slurm_array_task_id": "3"}
    _write(tmp_path, f"{b.hash}.lock", holder, mtime=NOW - 5)
    running = run_line(tmp_path, b, "t/b", SETTINGS, NOW)
    assert (running.state, running.detail) == ("running", "n2:7 (Slurm job 12_3), for 300 s, last heartbeat 5 s ago")

    _write(
        tmp_path,
        f"{c.hash}.failed.json",
        {"error": "RuntimeError: width must be positive\ntraceback", "executor": {"host": "n3"}, "time": NOW - 50},
    )
    failed = run_line(tmp_path, c, "t/c", SETTINGS, NOW)
    assert (failed.state, failed.detail) == (
        "failed",
        "failed in another process (on n3): RuntimeError: width must be positive",
    )

    _write(tmp_path, f"{d.hash}.lock", {**holder, "started": NOW - 1000}, mtime=NOW - 100)  # no heartbeat for 100 s
    _write(tmp_path, f"{d.hash}.ckpt", "x")
    interrupted = run_line(tmp_path, d, "t/d", SETTINGS, NOW)
    assert interrupted.state == "pending"
    assert interrupted.detail.startswith("interrupted (n2:7 (Slurm job 12_3), for 1000 s, last heartbeat 100 s ago")
    assert interrupted.detail.endswith("a checkpoint is kept: it resumes")

    _write(tmp_path, f"{e.hash}.slurm.json", {"job_id": "12_4"})
    assert run_line(tmp_path, e, "t/e", SETTINGS, NOW).detail == "submitted as Slurm job 12_4"
    assert (run_line(tmp_path, f, "t/f", SETTINGS, NOW).state, run_line(tmp_path, f, "t/f", SETTINGS, NOW).detail) == (
        "pending",
        "",
    )


def test_a_record_wins_over_a_leftover_lock_and_a_truncated_record_does_not_count(tmp_path):
    cfg = config()
    _write(tmp_path, f"{cfg.hash}.json", '{"config_hash": "a", "wall_')
    assert run_line(tmp_path, cfg, "t/a", SETTINGS, NOW).state == "pending"
    _write(
        tmp_path,
        f"{cfg.hash}.lock",
        {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()},
        time.time(),
    )
    assert run_line(tmp_path, cfg, "t/a", SETTINGS).state == "running"
    write_record(tmp_path, cfg)
    assert run_line(tmp_path, cfg, "t/a", SETTINGS).state == "done"


def _edited_accuracy(r):
    r["metrics"]["accuracy"] = 0.99  # plausible, but the digest no longer matches


def _text_accuracy(r):
    r["metrics"]["accuracy"] = "abc"


def _truncated(r):
    return json.dumps(r)[:200]


def _wall_seconds_a_word(r):
    """Issue 41, item 5: with its digest made again, `run` reused this record and `status` crashed formatting it."""
    from repro.execution.record_checks import record_digest

    r["wall_seconds"] = "fast"
    r["digest"] = record_digest(r)


@pytest.mark.parametrize(
    "damage",
    [_edited_accuracy, _text_accuracy, _truncated, _wall_seconds_a_word],
    ids=["edited accuracy", "accuracy 'abc'", "truncated", "wall seconds 'fast', redigested"],
)
def test_status_counts_pending_every_record_run_would_set_aside_and_touches_none(tmp_path, damage, capsys):
    """Issue 22, item 6: status counted such records done while `repro run` redid their runs."""
    cfg = config()
    r = record(cfg)
    text = damage(r)
    path = _write(tmp_path, f"{cfg.hash}.json", text if isinstance(text, str) else json.dumps(r))
    line = run_line(tmp_path, cfg, "t/a", SETTINGS, NOW)
    assert line.state == "pending" and line.detail.startswith("its record is unusable (")
    assert line.detail.endswith("the next run sets it aside and redoes it") and path.exists()
    assert capsys.readouterr().out == ""  # status warns and moves nothing
    batch, todo = pending_runs([RunRequest(cfg, "t/a")], tmp_path)  # what `repro run` decides
    assert [t.cfg.hash for t in todo] == [cfg.hash] and not path.exists()


@pytest.mark.parametrize(
    "error",
    [PermissionError(13, "Permission denied"), OSError(5, "Input/output error")],
    ids=["no permission", "an I/O error"],
)
def test_a_record_that_cannot_be_read_is_named_and_left_alone(tmp_path, monkeypatch, error):
    """Issue 41, item 3: a valid record the user may not read (mode 0600, another owner) was moved aside as
    .invalid and trained again; an NFS read error would do the same. Only content that is wrong is damage."""
    from repro.core import jsonfile

    cfg = config()
    path = write_record(tmp_path, cfg)
    kept = path.read_bytes()
    real = jsonfile.open_regular  # where every record is opened (the suite may run as root, which reads all)

    def refuse(file):
        if file == path:
            raise error
        return real(file)

    monkeypatch.setattr(jsonfile, "open_regular", refuse)
    said = f"cannot read {path}: {error.strerror}; it is left as it is and its run is skipped"
    batch, todo = pending_runs([RunRequest(cfg, "t/a")], tmp_path)  # what `repro run` decides
    assert todo == [] and batch.errors == {cfg.hash: said} and not batch.records
    line = run_line(tmp_path, cfg, "t/a", SETTINGS, NOW)
    assert (line.state, line.detail) == ("failed", said)
    monkeypatch.undo()
    assert path.read_bytes() == kept and sorted(p.name for p in runs_dir(tmp_path).iterdir()) == [path.name]


def test_a_record_of_a_newer_schema_is_kept_and_not_reused(tmp_path):
    """Issue 41, item 15: a record of a newer version (schema 3, valid digest) was moved aside and redone; two
    installs sharing one folder would keep undoing each other's records."""
    cfg = config()
    path = write_record(tmp_path, cfg, schema=3, new_field={"only": "a newer version reads this"})
    kept = path.read_bytes()
    said = (
        f"{path} was written by a newer version (record schema 3; this one reads 2): not reused, and left as it "
        "is; its run is skipped"
    )
    batch, todo = pending_runs([RunRequest(cfg, "t/a")], tmp_path)
    assert todo == [] and batch.errors == {cfg.hash: said}
    assert (
        run_line(tmp_path, cfg, "t/a", SETTINGS, NOW).state,
        run_line(tmp_path, cfg, "t/a", SETTINGS, NOW).detail,
    ) == ("failed", said)
    assert path.read_bytes() == kept and sorted(p.name for p in runs_dir(tmp_path).iterdir()) == [path.name]
