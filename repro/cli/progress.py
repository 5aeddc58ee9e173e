"""What a table command hands the library as `progress`: bars in a terminal, detail behind -v, a log file.

The library calls the methods of a rich Progress (add_task, advance, update, start_task, remove_task,
log); `log` is detail (a FLOP count, a latency, a run waiting for another process's record). In a
terminal the bars show, named by the table running, with an ETA; piped, no bar is drawn (the
commands print one line per table instead). Every line, shown or not, goes to the log file with its
time, so `-v` is never needed after the fact.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.errors import MarkupError
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from repro.core.fsutil import FolderWriter
from repro.core.progress import warnings_to
from repro.core.terminal import print_words


def bars(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


class Reporter:
    """Progress for the library, quiet by default. `table`: the table running, prefixed to its bars."""

    def __init__(
        self,
        console: Console,
        verbose: bool = False,
        log_path: Path | None = None,
        command: str = "",
        root: Path | None = None,
    ) -> None:
        self.console, self.verbose, self.table = console, verbose, ""
        self.live = console.is_terminal and not console.is_dumb_terminal
        self.bars = bars(console) if self.live else None
        self.log_path, self.command = log_path, command
        self.root = root  # the results folder the log lies in: it is appended to only inside it
        self._log: IO[str] | None = None
        self._closing = contextlib.ExitStack()
        self._tasks: dict[TaskID, str] = {}  # piped: no bars, only the count of tasks handed out
        self._of_table: list[TaskID] = []  # the bars added while `table` runs: removed when it ends
        self.warnings: list[Text] = []
        self.warnings_shown = False  # the command has shown `warnings` (repro.cli.run._finish)
        self._warned: set[str] = set()

    def __enter__(self) -> Reporter:
        if self.log_path is not None:  # any locale (BYTES_OR_MARK); never through a symbolic link
            writer = FolderWriter(self.root or self.log_path.parent)
            self._log = self._closing.enter_context(writer.append(self.log_path))
            self._write(f"== {self.command} (host {socket.gethostname()}, pid {os.getpid()})")
            # The library's warnings (a record set aside as damaged) into the log too, and last on the screen
            self._closing.enter_context(warnings_to(lambda text: self.warn("warning", text, "yellow")))
        if self.bars is not None:
            self.bars.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bars is not None:
            self.bars.stop()
        if self._log is not None:
            self._closing.close()
            self._log = None
        if exc[0] is not None and not self.warnings_shown:  # stopped before the command showed them
            from repro.cli.common import err

            for line in self.warnings:
                print_words(err, line)

    def _write(self, text: str) -> None:
        if self._log is not None:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            for line in text.splitlines() or [""]:
                self._log.write(f"{stamp} {line}\n")
            self._log.flush()

    def _show(self, text: Text) -> None:
        print_words(self.bars.console if self.bars is not None else self.console, text)

    # The rich Progress methods the library calls.
    def add_task(self, description: str, total: float | None = None, start: bool = True, **kw: Any) -> TaskID:
        if self.table and not description.strip().startswith(self.table):
            description = f"{self.table} {description}"
        if self.bars is not None:
            task = self.bars.add_task(description, total=total, start=start, **kw)
        else:
            task = TaskID(len(self._tasks))
            self._tasks[task] = description
        if self.table:
            self._of_table.append(task)
        return task

    def end_table(self) -> None:
        """The table has ended: its bars go (its summary line says how it went)."""
        if self.bars is not None:
            for task in self._of_table:
                if task in self.bars.task_ids:
                    self.bars.remove_task(task)
        self._of_table.clear()
        self.table = ""

    def advance(self, task: TaskID, advance: float = 1) -> None:
        if self.bars is not None:
            self.bars.advance(task, advance)

    def update(self, task: TaskID, **kw: Any) -> None:
        if self.bars is not None:
            self.bars.update(task, **kw)

    def start_task(self, task: TaskID) -> None:
        if self.bars is not None:
            self.bars.start_task(task)

    def remove_task(self, task: TaskID) -> None:
        if self.bars is not None:
            self.bars.remove_task(task)

    def log(self, text: str) -> None:
        """Detail: shown with -v, always in the log file. `text` may hold rich markup."""
        try:
            line = Text.from_markup(text)
        except MarkupError:  # a path or a list in brackets, not markup
            line = Text(text)
        self._write(line.plain)
        if self.verbose:
            self._show(line)

    # What the commands print through it.
    def say(self, line: Text | str) -> None:
        """A line of the command's own (a table's summary): shown, and in the log file."""
        line = line if isinstance(line, Text) else Text(line)
        self._write(line.plain)
        self._show(line)

    def warn(self, kind: str, text: str, style: str = "red") -> None:
        """A warning or an error ("problem", "error"): in the log file now, shown after the summaries
        (`warnings`), once: the same text under another kind (a FLOP check a table repeats) is not added."""
        if text in self._warned:
            return
        self._warned.add(text)
        line = Text.assemble((f"{kind}: ", style), text)
        self._write(line.plain)
        self.warnings.append(line)

    def record(self, text: str) -> None:
        """Into the log file only (what the command prints once the bars are gone)."""
        self._write(text)
