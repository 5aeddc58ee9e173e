"""Ctrl-C (SIGINT) and SIGTERM while runs train: stop the workers, keep what finished, say how to resume.

A closed terminal (SIGHUP) and Ctrl-\\ (SIGQUIT) stop the command the same way: no core dump, no lock left.
The main process decides: Ctrl-C at a terminal reaches the whole process group, so
pool workers ignore SIGINT (and SIGHUP, SIGQUIT) and are stopped by the main process with SIGTERM, which
they turn into KeyboardInterrupt so the run unwinds (its lock released, a
half-written file removed; the checkpoint of its last finished epoch stays, written
atomically). A worker that has not stopped after `GRACE_S` is killed, and its lock
and temporary files are removed here (it cannot remove them itself). A worker whose main process
dies without stopping it (SIGKILL, the OOM killer) notices within PARENT_POLL_S and stops itself the
same way (`exit_with_parent`). Torch-free.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

GRACE_S = 5.0  # a training step is far shorter; a worker still running after this is killed
PARENT_POLL_S = 0.5  # how often a worker looks whether its main process is still there


@dataclass(eq=False)  # an exception stays hashable
class RunsInterrupted(KeyboardInterrupt):
    """The runs stopped on SIGINT/SIGTERM. `checkpoints`: the epoch each interrupted run can resume
    from (None: it had not finished an epoch)."""

    recorded: int = 0
    checkpoints: list[int | None] = field(default_factory=list)
    not_started: int = 0

    def __post_init__(self) -> None:
        super().__init__(self.message())

    def message(self, command: str = "") -> str:
        kept = sorted((e for e in self.checkpoints if e), reverse=True)
        fresh = sum(1 for e in self.checkpoints if not e)
        parts = []
        if kept:
            parts.append(
                f"{'checkpoints' if len(kept) > 1 else 'checkpoint'} kept at epoch "
                + " and ".join(", ".join(map(str, kept)).rsplit(", ", 1))
            )
        if fresh:
            parts.append(f"{fresh} before their first epoch" if fresh > 1 else "1 before its first epoch")
        interrupted = f"{len(self.checkpoints)} interrupted" + (f" ({'; '.join(parts)})" if parts else "")
        resume = f"rerun `{command}` to resume" if command else "rerun the same command to resume"
        return (
            f"interrupted: {self.recorded} {'run' if self.recorded == 1 else 'runs'} recorded, {interrupted}, "
            f"{self.not_started} not started; {resume}"
        )


def command_line(argv: list[str]) -> str:
    """The `repro` command that was run, for the resume hint."""
    import shlex

    return shlex.join(["repro", *argv[1:]])


_received: list[int] = []  # the signals that interrupted the current sigterm_as_interrupt block
# What a terminal sends the whole foreground process group: Ctrl-C, a hangup (closed), Ctrl-\\.
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def _raise_interrupt(signum: int, frame: object) -> None:
    _received.append(signum)
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """In the main process: SIGTERM interrupts like Ctrl-C (a scheduler's or `kill`'s stop request), and so do
    SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\\), which would end the process with its locks held.
    Installed by the `repro` entry point alone (repro.cli.main), never by the library, so that a test
    or a notebook that calls it keeps its own signal handling.
    A KeyboardInterrupt raised while Python runs a finalizer is dropped (Python would print "Exception
    ignored in ..." and go on); the signal is remembered, so the block still ends as interrupted when it
    reaches its end. Ctrl-C, SIGHUP and SIGQUIT stay ignored where the process was started ignoring them (`nohup`,
    a shell's background job).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [signal.SIGTERM] + [s for s in TERMINAL_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _raise_interrupt) for s in wanted}
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: None if issubclass(u.exc_type, KeyboardInterrupt) and _received else hook(u)
    _received.clear()
    try:
        try:
            yield
        except SystemExit:  # the command line's normal end (Typer exits): a dropped signal still interrupts
            raise_pending()
            raise
        raise_pending()
    finally:
        _received.clear()  # outside a block nothing is pending: a later command must not see this one's signal
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)


def raise_pending() -> None:
    """Raise the KeyboardInterrupt of a signal this block received but Python dropped on its way (it landed in
    a finalizer), so that a command can still end as interrupted, with its own message."""
    if _received:
        raise KeyboardInterrupt(signal.Signals(_received[-1]).name)


_training = threading.Event()  # set in a pool worker while it trains a run
_unwinding = threading.Event()  # set once a SIGTERM has interrupted the run being trained


def _worker_sigterm(signum: int, frame: object) -> None:
    if _training.is_set():
        # A second SIGTERM while the first unwinds (a signal to the whole process group, then the main process's
        # own) would cut the unwinding short, its lock left behind: it is ignored.
        if _unwinding.is_set():
            return
        _unwinding.set()
        raise KeyboardInterrupt("SIGTERM")  # unwind the run: lock released, partial writes removed
    os._exit(128 + signum)  # idle: nothing to unwind, and no traceback from the pool's loop


def worker_signals() -> None:
    """In a pool worker (or the manager serving its events): ignore the terminal's signals; the main process stops
    it with SIGTERM, and should the main process die without doing so, it stops itself (exit_with_parent)."""
    for signum in TERMINAL_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_sigterm)
    exit_with_parent()


def exit_with_parent(poll_s: float = PARENT_POLL_S) -> None:
    """Watch, from a thread, for the end of the process that started this one; then stop as its SIGTERM would
    stop this one (a run in training unwinds: its lock released, a half-written file removed, its last
    checkpoint kept) and exit. Without it, pool workers (about 0.9 GB each), the manager and with them the
    resource tracker lived on under pid 1 after a SIGKILL of the main process alone."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        if _training.is_set():
            os.kill(os.getpid(), signal.SIGTERM)  # _worker_sigterm, in the main thread
            deadline = time.monotonic() + GRACE_S
            while _training.is_set() and time.monotonic() < deadline:
                time.sleep(0.05)
        os._exit(128 + signal.SIGTERM)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


@contextlib.contextmanager
def terminal_signals_ignored() -> Iterator[None]:
    """In the main process, while it starts helper processes: an ignored signal is inherited (it survives exec),
    so multiprocessing's resource tracker, which ignores only SIGINT and SIGTERM itself, outlives a hangup or
    Ctrl-\\ that the main process handles (dead, it is relaunched with a traceback per shared block)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in TERMINAL_SIGNALS[1:]}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextlib.contextmanager
def training() -> Iterator[None]:
    """In a pool worker, around one run: a SIGTERM now interrupts the run instead of ending the process."""
    _training.set()
    try:
        yield
    finally:
        _training.clear()
        _unwinding.clear()


def stop_workers(futures: dict, grace_s: float = GRACE_S) -> set[int]:
    """SIGTERM the worker (a multiprocessing.Process) of each running future, wait up to `grace_s` for
    their futures to end, SIGKILL the workers still running; return the pids killed."""
    from concurrent.futures import wait

    live = {f: proc for f, proc in futures.items() if not f.done()}
    for proc in live.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
    try:
        wait(list(live), timeout=grace_s)
    except KeyboardInterrupt:  # a second Ctrl-C: do not wait
        pass
    killed = {proc.pid for f, proc in live.items() if not f.done() and proc.is_alive()}
    for f, proc in live.items():
        if proc.pid in killed:
            proc.kill()
            proc.join(1.0)
    return killed


def clean_after_kill(runs_dir: Path, run_hash: str, pid: int) -> None:
    """What a killed worker leaves of run `run_hash`: its lock (if it names `pid`) and temporary files."""
    from repro.runtime.locks import lock_path, read_holder

    lock = lock_path(runs_dir, run_hash)
    holder = read_holder(lock)
    if holder is not None and holder.get("pid") == pid:
        lock.unlink(missing_ok=True)
    for tmp in runs_dir.glob(f".{run_hash}.*.tmp"):  # fsutil's atomic writes: .<name>.<pid>@<host>.<random>.tmp
        tmp.unlink(missing_ok=True)


def sweep_worker_locks(runs_dir: Path, pids: set[int]) -> None:
    """After this host's worker processes `pids` are gone: every lock naming one of them, with its run's temporary
    files, whatever run it was (one handed over as the signal came is not among those the scheduler knows)."""
    import socket

    from repro.runtime.locks import read_holder

    for lock in runs_dir.glob("*.lock"):
        holder = read_holder(lock)
        if holder is not None and holder.get("host") == socket.gethostname() and holder.get("pid") in pids:
            clean_after_kill(runs_dir, lock.stem, holder["pid"])


def release_own_locks(runs_dir: Path) -> None:
    """On an interrupt, every lock this process still holds is released, with its temporary files.

    A signal can land between taking a run's lock and the block that releases it; the process is
    about to exit, so a lock naming it can only be stale.
    """
    import socket

    from repro.runtime.locks import read_holder

    for lock in runs_dir.glob("*.lock"):
        holder = read_holder(lock)
        if holder is not None and holder.get("host") == socket.gethostname():
            clean_after_kill(runs_dir, lock.stem, os.getpid())


def checkpoint_epoch(path: Path) -> int | None:
    """The last finished epoch a checkpoint holds, None if there is none (or it cannot be read)."""
    if not path.is_file():  # absent, or a FIFO that would block the load
        return None
    import torch

    try:
        return int(torch.load(path, map_location="cpu", weights_only=True)["epoch"])
    except Exception:  # reported as "before its first epoch"; the resume checks it properly
        return None
