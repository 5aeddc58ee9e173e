"""Atomic file writes: a crash leaves either the old file or the new one, never half of one.

A write the machine refuses (no space, a read-only disk, no permission) raises WriteFailed, which
names the file and what to free or fix: it is the machine's fault, not the run's, so the commands
stop on it with that one line instead of recording it as a failed run.

A write goes to a temporary file beside its target, named for its writer (.<name>.<pid>@<host>.<random>.tmp),
and replaces the target once whole: a process killed mid-write (SIGKILL) leaves the temporary file, which
repro.execution.files removes at a later start once it is stale (`temporary_writer` says whose it is).

Text is written through the error handler `BYTES_OR_MARK`, so that no locale stops a write: under a locale
that cannot decode a path's bytes (LC_ALL=C), Python holds them as lone surrogates, which go out as the
bytes they were; a character the output's encoding lacks (an em dash on an ASCII terminal) becomes "?".

A results folder may be shared, or prepared by someone else: `FolderWriter` writes below one folder and never
outside it. It walks to each file one folder at a time from the root (each opened with O_NOFOLLOW, relative to
the one above), so a symbolic link anywhere below the root, or at the file itself, is refused (OutsideFolder)
rather than followed, and no link swapped in between a check and the write can redirect it. Every writer of a
results folder goes through it (tests/test_file_access.py lists them); `atomic_write_bytes` is the same writer
rooted at the file's own folder, for files outside one (caches).
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import json
import math
import os
import re
import secrets
import signal
import socket
import stat
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator, Mapping, TypeVar


class WriteFailed(OSError):
    """A file could not be written. Raised as WriteFailed(errno, strerror, path), like OSError, so it pickles."""

    @classmethod
    def of(cls, path: str | Path, cause: OSError) -> WriteFailed:
        return cls(cause.errno or errno.EIO, cause.strerror or str(cause), str(path))

    def __str__(self) -> str:
        folder = Path(self.filename).parent
        if self.errno in (errno.ENOSPC, errno.EDQUOT):
            fix = f"free space on the disk that holds {folder}"
        elif self.errno == errno.EROFS:
            fix = f"{folder} is on a read-only file system: choose a writable folder"
        elif self.errno in (errno.EACCES, errno.EPERM):
            fix = f"make {folder} writable for this user, or choose another folder"
        else:
            fix = f"check the disk that holds {folder}"
        return f"cannot write {self.filename}: {self.strerror}; {fix}"


BYTES_OR_MARK = "repro.bytes-or-mark"


def _bytes_or_mark(exc: UnicodeError) -> tuple[str | bytes, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    char = exc.object[exc.start]
    if "\udc80" <= char <= "\udcff":  # surrogateescape's form of an undecodable byte
        return bytes([ord(char) - 0xDC00]), exc.start + 1
    return "?", exc.start + 1


codecs.register_error(BYTES_OR_MARK, _bytes_or_mark)


def cannot_create_in(folder: str | Path) -> str | None:
    """Why no file can be created in the existing `folder` (its OS error, in words), or None where one can: tried
    with a temporary file, removed at once, as a command's checks before any work ask."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            return None
    except OSError as exc:
        return str(exc.strerror or exc)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace `path` whole with `data` (a file outside a results folder: a cache); the file itself must not be
    a symbolic link. Writes inside a results folder name the folder: FolderWriter(results_dir)."""
    path = Path(path)
    FolderWriter(path.parent).write_bytes(path, data)


_TEMPORARY = re.compile(r"\.(?P<name>.+?)\.(?P<pid>\d+)@(?P<host>.+)\.[^./]+\.tmp")


def temporary_writer(name: str) -> tuple[int, str] | None:
    """(pid, host) of the process that wrote an atomic write's temporary file of this name; None when the name
    is not one, or is one of before temporary files named their writer (.<name>.<random>.tmp)."""
    found = _TEMPORARY.fullmatch(name)
    return (int(found["pid"]), found["host"]) if found else None


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, encode_text(text))


def encode_text(text: str) -> bytes:
    """Text as the writers store it: UTF-8, with `BYTES_OR_MARK` for what UTF-8 cannot hold."""
    return text.encode("utf-8", BYTES_OR_MARK)


def jsonable(obj: Any) -> Any:
    """Plain JSON data: non-finite floats -> None, tuples -> lists, keys -> str, dataclasses and
    NumPy scalars -> their values (NumPy is not imported here: its scalars answer ``.item()``)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if all(type(v) is int for v in obj):  # the bulk of a record: expert usage counts per class
            return list(obj)
        return [jsonable(v) for v in obj]
    if type(obj).__module__ == "numpy" and hasattr(obj, "item"):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None  # JSON has no NaN/inf; a missing value reads as null
    return obj


def json_text(obj: Any) -> str:
    """`obj` as the writers store JSON: plain (jsonable), indented, keys sorted."""
    return json.dumps(jsonable(obj), indent=2, sort_keys=True) + "\n"


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json_text(obj))


class OutsideFolder(WriteFailed):
    """A write FolderWriter refused because it would land outside its folder: a symbolic link on the way, or a
    path that is not below the folder. Raised as OutsideFolder(errno, why, path), so it pickles as WriteFailed."""

    def __str__(self) -> str:
        fix = ": replace the link with a folder or file of its own" if self.errno == errno.ELOOP else ""
        return (
            f"refused to write {self.filename}: {self.strerror}; a results folder's files are written only "
            f"inside it{fix}"
        )


_PathT = TypeVar("_PathT", bound=str | Path)  # replace_set's keys: a dict[Path, bytes] is no Mapping[str | Path, bytes]

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class FolderWriter:
    """Writes files below `root` and nowhere else.

        writer = FolderWriter(results_dir)
        writer.write_json(results_dir / "runs" / "ab12.json", record)    replaced whole (temporary file, rename)
        writer.write_bytes(path, data), writer.write_text(path, text)    the same, for bytes and text
        writer.replace_set({path: data, ...})                           several files replaced together
        with writer.append(path) as fh: fh.write(line)                 a log: O_APPEND, never truncated
        writer.create(path, data)                                      only if absent (O_EXCL): False if it exists
        writer.remove(path)                                            unlink, if present

    Every path must lie below `root`; the folders between are made as needed. `root` itself may be a symbolic
    link (the user chose it); anything below it that is one (a folder on the way, or the file) is refused with
    OutsideFolder, and any other refusal of the disk raises WriteFailed naming the file."""

    root: Path

    def write_bytes(self, path: str | Path, data: bytes) -> Path:
        self.replace_set({path: data})
        return Path(path)

    def write_text(self, path: str | Path, text: str) -> Path:
        return self.write_bytes(path, encode_text(text))

    def write_json(self, path: str | Path, obj: Any) -> Path:
        return self.write_text(path, json_text(obj))

    def replace_set(self, files: Mapping[_PathT, bytes]) -> list[Path]:
        """Replace each file with its data, as a set: every file is written whole first, then all are renamed
        into place while Ctrl-C and termination signals wait, so an interrupt leaves the old set or the new one."""
        staged: list[list[Any]] = []  # [folder fd, temporary name ("" once renamed), name, path]
        try:
            for path, data in files.items():
                folder, name = self._open_folder(path)
                try:
                    tmp = self._stage(folder, name, data, Path(path))
                except BaseException:
                    os.close(folder)
                    raise
                staged.append([folder, tmp, name, Path(path)])
            with _signals_held() if len(staged) > 1 else nullcontext():
                for entry in staged:
                    folder, tmp, name, path = entry
                    try:
                        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
                    except OSError as exc:
                        raise WriteFailed.of(path, exc) from None
                    entry[1] = ""
        finally:
            for folder, tmp, _, _ in staged:
                if tmp:
                    with _quiet():
                        os.unlink(tmp, dir_fd=folder)
                os.close(folder)
        return [Path(p) for p in files]

    @contextmanager
    def append(self, path: str | Path) -> Iterator[IO[str]]:
        """The file opened to append text (made if absent), never through a symbolic link."""
        folder, name = self._open_folder(path)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666, dir_fd=folder)
        except OSError as exc:
            raise self._refusal(folder, name, Path(path), path, exc) from None
        finally:
            os.close(folder)
        with os.fdopen(fd, "a", encoding="utf-8", errors=BYTES_OR_MARK) as fh:
            yield fh

    def create(self, path: str | Path, data: bytes) -> bool:
        """Write `path` only if nothing is there (O_EXCL: a lock); False when something is. A write cut short
        (a full disk, Ctrl-C) removes the file, so no half-written one holds the name."""
        folder, name = self._open_folder(path)
        try:
            try:
                fd = os.open(name, _NEW_FILE, 0o644, dir_fd=folder)
            except FileExistsError:
                return False
            except OSError as exc:
                raise self._refusal(folder, name, Path(path), path, exc) from None
            _fill(fd, data, folder, name, path)
            return True
        finally:
            os.close(folder)

    def remove(self, path: str | Path) -> bool:
        """Unlink `path` (a link itself, never its target); False when it was not there."""
        folder, name = self._open_folder(path, make=False)
        if folder < 0:
            return False
        try:
            os.unlink(name, dir_fd=folder)
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise WriteFailed.of(path, exc) from None
        finally:
            os.close(folder)

    def inside(self, path: str | Path) -> tuple[str, ...]:
        """The parts of `path` below the root; OutsideFolder when it is not below it."""
        root, full = os.path.abspath(self.root), os.path.abspath(path)
        if os.path.commonpath([root, full]) != root or full == root:
            raise OutsideFolder(errno.EPERM, f"it is not inside {root}", str(path))
        return Path(os.path.relpath(full, root)).parts

    # --------------------------------------------------------------------------- the walk
    def _open_folder(self, path: str | Path, make: bool = True) -> tuple[int, str]:
        """(an fd of the folder that holds `path`, the file's name), walked from the root without following a
        link; (-1, name) when a folder is missing and `make` is False."""
        *folders, name = self.inside(path)
        try:
            if make:
                Path(self.root).mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if not make:
                return -1, name
            raise WriteFailed.of(path, FileNotFoundError(errno.ENOENT, "no such folder")) from None
        except OSError as exc:
            raise WriteFailed.of(path, exc) from None
        for i, part in enumerate(folders):
            try:
                if make:
                    with _quiet(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                os.close(fd)
                if not make:
                    return -1, name
                raise WriteFailed.of(path, FileNotFoundError(errno.ENOENT, "no such folder")) from None
            except OSError as exc:
                error = self._refusal(fd, part, Path(self.root).joinpath(*folders[: i + 1]), path, exc)
                os.close(fd)
                raise error from None
            os.close(fd)
            fd = child
        return fd, name

    @staticmethod
    def _refusal(folder: int, name: str, shown: Path, path: str | Path, cause: OSError) -> WriteFailed:
        """OutsideFolder when `name` in `folder` (`shown`) is a symbolic link, else WriteFailed for `cause`."""
        try:
            if stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode):
                target = os.readlink(name, dir_fd=folder)
                return OutsideFolder(errno.ELOOP, f"{shown} is a symbolic link (to {target})", str(path))
        except OSError:
            pass
        return WriteFailed.of(path, cause)

    def _stage(self, folder: int, name: str, data: bytes, path: Path) -> str:
        """A temporary file beside `name`, named for its writer (temporary_writer), holding `data`, synced."""
        with _quiet(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode):
                raise self._refusal(folder, name, path, path, OSError(errno.ELOOP, "a symbolic link"))
        prefix = f".{name}.{os.getpid()}@{socket.gethostname()}."
        while True:
            tmp = f"{prefix}{secrets.token_hex(4)}.tmp"
            try:
                fd = os.open(tmp, _NEW_FILE, 0o666, dir_fd=folder)  # the umask applies, as to any new file
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise WriteFailed.of(path, exc) from None
        _fill(fd, data, folder, tmp, path)
        return tmp


def _fill(fd: int, data: bytes, folder: int, name: str, path: str | Path) -> None:
    """Write, sync and close `fd`, the new file `name` in `folder`. A write cut short removes the file, so no
    half-written one is left; the disk's refusal is raised as WriteFailed for `path`."""
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        with _quiet():
            os.unlink(name, dir_fd=folder)
        if isinstance(exc, OSError):
            raise WriteFailed.of(path, exc) from None
        raise


@contextmanager
def _quiet(*kinds: type[BaseException]) -> Iterator[None]:
    try:
        yield
    except kinds or (OSError,):
        pass


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and the termination signals wait until the block ends, then arrive as they would have (only the
    main thread handles signals; elsewhere nothing is held)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    kinds = [
        s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT) if signal.getsignal(s) is not None
    ]  # None: a handler not set from Python, left as it is
    before = {s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in kinds}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)
