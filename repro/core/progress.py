"""What long work reports its progress to: the command line's Reporter (repro.cli.progress) or nothing.

A structural type, so that training, measuring and executing code can take one without importing the
terminal layer; rich.progress.Progress satisfies it too.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Protocol


class Progress(Protocol):
    def add_task(self, description: str, total: float | None = None, start: bool = True, **kw: Any) -> Any: ...

    def advance(self, task: Any, advance: float = 1) -> None: ...

    def update(self, task: Any, **kw: Any) -> None: ...

    def start_task(self, task: Any) -> None: ...

    def remove_task(self, task: Any) -> None: ...

    def log(self, text: str) -> None: ...


# Where the library's warnings go (a damaged file set aside, a lock taken over): the command's Reporter while one
# holds a log file (repro.cli.progress: into the log now, on the screen with the other warnings, last), else the
# screen at once. A list, not one slot, so that a nested Reporter hands back to the outer one.
_SINKS: list[Callable[[str], None]] = []


def warn(text: str) -> None:
    """One warning of the library's, `text` without its 'warning: ' prefix."""
    if _SINKS:
        _SINKS[-1](text)
    else:
        print(f"warning: {text}", flush=True)


@contextlib.contextmanager
def warnings_to(sink: Callable[[str], None]) -> Iterator[None]:
    """Send the library's warnings to `sink` while the block runs."""
    _SINKS.append(sink)
    try:
        yield
    finally:
        _SINKS.remove(sink)
