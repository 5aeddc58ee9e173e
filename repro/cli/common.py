"""What every command shares: the consoles, its settings, loading with clear errors, printing that fits 80
columns, and the interrupt: a command names what it stopped (CommandInterrupted), the `repro` entry point says
what was kept (repro.cli.main). The options several commands share are declared in repro.cli.options.

A command's environment is read once, as it starts, into one frozen Settings (repro.core.settings; `settings`
below), and an option the user gave replaces its variable here: the library below takes typed arguments.

Heavy modules (torch through the models, matplotlib through the report) are imported inside the
commands that need them, and every name the user typed is checked before they are: `repro --help`,
`repro report` and a typo answer in well under a second.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from contextvars import ContextVar
from enum import IntEnum
from pathlib import Path
from typing import Iterable, Iterator, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from repro.core import environment, terminal
from repro.core.environment import BadEnvironment
from repro.core.settings import Settings
from repro.plan.manifest import Manifest, find_manifest, load_all, load_valid
from repro.spec.profiles import RunDefaults
from repro.core.schema import SchemaError
from repro.core.terminal import Grid, print_words


def _ignore_zero_size() -> None:
    """Unset a COLUMNS or LINES of 0 for this process and the ones it starts. rich reads them itself and takes
    any digits as the terminal's size, so COLUMNS=0 made every line zero cells wide: nothing printed, errors
    included. Called before any console is made; rich then measures the terminal, or takes 80 columns when piped."""
    for name in ("COLUMNS", "LINES"):
        if os.environ.get(name, "").strip().isdigit() and environment.value(name, os.environ) is None:
            del os.environ[name]


_ignore_zero_size()  # before any console is made, Typer's own included
console = Console()
err = Console(stderr=True, soft_wrap=True)  # messages verbatim: paths and commands are not wrapped


class ExitCode(IntEnum):
    """What `repro` exits with (the README's "Exit codes" lists these)."""

    OK = 0
    FAILED = 1  # a table failed, a FLOP count disagreed, a method did not learn (functional), --strict
    BAD_INPUT = 2  # an unknown name, an invalid file, missing data: nothing ran
    SUBMITTED = 3  # --no-wait: runs submitted to Slurm and not awaited; no table written from missing results
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: every finished record kept; the same command resumes


def show(text: str | Text, out: Console | None = None) -> None:
    """Prose: wrapped at words; a word wider than the terminal (a path) is left whole on its own line."""
    print_words(out or console, text)


def paste(text: str, out: Console | None = None) -> None:
    """A command or a path to copy: one line, however wide (the terminal wraps it, the copy is whole)."""
    (out or console).print(terminal.printable(text), soft_wrap=True, highlight=False, markup=False)


def print_grid(grid: Grid, title: str = "", out: Console | None = None) -> None:
    """A table laid out at the terminal's width (repro.core.terminal.fit): nothing cut, dropped columns below."""
    out = out or console
    if title:
        show(Text(title, style="bold"), out)
    terminal.print_grid(out, grid)


SHOWN_UNUSABLE = 5  # unusable run records named one per line; the rest counted


def show_unusable(unusable: dict[Path, str], what: str) -> None:
    """The run records of a folder that are set aside (edited, cut short, unreadable), each with why, the first
    few by name: `what` says what that means for the command's output."""
    if not unusable:
        return
    show(f"{len(unusable)} unusable run record(s) {what}:")
    for path, why in list(unusable.items())[:SHOWN_UNUSABLE]:
        show(f"  {path}: {why}")
    if len(unusable) > SHOWN_UNUSABLE:
        show(f"  and {len(unusable) - SHOWN_UNUSABLE} more")


def error_line(message: str) -> None:
    """An error, wrapped at words within the terminal's width; a path wider than it keeps a line of its own."""
    print_words(err, Text.assemble(("error: ", "bold red"), message))


def fail(message: str, code: int = ExitCode.BAD_INPUT) -> NoReturn:
    error_line(message)
    raise typer.Exit(code)


def making(command: list[str], profile: str | None, given: Path | None) -> str:
    """The command that writes what a reading command found missing, at the profile and into the folder asked
    for (a bare `repro verify-all` writes smoke's, into ./results): `given` is --results-dir as typed, None if not."""
    return shlex.join(
        ["repro", *command, *(["--profile", profile] if profile else []), *(["-o", str(given)] if given else [])]
    )


def refuse_a_file(results_dir: Path) -> None:
    """A --results-dir (or $REPRO_RESULTS) that names a file is refused: read as a folder, a command found nothing
    in it and went on as if it were empty (listed every run pending, priced a cold run, said results.json could not
    be read)."""
    if results_dir.exists() and not results_dir.is_dir():
        fail(f"--results-dir {results_dir} is a file, not a results folder")


def fail_all(messages: list[str], code: int = ExitCode.BAD_INPUT) -> NoReturn:
    """Several problems found at once: one error each, then exit."""
    for text in messages[:-1]:
        error_line(text)
    fail(messages[-1], code)


def message(exc: BaseException) -> str:
    """An exception's text as written (KeyError's str() adds quotes around it)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


_COMMAND: ContextVar[Settings | None] = ContextVar("repro_command_settings", default=None)


def _read() -> Settings:
    """The process's environment as Settings; a value that does not parse ends the command with exit 2, naming
    every such variable."""
    try:
        return Settings.read(os.environ)
    except BadEnvironment as exc:
        fail_all(exc.problems)


def read_settings(ctx: typer.Context) -> Settings:
    """A command's settings, read once, where it starts (`repro <id>` resolves its id with them, before the
    callback runs), and kept on its root context."""
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = _read()
    return root.obj


def begin(ctx: typer.Context) -> None:
    """Where a command starts (the `repro` callback): its settings, for `settings()` until the command ends."""
    token = _COMMAND.set(read_settings(ctx))
    ctx.call_on_close(lambda: _COMMAND.reset(token))


def settings() -> Settings:
    """This command's settings (read once: `begin`); a command function called outside `repro` (a test, a
    notebook) reads its process's environment here."""
    return _COMMAND.get() or _read()


def run_defaults(deterministic: bool = False) -> RunDefaults:
    """The threads and deterministic mode of runs whose profile gives neither: this command's settings
    ($OMP_NUM_THREADS, else 1; $REPRO_DETERMINISTIC); --deterministic turns it on."""
    own = settings()
    return RunDefaults(own.threads or 1, own.deterministic or deterministic)


def manifests_folder(manifests: Path | None) -> Path | None:
    """--manifests, else $REPRO_MANIFESTS, else None: the package's own."""
    return manifests or settings().manifests


def profiles_file(profiles: Path | None) -> Path | None:
    """--profiles, else $REPRO_PROFILES, else None: the shipped profiles alone."""
    return profiles or settings().profiles


def readings_file(readings: Path | None) -> Path | None:
    """--readings, else $REPRO_READINGS, else None: the shipped readings alone."""
    return readings or settings().readings


def load_one(
    manifest_id: str,
    manifests: Path | None = None,
    profiles: Path | None = None,
    defaults: RunDefaults | None = None,
    readings: Path | None = None,
) -> Manifest:
    try:
        return find_manifest(
            manifest_id,
            manifests_folder(manifests),
            profiles_file(profiles),
            defaults or run_defaults(),
            readings_file(readings),
        )
    except (KeyError, SchemaError) as exc:
        fail(message(exc))


def load_every(
    manifests: Path | None = None,
    profiles: Path | None = None,
    defaults: RunDefaults | None = None,
    readings: Path | None = None,
) -> list[Manifest]:
    try:
        return load_all(
            manifests_folder(manifests), profiles_file(profiles), defaults or run_defaults(), readings_file(readings)
        )
    except SchemaError as exc:
        fail(str(exc))


def load_some(
    ids: list[str] | None,
    manifests: Path | None = None,
    profiles: Path | None = None,
    defaults: RunDefaults | None = None,
    readings: Path | None = None,
) -> list[Manifest]:
    """The manifests named (every one, when none is), failing on the first unknown or invalid one; the
    profiles attached under `defaults` (else this command's settings'), the readings of `readings` (else
    $REPRO_READINGS) added to the shipped ones."""
    defaults = defaults or run_defaults()
    if not ids:
        return load_every(manifests, profiles, defaults, readings)
    return [load_one(i, manifests, profiles, defaults, readings) for i in ids]


def load_valid_or_fail(
    manifests_dir: Path | None, profiles: Path | None, readings: Path | None = None
) -> tuple[list[Manifest], dict[str, str]]:
    """Every valid manifest (with the profiles attached) and, by id, why the others are invalid."""
    try:
        manifests, invalid = load_valid(
            manifests_folder(manifests_dir), profiles_file(profiles), run_defaults(), readings_file(readings)
        )
    except SchemaError as exc:  # the profiles file, or a readings file of one's own
        fail(str(exc))
    return manifests, {mid: exc.problems[0] for mid, exc in invalid.items()}


def check_profile(manifests: list[Manifest], profile: str) -> None:
    """Refuse an unknown profile name before any work, naming the closest."""
    for m in manifests:
        try:
            m.profile(profile)
        except KeyError as exc:
            fail(message(exc))


def check_results_dir(results_dir: Path, profile: str | None = None, manifest_ids: Iterable[str] = ()) -> None:
    """Every folder the command will write (runs/, the profile's, each table's) must take a file."""
    from repro.results.measurements import ResultsDirError, check_results_dir as check

    try:
        check(results_dir, profile=profile, manifest_ids=manifest_ids)
    except ResultsDirError as exc:
        fail(f"{exc}; nothing was run")


def write_failed(exc: OSError) -> NoReturn:
    """A file the disk refused (repro.core.fsutil.WriteFailed): one line; the records already written stay."""
    fail(f"{exc}; every finished run record is kept, and the same command resumes once it can write", 1)


class CommandInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a command: what it was doing and where its records are, for the entry
    point's message. Still a KeyboardInterrupt: called from a test or a notebook, it stops them."""

    def __init__(self, where: str, results_dir: Path | None, cause: BaseException, message: str = "") -> None:
        super().__init__(where)
        self.where, self.results_dir, self.cause, self.message = where, results_dir, cause, message


def interrupted_message(exc: KeyboardInterrupt, argv: list[str]) -> str:
    """Release this process's locks; say what was kept and how to resume."""
    from repro.runtime.interrupt import RunsInterrupted, command_line, release_own_locks

    if not isinstance(exc, CommandInterrupted):  # a command that keeps nothing (list, plan, flops)
        return "interrupted"
    if exc.message:  # a command that writes no run record (status, report) says what it left
        return exc.message
    if exc.results_dir is not None:
        from repro.execution.records import runs_dir

        release_own_locks(runs_dir(exc.results_dir))
    command = command_line(argv)
    if isinstance(exc.cause, RunsInterrupted):
        return f"{exc.where} {exc.cause.message(command)}"
    # outside training (FLOP counts, tables): every finished record is on disk
    return f"{exc.where} interrupted; every finished run record is kept; rerun `{command}` to resume"


def read_files(manifests: list[Manifest], profiles: Path | None = None) -> list[Path]:
    """The files outside the results folder that a command over these manifests reads: each manifest, the shipped
    profiles and a file of one's own (--profiles or $REPRO_PROFILES), the shipped readings and the file of one's own
    the manifests were read with (--readings or $REPRO_READINGS)."""
    from repro.spec.profiles import SHIPPED_PROFILES
    from repro.spec.readings import SHIPPED_READINGS

    own = profiles_file(profiles)
    readings = next((m.own_readings.path for m in manifests if m.own_readings is not None), None)
    return (
        [Path(m.path) for m in manifests if m.path]
        + [SHIPPED_PROFILES]
        + ([Path(own)] if own else [])
        + [SHIPPED_READINGS]
        + ([readings] if readings else [])
    )


def counts_line(run_counts) -> str:
    from repro.execution.runs import RunCounts

    return (run_counts or RunCounts()).line()


@contextlib.contextmanager
def recording(
    command: str, results_dir: Path, profile: str, heavy: bool = True, reads: Iterable[Path] = ()
) -> Iterator[None]:
    """Phase timings of the command into <results>/<profile>/timings.json (repro.results.timings), and the command
    as an action of the folder's RO-Crate (repro.results.actions: `reads`, the files outside the folder it reads);
    `heavy`: the command trains or counts, so torch's import is timed as start-up rather than inside its first phase."""
    from repro.results import timings
    from repro.results.acting import acting
    from repro.results.measurements import profile_dir

    folder = profile_dir(results_dir, profile)
    # The crate hashes timings.json and the report's files: written after them, outside the time they record.
    with acting(command, folder, reads, settings().image), timings.recording(command, results_dir, profile):
        if heavy:
            with timings.phase(timings.STARTUP):
                import torch  # noqa: F401
        yield
