"""What every command shares: the consoles, the common options, loading with clear errors, printing that
fits 80 columns, and the interrupt: a command names what it stopped (CommandInterrupted), the `repro`
entry point says what was kept (repro.cli.main).

Heavy modules (torch through the models, matplotlib through the report) are imported inside the
commands that need them, and every name the user typed is checked before they are: `repro --help`,
`repro report` and a typo answer in well under a second.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from enum import IntEnum
from pathlib import Path
from typing import Iterable, Iterator, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from repro.core import terminal
from repro.plan.manifest import Manifest, find_manifest, load_all, load_valid
from repro.spec.profiles import RunDefaults, shipped_profiles
from repro.core.schema import SchemaError
from repro.core.terminal import Grid, print_words

terminal.ignore_zero_size()  # before any console is made, Typer's own included
console = Console()
err = Console(stderr=True, soft_wrap=True)  # messages verbatim: paths and commands are not wrapped


class ExitCode(IntEnum):
    """What `repro` exits with (the README's "Exit codes" lists these)."""

    OK = 0
    FAILED = 1  # a table failed, a FLOP count disagreed, a method did not learn (functional), --strict
    BAD_INPUT = 2  # an unknown name, an invalid file, missing data: nothing ran
    SUBMITTED = 3  # --no-wait: runs submitted to Slurm and not awaited; no table written from missing results
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: every finished record kept; the same command resumes


def profile_help() -> str:
    """The --profile help, from repro/spec/profiles.toml: each shipped profile with its evidence and device."""
    names = [f"{name} ({p.evidence}{', ' + p.device if p.device != 'auto' else ''})"
             for name, p in shipped_profiles().items()]
    return (f"Profile: {', '.join(names)}, or one of your own (--profiles FILE or $REPRO_PROFILES); `repro list` "
            "shows what each costs. Default: $REPRO_PROFILE or smoke.")


ProfileOpt = typer.Option(None, "--profile", "-p", help=profile_help())
ResultsOpt = typer.Option(None, "--results-dir", "-o", help="Where results go. Default: $REPRO_RESULTS or ./results.")
DeviceOpt = typer.Option("auto", "--device", help="auto, cpu or cuda.")
JobsOpt = typer.Option(0, "--jobs", "-j", min=0, help="Runs trained in parallel processes; 0: one per CPU core on a CPU, 1 on a GPU.")
DataOpt = typer.Option(None, "--data-dir", help="Dataset root. Default: $REPRO_DATA or ./data.")
UnverifiedOpt = typer.Option(False, "--allow-unverified-data",
                             help="Train on dataset files that fail their published checksum (a re-packed copy); "
                                  "every run record and the report say so.")
WorkersOpt = typer.Option(None, "--workers", min=0, help="Loader worker processes per split for image folders "
                          "(ImageNet). Default: the CPUs this process may use, minus one.")
ManifestsOpt = typer.Option(None, "--manifests", help="Folder of manifests. "
                            "Default: $REPRO_MANIFESTS or the package's manifests/.")
ProfilesOpt = typer.Option(None, "--profiles", help="TOML file of profiles (tables named profiles.<name>) added to "
                           "the shipped ones, replacing one of the same name. Default: $REPRO_PROFILES, else none.")
DeterministicOpt = typer.Option(False, "--deterministic",
                                help="Train in PyTorch's deterministic mode (and cuBLAS's fixed workspace), on the "
                                     "profile's threads: bit-identical runs on the same kind of machine. A profile's "
                                     "`deterministic` key wins. Default: $REPRO_DETERMINISTIC.")


VerboseOpt = typer.Option(False, "--verbose", "-v", help="Show the detail (every FLOP count, run and evidence); "
                          "it is always in <results>/<profile>/repro.log.")


def show(text: str | Text, out: Console | None = None) -> None:
    """Prose: wrapped at words; a word wider than the terminal (a path) is left whole on its own line."""
    print_words(out or console, text)


def paste(text: str, out: Console | None = None) -> None:
    """A command or a path to copy: one line, however wide (the terminal wraps it, the copy is whole)."""
    (out or console).print(text, soft_wrap=True, highlight=False, markup=False)


def print_grid(grid: Grid, title: str = "", out: Console | None = None) -> None:
    """A table laid out at the terminal's width (repro.core.terminal.fit): nothing cut, dropped columns below."""
    out = out or console
    if title:
        show(Text(title, style="bold"), out)
    terminal.print_grid(out, grid)


def error_line(message: str) -> None:
    """An error, wrapped at words within the terminal's width; a path wider than it keeps a line of its own."""
    print_words(err, Text.assemble(("error: ", "bold red"), message))


def fail(message: str, code: int = ExitCode.BAD_INPUT) -> NoReturn:
    error_line(message)
    raise typer.Exit(code)


def fail_all(messages: list[str], code: int = ExitCode.BAD_INPUT) -> NoReturn:
    """Several problems found at once: one error each, then exit."""
    for text in messages[:-1]:
        error_line(text)
    fail(messages[-1], code)


def message(exc: BaseException) -> str:
    """An exception's text as written (KeyError's str() adds quotes around it)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def run_defaults(deterministic: bool = False) -> RunDefaults:
    """The threads and deterministic mode of runs whose profile gives neither: this command's environment
    ($OMP_NUM_THREADS, $REPRO_DETERMINISTIC), read here, where the command starts; --deterministic turns it on."""
    try:
        defaults = RunDefaults.from_environment()
    except SchemaError as exc:
        fail(str(exc))
    return dataclasses.replace(defaults, deterministic=True) if deterministic else defaults


def load_one(manifest_id: str, manifests: Path | None = None, profiles: Path | None = None,
             defaults: RunDefaults | None = None) -> Manifest:
    try:
        return find_manifest(manifest_id, manifests, profiles, defaults or run_defaults())
    except (KeyError, SchemaError) as exc:
        fail(message(exc))


def load_every(manifests: Path | None = None, profiles: Path | None = None,
               defaults: RunDefaults | None = None) -> list[Manifest]:
    try:
        return load_all(manifests, profiles, defaults or run_defaults())
    except SchemaError as exc:
        fail(str(exc))


def load_some(ids: list[str] | None, manifests: Path | None = None, profiles: Path | None = None,
              defaults: RunDefaults | None = None) -> list[Manifest]:
    """The manifests named (every one, when none is), failing on the first unknown or invalid one; the
    profiles attached under `defaults` (else this command's environment's)."""
    defaults = defaults or run_defaults()
    return [load_one(i, manifests, profiles, defaults) for i in ids] if ids else load_every(manifests, profiles, defaults)


def load_valid_or_fail(manifests_dir: Path | None, profiles: Path | None) -> tuple[list[Manifest], dict[str, str]]:
    """Every valid manifest (with the profiles attached) and, by id, why the others are invalid."""
    try:
        manifests, invalid = load_valid(manifests_dir, profiles, run_defaults())
    except SchemaError as exc:  # the profiles file
        fail(str(exc))
    return manifests, {mid: exc.problems[0] for mid, exc in invalid.items()}


def check_profile(manifests: list[Manifest], profile: str) -> None:
    """Refuse an unknown profile name before any work, naming the closest."""
    for m in manifests:
        try:
            m.profile(profile)
        except KeyError as exc:
            fail(message(exc))


def check_results_dir(results_dir: Path, profile: str | None = None, manifest_ids: list[str] = ()) -> None:
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
    profiles and a file of one's own (--profiles or $REPRO_PROFILES)."""
    from repro.spec.profiles import SHIPPED_PROFILES

    own = profiles or os.environ.get("REPRO_PROFILES", "").strip()
    return [Path(m.path) for m in manifests if m.path] + [SHIPPED_PROFILES] + ([Path(own)] if own else [])


def counts_line(run_counts) -> str:
    from repro.execution.runs import RunCounts

    return (run_counts or RunCounts()).line()


@contextlib.contextmanager
def recording(command: str, results_dir: Path, profile: str, heavy: bool = True,
              reads: Iterable[Path] = ()) -> Iterator[None]:
    """Phase timings of the command into <results>/<profile>/timings.json (repro.results.timings), and the command
    as an action of the folder's RO-Crate (repro.results.actions: `reads`, the files outside the folder it reads);
    `heavy`: the command trains or counts, so torch's import is timed as start-up rather than inside its first phase."""
    from repro.results import timings
    from repro.results.acting import acting
    from repro.results.measurements import profile_dir

    with acting(command, profile_dir(results_dir, profile), reads), timings.recording(command, results_dir, profile):
        if heavy:
            with timings.phase(timings.STARTUP):
                import torch  # noqa: F401
        yield
