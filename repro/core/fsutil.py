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
"""

from __future__ import annotations

import codecs
import dataclasses
import errno
import json
import math
import os
import re
import socket
import tempfile
from pathlib import Path
from typing import Any, Mapping


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


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}@{socket.gethostname()}.", suffix=".tmp",
                                   dir=path.parent)
    except OSError as exc:
        raise WriteFailed.of(path, exc) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteFailed):
            raise WriteFailed.of(path, exc) from None
        raise


_TEMPORARY = re.compile(r"\.(?P<name>.+?)\.(?P<pid>\d+)@(?P<host>.+)\.[^./]+\.tmp")


def temporary_writer(name: str) -> tuple[int, str] | None:
    """(pid, host) of the process that wrote an atomic write's temporary file of this name; None when the name
    is not one, or is one of before temporary files named their writer (.<name>.<random>.tmp)."""
    found = _TEMPORARY.fullmatch(name)
    return (int(found["pid"]), found["host"]) if found else None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8", BYTES_OR_MARK))


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


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(jsonable(obj), indent=2, sort_keys=True) + "\n")
