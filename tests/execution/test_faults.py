"""The faults a probe of `repro run` found (issue 22, items 1 to 4), each from its reproduction: one clear line
and no traceback, nothing recorded touched, and a plain rerun afterwards recovers the same records.

The tiny table of tests/execution/minitable.py, as a process. A folder is made unwritable with chattr +i as
root (who ignores permission bits) and chmod otherwise; the full disk is a small tmpfs, which needs root.
"""

import contextlib
import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from repro.execution.files import runs_dir
from repro.execution.protocol import RunRequest
from repro.execution.runs import execute_runs, record_path
from repro.core.fsutil import WriteFailed

from .minitable import counts, repro, write_manifest

pytestmark = pytest.mark.slow  # every test here runs `repro` as a process


@contextlib.contextmanager
def unwritable(folder):
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        undo = lambda: folder.chmod(0o755)  # noqa: E731
    else:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
            pytest.skip("running as root and chattr +i does not work here: no way to make a folder unwritable")
        undo = lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)  # noqa: E731
    try:
        yield folder
    finally:
        undo()


def _run(results, env, *args, timeout=600):
    proc = repro(results, env, *args)
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


@pytest.mark.parametrize("where", ["runs", "smoke/mini"])
def test_an_unwritable_folder_of_the_results_is_refused_before_any_work(tmp_path, where):
    """Issue 22, item 1: with only runs/ unwritable, `repro run` died with a PermissionError traceback from the
    lock; with only the table's folder unwritable, it trained and recorded, then failed on results.json."""
    env = write_manifest(tmp_path, epochs=1, train_samples=64)
    results = tmp_path / "results"
    folder = results / where
    with unwritable(folder):
        code, out = _run(results, env)
    assert code == 2 and "Traceback" not in out, out
    said = " ".join(out.split())  # the error wraps at words at 80 columns
    assert f"cannot write in {folder}:" in said and "make it writable" in said and "nothing was run" in said, out
    assert not list(runs_dir(results).glob("*.json"))
    code, out = _run(results, env)
    assert code == 0 and counts(out) == (4, 0, 0), out


def test_a_disk_that_fills_mid_run_stops_with_one_line_and_a_rerun_resumes(tmp_path):
    """Issue 22, item 2: the checkpoint write failed, then writing the failure record failed too: three chained
    tracebacks."""
    if os.geteuid() != 0:
        pytest.skip("a small file system needs root to mount")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300m", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        env = write_manifest(tmp_path, epochs=6, train_samples=320)
        results = disk / "results"
        proc = repro(results, env)
        deadline = time.time() + 600
        while not (runs_dir(results).exists() and list(runs_dir(results).glob("*.json"))):
            assert proc.poll() is None and time.time() < deadline, proc.stdout.read()
            time.sleep(0.05)
        first = {p.name: p.read_bytes() for p in runs_dir(results).glob("*.json")}
        filler = disk / "filler"
        for _ in range(20):  # the run writes on meanwhile: take what is free at each try, until the disk is full
            if subprocess.run(["fallocate", "-l", str(shutil.disk_usage(disk).free), str(filler)]).returncode == 0:
                break
            filler.unlink(missing_ok=True)
        else:
            raise AssertionError("could not fill the disk")
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 1 and "Traceback" not in out, out
        assert out.count("error:") == 1, out
        said = " ".join(out[out.index("error:") :].split())  # the one error, last, wrapped at words at 80 columns
        assert "No space left on device" in said and "free space on the disk" in said, out
        assert "every finished run record is kept" in said, out
        assert {p.name: p.read_bytes() for p in runs_dir(results).glob("*.json") if p.name in first} == first
        assert not list(runs_dir(results).glob("*.lock")) and not list(runs_dir(results).glob("*.failed.json"))
        filler.unlink()
        again = repro(results, env)
        out, _ = again.communicate(timeout=900)
        assert again.returncode == 0, out
        trained, reused, _ = counts(out)
        assert trained + reused == 4 and reused >= len(first)
    finally:
        subprocess.run(["umount", "-l", str(disk)])


@pytest.mark.parametrize(
    "content",
    [
        {"host": socket.gethostname(), "pid": "abc"},
        {"host": socket.gethostname(), "pid": 99999999999999999999},
        {"host": socket.gethostname(), "pid": -1},
        os.urandom(64),
    ],
    ids=["pid abc", "pid too large", "pid -1", "random bytes"],
)
def test_a_malformed_lock_is_named_by_status_and_taken_over_by_run(tmp_path, content):
    """Issue 22, items 3 and 4: such a lock crashed `run` and `status` on every rerun (ValueError,
    OverflowError), was taken as alive (pid -1), or was waited on for 600 s as 'held by ?:?'."""
    env = write_manifest(tmp_path, epochs=1, train_samples=64)
    results = tmp_path / "results"
    code, out = _run(results, env)
    assert code == 0, out
    victim = sorted(runs_dir(results).glob("*.json"))[0]
    victim.unlink()
    lock = victim.with_suffix(".lock")
    lock.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    old = time.time() - 60
    os.utime(lock, (old, old))
    status = subprocess.run(
        [sys.executable, "-m", "repro", "status", "mini", "--results-dir", str(results), "-v"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
    assert f"the lock file {lock}, which cannot be used" in " ".join(status.stdout.split()), status.stdout
    code, out = _run(results, env, timeout=120)
    assert code == 0 and "Traceback" not in out, out
    assert f"warning: the lock file {lock} cannot be used" in " ".join(out.split()), out
    assert counts(out) == (1, 3, 0) and victim.is_file() and not lock.exists()


def test_a_full_disk_stops_the_runs_without_a_failure_record(tmp_path, monkeypatch):
    """In process: the write that fails is the checkpoint's; the failure record cannot be written either.
    Neither is a failed run: WriteFailed stops the command, the lock is released, nothing else written."""
    from fake_records import config  # tests/fake_records.py
    from repro.core.fsutil import FolderWriter

    from repro.core.settings import Settings

    every_epoch = Settings(checkpoint_seconds=0.0)  # so that the first write of the cut run is its checkpoint
    done, cut = config(0), config(1)
    execute_runs([RunRequest(done, "done")], tmp_path, "cpu", settings=every_epoch)
    kept = record_path(tmp_path, done).read_bytes()

    def full(self, files):  # every checkpoint, record and failure is written through FolderWriter.replace_set
        raise WriteFailed.of(next(iter(files)), OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))

    monkeypatch.setattr(FolderWriter, "replace_set", full)
    with pytest.raises(WriteFailed) as caught:
        execute_runs([RunRequest(done, "done"), RunRequest(cut, "cut")], tmp_path, "cpu", settings=every_epoch)
    assert str(caught.value).startswith(
        f"cannot write {runs_dir(tmp_path) / cut.hash}.ckpt: No space left on device; "
        f"free space on the disk that holds {runs_dir(tmp_path)}"
    )
    assert record_path(tmp_path, done).read_bytes() == kept
    assert sorted(p.name for p in runs_dir(tmp_path).iterdir()) == [f"{done.hash}.json"]


def test_a_stale_lock_that_cannot_be_removed_skips_its_run_and_the_others_train(tmp_path, monkeypatch):
    """Issue 41, item 12: another user's stale lock in a sticky (1777) runs/ aborted the whole table with a
    PermissionError traceback; the other runs never trained. (As root the sticky bit does not bind: the refusal is
    the file system's answer, made here.)"""
    from pathlib import Path

    from fake_records import config  # tests/fake_records.py
    from repro.runtime.locks import lock_path

    theirs, ours = config(0), config(1)
    runs = runs_dir(tmp_path)
    runs.mkdir(parents=True)
    lock = lock_path(runs, theirs.hash)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout), "token": "x", "started": 0}))
    real = Path.unlink

    def sticky(self, missing_ok=False):
        if self == lock:
            raise PermissionError(1, "Operation not permitted", str(self))
        return real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", sticky)
    batch = execute_runs([RunRequest(theirs, "theirs"), RunRequest(ours, "ours")], tmp_path, "cpu")
    assert batch.counts.trained == 1 and ours.hash in batch.records and theirs.hash not in batch.records
    assert batch.errors[theirs.hash].startswith(
        f"the lock {lock} is stale (its process {dead.stdout.strip()} on "
        "this host has exited), but this user may not remove it"
    )
    assert lock.exists() and not list(runs.glob("*.failed.json"))  # not the run's failure: nothing recorded
