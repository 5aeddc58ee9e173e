"""A command that writes into a results profile folder, recorded as an action of it (`acting`). Torch-free.

When the command ends, however it ends, its entry joins the folder's action log (repro.results.actions) and the
folder's RO-Crate is rebuilt from the log and the files present (repro.results.crate).
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Iterable, Iterator

from repro.core.fsutil import FolderWriter
from repro.results.actions import (
    SCHEMA,
    WORKFLOW_FILE,
    Action,
    actions_path,
    command_argv,
    container,
    kept,
    listing,
    load_actions,
    now,
    sha256_file,
)
from repro.results.crate import write_crate


def record(folder: Path, action: Action) -> None:
    """Append the action to the folder's log (dropping entries that no longer own a file), then rebuild the crate."""
    files = listing(folder)
    actions = kept([*load_actions(folder), action], files)
    FolderWriter(folder).write_json(actions_path(folder), {"schema": SCHEMA, "actions": [asdict(a) for a in actions]})
    write_crate(folder, actions, files)


def _digests(paths: Iterable[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in paths:
        with contextlib.suppress(OSError):
            out[str(Path(path).resolve())] = sha256_file(Path(path))
    return out


@contextlib.contextmanager
def acting(command: str, folder: Path, reads: Iterable[Path] = (), image: str = "") -> Iterator[None]:
    """Record the command as an action of the profile folder when it ends, however it ends; `reads`: the files
    outside the folder it reads (hashed as it starts); `image`: the container it runs in, as its settings name it."""
    from repro import __version__
    from repro.results.provenance import git_commit

    folder = Path(folder)
    before, started = listing(folder), now()
    read_digests = _digests(reads)
    status = "failed"
    try:
        yield
        status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException as exc:  # typer.Exit and SystemExit carry an exit code; any other error is a failure
        code = getattr(exc, "exit_code", getattr(exc, "code", 1))
        status = "completed" if code in (None, 0) else "failed"
        raise
    finally:
        after = listing(folder)
        wrote = sorted(p for p, stat in after.items() if before.get(p) != stat and p != WORKFLOW_FILE)
        action = Action(
            f"{started}-{secrets.token_hex(4)}",
            command,
            command_argv(command),
            started,
            now(),
            status,
            git_commit(),
            __version__,
            container(image),
            read_digests,
            wrote,
        )
        with contextlib.suppress(OSError):  # a folder that cannot be written costs its crate only
            record(folder, action)
