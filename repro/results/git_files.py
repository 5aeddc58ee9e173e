"""HEAD's commit, and whether the checked-out files differ from the index, read from .git's files without git.

A container image is built without .git's objects: .dockerignore lets only HEAD, the branch refs, the packed
refs and the index into the build context, and the base image need not have git. repro.results.provenance
falls back to this when `git` cannot answer. The index holds each tracked file's blob hash, so a file edited
after the last commit shows as '+dirty' as `git status` would show it; a change staged but not committed
does not (the commit's own tree is not here to compare the index with).
"""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REGULAR = 0o100000  # the index's mode bits of a plain file (symlinks and submodules are not compared)


def head_commit(git_dir: Path) -> str | None:
    """The commit HEAD names: a detached hash, or its branch's, from the loose ref or packed-refs."""
    try:
        head = (git_dir / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head if _SHA.fullmatch(head) else None
        ref = head.removeprefix("ref: ").strip()
        if (git_dir / ref).is_file():
            sha = (git_dir / ref).read_text().strip()
            return sha if _SHA.fullmatch(sha) else None
        packed = (git_dir / "packed-refs").read_text() if (git_dir / "packed-refs").is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref and _SHA.fullmatch(sha):
            return sha
    return None


def index_blobs(git_dir: Path, width: int = 20) -> dict[str, str] | None:
    """path -> blob hash of every tracked plain file in the index (versions 2 and 3; `width`: bytes per hash, 20
    for SHA-1 repositories, 32 for SHA-256 ones); None when there is no index this reads (absent, damaged, or
    version 4's compressed paths)."""
    try:
        data = (git_dir / "index").read_bytes()
    except OSError:
        return None
    if data[:4] != b"DIRC" or len(data) < 12:
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        return None
    blobs, pos = {}, 12
    try:
        for _ in range(count):
            mode = struct.unpack(">I", data[pos + 24 : pos + 28])[0]
            sha = data[pos + 40 : pos + 40 + width].hex()  # after ten 32-bit stat fields
            flags = struct.unpack(">H", data[pos + 40 + width : pos + 42 + width])[0]
            start = pos + 42 + width + (2 if version == 3 and flags & 0x4000 else 0)
            end = data.index(b"\0", start)
            if mode & 0o170000 == _REGULAR:
                blobs[data[start:end].decode("utf-8")] = sha
            pos += (end - pos + 8) // 8 * 8  # the entry and its 1-8 NUL bytes, to a multiple of 8
    except (struct.error, ValueError, UnicodeDecodeError):
        return None
    return blobs


def blob_hash(path: Path, algorithm: str = "sha1") -> str:
    """git's hash of a file's content (`git hash-object`)."""
    content = path.read_bytes()
    return hashlib.new(algorithm, b"blob %d\0" % len(content) + content).hexdigest()


def differs_from_index(root: Path, git_dir: Path, algorithm: str = "sha1") -> bool | None:
    """Whether a tracked file under `root` is missing or differs from its blob in the index; None: no index."""
    blobs = index_blobs(git_dir, hashlib.new(algorithm).digest_size)
    if blobs is None:
        return None
    for name, sha in blobs.items():
        path = root / name
        if not path.is_file() or blob_hash(path, algorithm) != sha:
            return True
    return False


def commit_from_files(root: Path) -> str | None:
    """'<HEAD's commit>', '+dirty' when a tracked file differs from the index, '+unchecked' when there is no
    index to compare with; None when root has no .git folder naming a commit."""
    git_dir = root / ".git"
    sha = head_commit(git_dir) if git_dir.is_dir() else None
    if sha is None:
        return None
    differs = differs_from_index(root, git_dir, "sha1" if len(sha) == 40 else "sha256")
    return sha + {True: "+dirty", False: "", None: "+unchecked"}[differs]
