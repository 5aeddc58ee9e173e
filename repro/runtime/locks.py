"""One lock file per run on the shared results directory, so that no run is trained twice.

<results>/runs/<hash>.lock is created with O_CREAT|O_EXCL (atomic on a local disk and
on NFSv3+), holds who trains the run (host, pid, Slurm job, start time), and its mtime
is the heartbeat, refreshed by a thread while the run trains. Only the holder reads,
writes or unlinks the run's checkpoint. A lock is stale, and is taken over with a
warning, when its heartbeat is older than `stale_after_s`, when its holder is a process
on this machine that no longer exists, or when it was left by this same Slurm array task
before a requeue. A lock file that cannot be read or names no valid holder (random bytes,
a pid that is not a process id) is named as such and taken over once it is older than
`unreadable_grace_s`: a lock is written in the same instant it is created.

"This machine" is the kernel's boot id, which every container on it shares (the host name where a lock
predates boot ids): a container's host name is new each run unless its compose file fixes one. A process
is known by its pid and start time, so a pid reused by another process is not taken for the holder. A
holder in another pid namespace on this machine (another container, or one that was killed) cannot be
looked up: its lock is stale after two heartbeats' silence (MIN_STALE_AFTER_S), not `stale_after_s`.
Torch-free, so `repro status` can read locks cheaply; its only import from repro is fsutil's WriteFailed.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.core import jsonfile
from repro.core.fsutil import FolderWriter, WriteFailed
from repro.core.progress import warn

DEFAULT_STALE_AFTER_S = 600.0
MAX_HEARTBEAT_S = 30.0  # a holder refreshes its lock at least this often, whatever its own stale_after_s
# A holder beats every MAX_HEARTBEAT_S at the default; a taker that waits less than two beats takes live locks.
MIN_STALE_AFTER_S = 2 * MAX_HEARTBEAT_S
LOCK_MAX_BYTES = 64 << 10  # a lock names its holder in a few hundred bytes
PID_MAX = 2**31 - 1  # pids are positive C ints; Linux's pid_max is at most 2**22


class LockLost(RuntimeError):
    """Another process took this run's lock over (ours was judged stale): stop training it."""


class LockNotRemovable(RuntimeError):
    """A stale lock (or takeover guard) this user may not remove, such as another user's in a sticky folder:
    its run is skipped, and the message names the file and who can remove it."""

    @classmethod
    def of(cls, path: Path, reason: str, cause: OSError) -> LockNotRemovable:
        try:
            import pwd

            owner = pwd.getpwuid(path.stat().st_uid).pw_name
        except (ImportError, KeyError, OSError):
            owner = "its owner"
        return cls(
            f"the lock {path} is stale ({reason}), but this user may not remove it "
            f"({cause.strerror or cause}); the run is skipped: {owner} or root can remove the file"
        )


@dataclass(frozen=True)
class LockSettings:
    stale_after_s: float = DEFAULT_STALE_AFTER_S
    # This process's Slurm job and array task ((key, value) pairs: repro.core.settings.Launch.slurm), which its
    # locks name; a lock that names the same array task was left by it before a requeue. () outside Slurm.
    job: tuple[tuple[str, str], ...] = ()

    @property
    def heartbeat_s(self) -> float:
        return max(0.5, min(MAX_HEARTBEAT_S, self.stale_after_s / 4))

    @property
    def unreadable_grace_s(self) -> float:
        """How long a lock that cannot be read may stay so: its creator writes it right after creating it."""
        return min(10.0, self.stale_after_s)


def stale_after_problem(seconds: float) -> str | None:
    """Why `seconds` cannot be a command's --stale-lock-after (a sentence), or None."""
    if not seconds >= MIN_STALE_AFTER_S:
        return (
            f"--stale-lock-after {seconds:g} is below {MIN_STALE_AFTER_S:g} s, twice the {MAX_HEARTBEAT_S:g} s "
            "between a live run's heartbeats: its lock would be taken over while it trains"
        )
    return None


def lock_path(runs_dir: Path, run_hash: str) -> Path:
    return runs_dir / f"{run_hash}.lock"


def _first_line(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.readline().strip() or None
    except OSError:
        return None


@functools.lru_cache(maxsize=1)  # neither changes while the process lives
def machine_identity() -> dict[str, str]:
    """This machine's boot id and this process's pid namespace, as far as /proc tells ({} where it does not)."""
    out = {"boot_id": _first_line("/proc/sys/kernel/random/boot_id")}
    try:
        out["pid_ns"] = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        pass
    return {k: v for k, v in out.items() if v}


def process_started(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (/proc/<pid>/stat, field 22); None if unknown."""
    line = _first_line(f"/proc/{pid}/stat")
    try:
        return int(line.rsplit(")", 1)[1].split()[19]) if line else None
    except (IndexError, ValueError):
        return None


def holder_identity(label: str = "", executor: str = "local", job: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    started = process_started(os.getpid())
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "executor": executor,
        "label": label,
        "started": time.time(),
        **machine_identity(),
        **({"pid_started": started} if started else {}),
        **dict(job),
    }


def holder_problem(holder: Any) -> str | None:
    """Why a lock's parsed content names no holder (a sentence), or None."""
    if not isinstance(holder, dict):
        return f"it holds a JSON {type(holder).__name__}, not a lock"
    pid = holder.get("pid")
    if isinstance(pid, bool) or not isinstance(pid, int) or not 1 <= pid <= PID_MAX:
        return f"its pid {json.dumps(pid)[:40]} is not a process id"
    for key in (
        "host",
        "token",
        "label",
        "executor",
        "slurm_job_id",
        "slurm_array_job_id",
        "slurm_array_task_id",
        "boot_id",
        "pid_ns",
    ):
        if key in holder and not isinstance(holder[key], str):
            return f"its {key} {json.dumps(holder[key])[:40]} is not text"
    ticks = holder.get("pid_started", 0)
    if isinstance(ticks, bool) or not isinstance(ticks, int):
        return f"its process start {json.dumps(ticks)[:40]} is not a number of clock ticks"
    started = holder.get("started", 0.0)
    if isinstance(started, bool) or not isinstance(started, (int, float)):
        return f"its start time {json.dumps(started)[:40]} is not a number"
    return None


def read_holder(path: Path) -> dict[str, Any] | None:
    """The lock's holder with `heartbeat` (its mtime) added, or None when there is no lock. A lock that
    cannot be read, or names no valid holder, is {"heartbeat", "file", "problem": why}: never an identity."""
    try:
        data = jsonfile.read_bytes(path, LOCK_MAX_BYTES)
        heartbeat = path.stat().st_mtime
    except FileNotFoundError:
        return None
    except (OSError, jsonfile.JsonUnreadable) as exc:  # no permission, an I/O error, a folder, a FIFO, too large
        try:
            heartbeat = path.stat().st_mtime
        except FileNotFoundError:
            return None
        except OSError:
            heartbeat = 0.0
        why = exc.reason if isinstance(exc, jsonfile.JsonUnreadable) else f"it cannot be read ({exc.strerror or exc})"
        return {"heartbeat": heartbeat, "file": str(path), "problem": why}
    try:
        holder = jsonfile.parse(data, path)
        problem = holder_problem(holder)
    except jsonfile.JsonUnreadable as exc:
        not_json = "it is empty" if not data else "it is not a lock (not JSON text)"
        problem = not_json if "JSON" in exc.reason else exc.reason  # else: nested too deep
    if problem is not None:
        return {"heartbeat": heartbeat, "file": str(path), "problem": problem}
    return {**holder, "heartbeat": heartbeat}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_reason(holder: dict[str, Any], settings: LockSettings, now: float | None = None) -> str | None:
    """Why `holder` no longer holds its run, or None while it still does."""
    now = time.time() if now is None else now
    age = now - holder["heartbeat"]
    if "problem" in holder:
        if age > settings.unreadable_grace_s:
            return f"{holder['problem']} after {age:.0f} s (given {settings.unreadable_grace_s:.0f} s to be written)"
        return None  # just created: its creator is writing it
    if age > settings.stale_after_s:
        return f"no heartbeat for {age:.0f} s (stale after {settings.stale_after_s:.0f} s)"
    if "pid" not in holder:
        return None
    if (gone := _exited_here(holder, age, settings)) is not None:
        return gone
    me = dict(settings.job)
    if (
        me
        and "slurm_array_job_id" in me
        and all(holder.get(k) == me[k] for k in ("slurm_array_job_id", "slurm_array_task_id"))
    ):
        return "it is this Slurm array task's own lock from before a requeue"
    if me and "slurm_array_job_id" not in me and holder.get("slurm_job_id") == me["slurm_job_id"]:
        return "it is this Slurm job's own lock from before a requeue"
    return None


def _exited_here(holder: dict[str, Any], age: float, settings: LockSettings) -> str | None:
    """Why a holder on this machine is gone, or None (alive, or on another machine)."""
    here = machine_identity()
    if "boot_id" in holder and "boot_id" in here:
        if holder["boot_id"] != here["boot_id"]:
            return None
    elif holder.get("host") != socket.gethostname():
        return None
    pid = holder["pid"]
    if holder.get("pid_ns", here.get("pid_ns")) != here.get("pid_ns"):  # another container: its pids are not ours
        silence = min(settings.stale_after_s, MIN_STALE_AFTER_S)
        if age > silence:
            return f"no heartbeat for {age:.0f} s from process {pid} of another container on this machine"
        return None
    if not pid_alive(pid):
        return f"its process {pid} on this host has exited"
    started = holder.get("pid_started")
    if started is not None and process_started(pid) not in (None, started):
        return f"its process {pid} on this host has exited (the pid now names another process)"
    return None


def describe_holder(holder: dict[str, Any], now: float | None = None) -> str:
    now = time.time() if now is None else now
    if "problem" in holder:
        return f"the lock file {holder['file']}, which cannot be used: {holder['problem']}"
    who = f"{holder.get('host', '?')}:{holder.get('pid', '?')}"
    if holder.get("slurm_array_job_id"):
        who += f" (Slurm job {holder['slurm_array_job_id']}_{holder.get('slurm_array_task_id', '')})"
    elif holder.get("slurm_job_id"):
        who += f" (Slurm job {holder['slurm_job_id']})"
    since = f", for {now - holder['started']:.0f} s" if "started" in holder else ""
    return f"{who}{since}, last heartbeat {now - holder['heartbeat']:.0f} s ago"


class RunLock:
    """A held lock; `release()` (or leaving the `with` block) removes it if it is still ours."""

    def __init__(self, path: Path, token: str, settings: LockSettings) -> None:
        self.path, self.token, self.settings = path, token, settings
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {path.name}", daemon=True)
        self._thread.start()

    def owned(self) -> bool:
        holder = read_holder(self.path)
        return holder is not None and holder.get("token") == self.token

    def ensure_held(self) -> None:
        if not self.owned():
            raise LockLost(f"the lock {self.path} was taken over by another process; this one stops training the run")

    def _beat(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            if self.owned():
                try:
                    os.utime(self.path)
                except FileNotFoundError:
                    pass

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.owned():
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def try_lock(
    runs_dir: Path, run_hash: str, settings: LockSettings, label: str = "", executor: str = "local"
) -> RunLock | dict[str, Any]:
    """Take the run's lock: a RunLock, or the live holder's description (a dict) when another process has it.
    Raises WriteFailed when the folder refuses the lock file, LockNotRemovable when a stale one may not be removed."""
    try:
        runs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed.of(runs_dir, exc) from None
    path = lock_path(runs_dir, run_hash)
    for _ in range(3):
        token = uuid.uuid4().hex
        if _create(path, {**holder_identity(label, executor, settings.job), "token": token}):
            try:
                return RunLock(path, token, settings)
            except BaseException:  # interrupted before the caller holds it: it could not release it
                path.unlink(missing_ok=True)
                raise
        holder = read_holder(path)
        if holder is None:
            continue  # released between our create and our read
        reason = stale_reason(holder, settings)
        if reason is None:
            return holder
        _take_over(path, holder, reason, settings)
    holder = read_holder(path)
    return holder if holder is not None else {"heartbeat": time.time()}


def _create(path: Path, holder: dict[str, Any]) -> bool:
    """Write the lock only if none is there (O_EXCL, never through a symbolic link). A write cut short (a full disk,
    Ctrl-C) removes it: nobody would release a half-written lock."""
    return FolderWriter(path.parent).create(path, json.dumps(holder, sort_keys=True).encode("utf-8"))


def _take_over(path: Path, holder: dict[str, Any], reason: str, settings: LockSettings) -> None:
    """Remove a stale lock; a second O_EXCL file, the guard, makes sure only one process removes it. A guard
    is stale by the rules of a lock (its taker exited, or was killed mid-takeover): it is removed and taken."""
    guard = path.with_name(path.name + ".takeover")
    if not _create(guard, holder_identity(job=settings.job)):
        g = read_holder(guard)
        if g is None or (why := stale_reason(g, settings)) is None:
            return  # another process is taking the lock over now
        _remove(guard, why)
        if not _create(guard, holder_identity(job=settings.job)):
            return
    try:
        current = read_holder(path)
        if current is not None and current.get("token") == holder.get("token") and stale_reason(current, settings):
            if "problem" in current:
                warn(f"the lock file {path} cannot be used ({stale_reason(current, settings)}); taking it over")
            else:
                warn(f"taking over the lock {path.name} of {describe_holder(current)}: {reason}")
            _remove(path, reason)
    finally:
        guard.unlink(missing_ok=True)


def _remove(path: Path, reason: str) -> None:
    """Unlink a stale lock or guard; LockNotRemovable when this user may not (another user's, in a sticky folder)."""
    try:
        path.unlink(missing_ok=True)
    except PermissionError as exc:
        raise LockNotRemovable.of(path, reason, exc) from None
