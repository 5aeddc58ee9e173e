"""JSON read from a folder someone else may have filled: bounded, regular files only, never blocking.

Run records, a table's results.json, timings.json, locks and markers are read by `load`, which refuses

    a file larger than its cap    (a 200 MB record would take over a gigabyte to parse), with the cap named
    nesting deeper than MAX_DEPTH (400 KB of "[" made json raise RecursionError)
    anything but a regular file   (a FIFO would block the read forever; it is opened O_NONBLOCK, then fstat-ed)
    bytes that are not UTF-8 JSON

with JsonUnreadable, whose `damaged` says whether the content is wrong (the callers set such a file aside, or
leave it out and name it) or the system refused to open it (permission, an I/O error: not damage, so the file is
left as it is). An absent file raises FileNotFoundError. Torch-free.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 64 << 20  # timings.json, markers, caches: kilobytes in use
RECORD_MAX_BYTES = 32 << 20  # a run record: about 2 MB at 1000 classes x 256 experts of routing counts
RESULT_MAX_BYTES = 256 << 20  # a table's results.json repeats its runs' routing counts: tens of MB at most
MAX_DEPTH = 64  # the deepest file written here nests about 10 levels


class JsonUnreadable(ValueError):
    """A JSON file that cannot be used: `reason` says why in a few words; `damaged` is False when the system
    refused to open it (the content may be fine), True for content that is wrong or not a regular file."""

    def __init__(self, path: str | Path, reason: str, damaged: bool = True, strerror: str = "") -> None:
        self.path, self.reason, self.damaged, self.strerror = Path(path), reason, damaged, strerror
        super().__init__(f"{path}: {reason}")

    @classmethod
    def refused(cls, path: Path, cause: OSError) -> JsonUnreadable:
        """The system would not open or read it: not damage."""
        error = cause.strerror or str(cause)
        return cls(path, f"it cannot be read ({error})", damaged=False, strerror=error)


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def open_regular(path: Path) -> int:
    """A read-only fd of `path`, opened without blocking (a FIFO with no writer would wait forever)."""
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))


def read_bytes(path: str | Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; JsonUnreadable otherwise, FileNotFoundError if absent."""
    path = Path(path)
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise JsonUnreadable.refused(path, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a file")
            raise JsonUnreadable(path, f"it is {kind}, not a regular file")
        if st.st_size > max_bytes:
            raise JsonUnreadable(
                path, f"it holds {st.st_size / 2**20:.0f} MiB, over the {max_bytes / 2**20:.0f} MiB this file may hold"
            )
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > max_bytes:  # grew since fstat
                raise JsonUnreadable(path, f"it holds over the {max_bytes / 2**20:.0f} MiB this file may hold")
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise JsonUnreadable.refused(path, exc) from None
    finally:
        os.close(fd)


def parse(data: bytes, path: str | Path, max_depth: int = MAX_DEPTH) -> Any:
    """UTF-8 JSON bytes as data, nested at most `max_depth` deep; JsonUnreadable naming `path` otherwise."""
    try:
        value = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise JsonUnreadable(path, f"it nests deeper than {max_depth} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise JsonUnreadable(path, f"not valid JSON ({exc})") from None
    if depth(value) > max_depth:
        raise JsonUnreadable(path, f"it nests deeper than {max_depth} levels")
    return value


def load(path: str | Path, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON in `path`, bounded (see the module's docstring)."""
    return parse(read_bytes(path, max_bytes), path, max_depth)


def depth(value: Any) -> int:
    """How deep lists and objects nest in `value` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest
