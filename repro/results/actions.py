"""The commands that wrote a results profile folder, as data: <results>/<profile>/actions.json. Torch-free.

Each command that writes into a profile folder (verify-all, run, report, appendix, package) records itself when it
ends, however it ends (repro.results.acting): its command line, start and end, how it ended, the commit and the
container it ran from, the files outside the folder it read (manifests, profiles, with their sha256), and which of
the folder's files it created or replaced. Those are found by comparing the folder's listing (size and modification
time of each file) before and after, so no command has to list what it wrote. The folder's RO-Crate is then rebuilt from
this log and the folder's files (repro.results.crate), so each command's entry is merged in, none clobbered.

An entry stays while a file it wrote is still its own; once every file it wrote was replaced by a later command
or removed, it describes nothing present and is dropped. The log is written through the atomic writer, and a
log that cannot be read is started again rather than stopping a command.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from repro.core import jsonfile

ACTIONS_FILE = "actions.json"
CRATE_FILE = "ro-crate-metadata.json"
WORKFLOW_FILE = "reproduce.sh"  # written with the crate (repro.results.crate.workflow_script), by no command
SCHEMA = 1
# Not outputs of a command: the log and the crate describe the others.
NOT_LISTED = frozenset({ACTIONS_FILE, CRATE_FILE})
MAX_BYTES = 16 << 20  # a log larger than this is not one this code wrote


@dataclass(frozen=True)
class Action:
    """One command that wrote into the folder. Times are ISO 8601 with the UTC offset (+00:00)."""

    id: str
    command: str  # "verify-all", "run table1", "report", "appendix", "package"
    argv: list[str]
    started: str
    ended: str
    status: str  # "completed", "failed" (exit 1 or an error), "interrupted"
    commit: str
    version: str
    container: dict[str, str] = field(default_factory=dict)  # {"image": ...} where it ran in one
    reads: dict[str, str] = field(default_factory=dict)  # absolute path of a file outside the folder -> sha256
    wrote: list[str] = field(default_factory=list)  # paths inside the folder, relative to it

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Action:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    """Every regular file under the folder (relative path -> (size, mtime in ns)), but the log, the crate and
    temporary files of atomic writes in progress."""
    out: dict[str, tuple[int, int]] = {}
    if not folder.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or (dirpath == str(folder) and name in NOT_LISTED):
                continue
            path = Path(dirpath, name)
            try:
                stat = path.lstat()
            except OSError:
                continue
            if path.is_symlink() or not path.is_file():
                continue
            out[path.relative_to(folder).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return out


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def container(image: str = "") -> dict[str, str]:
    """The container image this process runs in (`image`: the command's $REPRO_IMAGE, which docker-compose.yml
    sets; "" in a container that does not name it), or {} outside one."""
    image = image.strip()
    inside = Path("/.dockerenv").exists() or Path("/run/.containerenv").exists()
    return {"image": image} if inside or image else {}


def actions_path(folder: Path) -> Path:
    return Path(folder) / ACTIONS_FILE


def load_actions(folder: Path) -> list[Action]:
    """The folder's log, oldest first; [] when it has none or it cannot be read as one."""
    path = actions_path(folder)
    try:
        if path.is_symlink() or path.stat().st_size > MAX_BYTES:
            return []
        doc = jsonfile.load(path, MAX_BYTES)  # a FIFO or a nesting bomb is no log (JsonUnreadable: a ValueError)
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("actions"), list):
            return []
        return [Action.from_dict(a) for a in doc["actions"] if isinstance(a, dict)]
    except (OSError, ValueError, TypeError):
        return []


def owners(actions: list[Action], present: Iterable[str]) -> dict[str, Action]:
    """Each present file -> the last action that wrote it (files no logged action wrote are absent)."""
    present = set(present)
    out: dict[str, Action] = {}
    for action in actions:
        for path in action.wrote:
            if path in present:
                out[path] = action
    return out


def kept(actions: list[Action], present: Iterable[str]) -> list[Action]:
    """The actions that still own a present file, in order."""
    own = {id(a) for a in owners(actions, present).values()}
    return [a for a in actions if id(a) in own]


def command_argv(command: str) -> list[str]:
    """The command line as typed where this process is the `repro` program; else `repro <command>`."""
    import repro

    program = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if (
        program is not None
        and len(sys.argv) > 1
        and (program.name == "repro" or program.resolve() == Path(repro.__file__).with_name("__main__.py").resolve())
    ):
        return ["repro", *sys.argv[1:]]
    return ["repro", *command.split()]
