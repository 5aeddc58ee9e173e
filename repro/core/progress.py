"""What long work reports its progress to: the command line's Reporter (repro.cli.progress) or nothing.

A structural type, so that training, measuring and executing code can take one without importing the
terminal layer; rich.progress.Progress satisfies it too.
"""

from __future__ import annotations

from typing import Any, Protocol


class Progress(Protocol):
    def add_task(self, description: str, total: float | None = None, start: bool = True, **kw: Any) -> Any: ...

    def advance(self, task: Any, advance: float = 1) -> None: ...

    def update(self, task: Any, **kw: Any) -> None: ...

    def start_task(self, task: Any) -> None: ...

    def remove_task(self, task: Any) -> None: ...

    def log(self, text: str) -> None: ...
