"""Run locks: one holder at a time, a heartbeat while held, stale locks taken over, a lost lock noticed."""

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from repro.runtime.locks import LockLost, LockSettings, RunLock, lock_path, read_holder, stale_reason, try_lock

SETTINGS = LockSettings(stale_after_s=60)


def _foreign_lock(runs, h, **holder):
    """A lock file as another process would have left it."""
    runs.mkdir(parents=True, exist_ok=True)
    path = lock_path(runs, h)
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "theirs", "started": time.time(), **holder}))
    return path


def test_a_held_run_is_refused_to_a_second_taker_and_free_after_release(tmp_path):
    lock = try_lock(tmp_path, "abc", SETTINGS, "t/r seed 0")
    assert isinstance(lock, RunLock)
    holder = json.loads(lock.path.read_text())
    assert (holder["host"], holder["pid"], holder["label"]) == (socket.gethostname(), os.getpid(), "t/r seed 0")
    second = try_lock(tmp_path, "abc", SETTINGS)
    assert isinstance(second, dict) and second["token"] == holder["token"]  # busy: the holder is described
    lock.release()
    assert not lock.path.exists()
    third = try_lock(tmp_path, "abc", SETTINGS)
    assert isinstance(third, RunLock) and third.token != lock.token
    third.release()


def test_the_heartbeat_moves_the_mtime_while_held(tmp_path):
    lock = try_lock(tmp_path, "abc", LockSettings(stale_after_s=2))  # heartbeat every 0.5 s
    os.utime(lock.path, (time.time() - 100, time.time() - 100))
    deadline = time.time() + 5
    while time.time() - read_holder(lock.path)["heartbeat"] > 50 and time.time() < deadline:
        time.sleep(0.05)
    assert time.time() - read_holder(lock.path)["heartbeat"] < 1.0
    lock.release()


def test_a_lock_without_heartbeat_is_taken_over_with_a_warning(tmp_path, capsys):
    path = _foreign_lock(tmp_path, "abc")
    assert isinstance(try_lock(tmp_path, "abc", SETTINGS), dict)  # fresh: busy
    old = time.time() - 61
    os.utime(path, (old, old))
    lock = try_lock(tmp_path, "abc", SETTINGS)
    assert isinstance(lock, RunLock)
    assert "taking over the lock abc.lock of elsewhere:1" in capsys.readouterr().out
    assert "no heartbeat for 61 s" in stale_reason({"heartbeat": old, "pid": 1}, SETTINGS, now=old + 61.4)
    lock.release()


def test_a_lock_of_an_exited_process_on_this_host_is_stale_at_once(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _foreign_lock(tmp_path, "abc", host=socket.gethostname(), pid=int(dead.stdout))
    lock = try_lock(tmp_path, "abc", SETTINGS)
    assert isinstance(lock, RunLock)
    lock.release()
    _foreign_lock(tmp_path, "abc", host=socket.gethostname(), pid=os.getpid())  # alive: not stale
    assert isinstance(try_lock(tmp_path, "abc", SETTINGS), dict)


def test_a_requeued_slurm_task_reclaims_its_own_lock_but_not_another_tasks(tmp_path):
    from repro.core.settings import Launch

    # The task's Slurm job, read where the task starts (repro.execution.slurm.RunTask), from Slurm's environment.
    job = Launch.read({"SLURM_JOB_ID": "17", "SLURM_ARRAY_JOB_ID": "12", "SLURM_ARRAY_TASK_ID": "3"}).slurm
    in_task = dataclasses.replace(SETTINGS, job=job)
    _foreign_lock(tmp_path, "other", slurm_array_job_id="12", slurm_array_task_id="4")
    assert isinstance(try_lock(tmp_path, "other", in_task), dict)
    _foreign_lock(tmp_path, "mine", slurm_array_job_id="12", slurm_array_task_id="3")
    assert isinstance(try_lock(tmp_path, "mine", SETTINGS), dict)  # outside that task: a live lock
    lock = try_lock(tmp_path, "mine", in_task)
    assert isinstance(lock, RunLock) and json.loads(lock.path.read_text())["slurm_array_task_id"] == "3"
    lock.release()


def test_a_holder_whose_lock_was_taken_over_stops_and_leaves_the_new_lock(tmp_path):
    lock = try_lock(tmp_path, "abc", SETTINGS)
    lock.path.unlink()
    _foreign_lock(tmp_path, "abc")  # the new holder's lock
    with pytest.raises(LockLost, match="abc.lock was taken over"):
        lock.ensure_held()
    lock.release()
    assert read_holder(lock.path)["token"] == "theirs"


@pytest.mark.parametrize(
    "content, problem",
    [
        (json.dumps({"host": "vm", "pid": "abc"}), 'its pid "abc" is not a process id'),
        (json.dumps({"host": "vm", "pid": 99999999999999999999}), "its pid 99999999999999999999 is not a process id"),
        (
            json.dumps({"host": "vm", "pid": -1}),
            "its pid -1 is not a process id",
        ),  # os.kill(-1, 0) signals every process
        (json.dumps({"host": "vm", "pid": 7, "started": "noon"}), 'its start time "noon" is not a number'),
        (json.dumps(["vm", 7]), "it holds a JSON list, not a lock"),
        (bytes(range(256)) * 4, "it is not a lock (not JSON text)"),
        (b"", "it is empty"),
    ],
    ids=["pid abc", "pid too large", "pid -1", "start time text", "a list", "random bytes", "empty"],
)
def test_a_malformed_lock_is_named_and_taken_over_after_a_short_grace(tmp_path, capsys, content, problem):
    """Issue 22, items 3 and 4: such locks crashed `run` and `status` (ValueError, OverflowError), were taken as
    alive (pid -1), or were waited on for the whole stale timeout as 'held by ?:?'."""
    path = lock_path(tmp_path, "abc")
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    holder = read_holder(path)
    assert holder["problem"] == problem and holder["file"] == str(path)
    assert stale_reason(holder, SETTINGS, now=holder["heartbeat"] + 5) is None  # maybe being written
    assert isinstance(try_lock(tmp_path, "abc", SETTINGS), dict)
    from repro.runtime.locks import describe_holder

    assert describe_holder(holder) == f"the lock file {path}, which cannot be used: {problem}"
    old = time.time() - SETTINGS.unreadable_grace_s - 1
    os.utime(path, (old, old))
    lock = try_lock(tmp_path, "abc", SETTINGS)  # long before the 60 s stale timeout
    assert isinstance(lock, RunLock)
    warning = capsys.readouterr().out
    assert f"warning: the lock file {path} cannot be used ({problem} after" in warning and "taking it over" in warning
    lock.release()


def test_a_lock_that_cannot_be_read_is_named(tmp_path, monkeypatch):
    from repro.core import jsonfile

    path = lock_path(tmp_path, "abc")
    path.write_text("{}")
    real = jsonfile.open_regular

    def refuse(file):  # what a lock this user may not read does (the suite may run as root, which reads all)
        if file == path:
            raise PermissionError(13, "Permission denied")
        return real(file)

    monkeypatch.setattr(jsonfile, "open_regular", refuse)
    holder = read_holder(path)
    assert holder["problem"] == "it cannot be read (Permission denied)"


def _here(**holder):
    """A lock of this process as a lock of this version writes it: this machine's boot id, this pid namespace, and
    the process's start (clock ticks since boot), read from /proc here."""
    try:
        identity = {
            "boot_id": open("/proc/sys/kernel/random/boot_id").read().strip(),
            "pid_ns": os.readlink("/proc/self/ns/pid"),
            "pid_started": int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]),
        }
    except OSError:
        pytest.skip("/proc does not give this machine's boot id, pid namespace and process start here")
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": time.time(),
        "token": "t",
        **identity,
        **holder,
    }


def test_a_killed_containers_lock_is_taken_over_after_two_heartbeats_not_the_stale_timeout():
    """Issue 41, item 16: the lock of a container killed on this machine (same boot id, another pid namespace,
    its own host name) waited the whole 600 s before it was taken over."""
    settings = LockSettings()  # 600 s
    now = time.time()
    container = _here(host="3f2a9c1d7e5b", pid=23, pid_ns="pid:[4026532999]", pid_started=1)
    assert stale_reason({**container, "heartbeat": now - 20}, settings, now) is None  # a live container beats
    reason = stale_reason({**container, "heartbeat": now - 61}, settings, now)  # two 30 s heartbeats missed
    assert reason == "no heartbeat for 61 s from process 23 of another container on this machine"
    other_machine = {**container, "boot_id": "another-boot", "heartbeat": now - 300}
    assert stale_reason(other_machine, settings, now) is None  # another machine: its clock, the 600 s rule


def test_a_reused_pid_is_not_taken_for_the_holder(tmp_path):
    """A pid in the lock that now names another process (a container's pids restart at 1) is not its holder."""
    settings, now = LockSettings(), time.time()
    assert stale_reason({**_here(), "heartbeat": now}, settings, now) is None  # this very process
    reused = {**_here(pid_started=_here()["pid_started"] - 1), "heartbeat": now}
    assert stale_reason(reused, settings, now) == (
        f"its process {os.getpid()} on this host has exited (the pid now names another process)"
    )
    lock_path(tmp_path, "abc").write_text(json.dumps({k: v for k, v in reused.items() if k != "heartbeat"}))
    lock = try_lock(tmp_path, "abc", settings)
    assert isinstance(lock, RunLock)
    written = json.loads(lock.path.read_text())
    assert {k: written[k] for k in ("boot_id", "pid_ns", "pid_started")} == {
        k: _here()[k] for k in ("boot_id", "pid_ns", "pid_started")
    }
    lock.release()


def test_a_takeover_guard_left_by_a_dead_taker_is_stale_too(tmp_path, capsys):
    """Issue 41, item 4: a stale lock (dead pid) plus the .lock.takeover guard a kill mid-takeover leaves kept the
    run blocked: the guard was honoured for 600 s although its pid was dead."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    path = _foreign_lock(tmp_path, "abc", host=socket.gethostname(), pid=pid)
    guard = path.with_name("abc.lock.takeover")
    guard.write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "started": time.time()}))
    lock = try_lock(tmp_path, "abc", LockSettings())  # stale after 600 s: the guard is seconds old
    assert isinstance(lock, RunLock) and not guard.exists()
    assert f"its process {pid} on this host has exited" in capsys.readouterr().out
    lock.release()
    live = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}  # a taker at work
    _foreign_lock(tmp_path, "abc", host=socket.gethostname(), pid=pid)
    guard.write_text(json.dumps(live))
    assert isinstance(try_lock(tmp_path, "abc", LockSettings()), dict) and guard.exists()


def test_a_stale_lock_this_user_may_not_remove_is_named_with_its_owner(tmp_path, monkeypatch):
    """Issue 41, item 12: another user's stale lock in a sticky (1777) runs/ raised a PermissionError traceback."""
    import pwd
    from pathlib import Path

    from repro.runtime.locks import LockNotRemovable

    path = _foreign_lock(tmp_path, "abc")
    old = time.time() - 61
    os.utime(path, (old, old))
    real = Path.unlink

    def sticky(self, missing_ok=False):
        if self == path:
            raise PermissionError(1, "Operation not permitted", str(self))
        return real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", sticky)
    with pytest.raises(LockNotRemovable) as caught:
        try_lock(tmp_path, "abc", SETTINGS)
    owner = pwd.getpwuid(os.getuid()).pw_name
    assert str(caught.value) == (
        f"the lock {path} is stale (no heartbeat for 61 s (stale after 60 s)), but this user "
        f"may not remove it (Operation not permitted); the run is skipped: {owner} or root "
        "can remove the file"
    )
    assert path.exists() and not path.with_name("abc.lock.takeover").exists()  # our guard is gone again
