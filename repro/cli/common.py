"""What every command shares: the consoles, the common options, loading with clear errors, the interrupt exit.

Heavy modules (torch through the models, matplotlib through the report) are imported inside the
commands that need them, so `repro --help` and `repro report` start in well under a second.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.table import Table

from repro.manifest import Manifest, find_manifest, load_all, load_valid
from repro.schema import SchemaError

console = Console()
err = Console(stderr=True, soft_wrap=True)  # messages verbatim: paths and commands are not wrapped

ProfileOpt = typer.Option(None, "--profile", "-p", help="Profile to run: smoke (CPU, minutes) or full (the paper's protocol). Default: $REPRO_PROFILE or smoke.")
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
                                     "`deterministic` key wins; sets $REPRO_DETERMINISTIC for the runs.")


def progress_bar() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console, transient=False)


def fail(message: str, code: int = 2) -> NoReturn:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def message(exc: BaseException) -> str:
    """An exception's text as written (KeyError's str() adds quotes around it)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def load_one(manifest_id: str, manifests: Path | None = None, profiles: Path | None = None) -> Manifest:
    try:
        return find_manifest(manifest_id, manifests, profiles)
    except (KeyError, SchemaError) as exc:
        fail(message(exc))


def load_every(manifests: Path | None = None, profiles: Path | None = None) -> list[Manifest]:
    try:
        return load_all(manifests, profiles)
    except SchemaError as exc:
        fail(str(exc))


def load_some(ids: list[str] | None, manifests: Path | None = None, profiles: Path | None = None) -> list[Manifest]:
    """The manifests named (every one, when none is), failing on the first unknown or invalid one."""
    return [load_one(i, manifests, profiles) for i in ids] if ids else load_every(manifests, profiles)


def load_valid_or_fail(manifests_dir: Path | None, profiles: Path | None) -> tuple[list[Manifest], dict[str, str]]:
    """Every valid manifest (with the profiles attached) and, by id, why the others are invalid."""
    try:
        manifests, invalid = load_valid(manifests_dir, profiles)
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
    from repro.results import ResultsDirError, check_results_dir as check

    try:
        check(results_dir, profile=profile, manifest_ids=manifest_ids)
    except ResultsDirError as exc:
        fail(f"{exc}; nothing was run")


def write_failed(exc: OSError) -> NoReturn:
    """A file the disk refused (repro.fsutil.WriteFailed): one line; the records already written stay."""
    fail(f"{exc}; every finished run record is kept, and the same command resumes once it can write", 1)


def set_numerics_env(deterministic: bool) -> None:
    """--deterministic reaches every run's config (repro.profiles.environment_defaults) and, before CUDA
    starts, cuBLAS in this process, its workers and Slurm tasks, through the environment."""
    from repro.profiles import DETERMINISTIC_ENV
    from repro.runtime.numerics import deterministic_environment

    if deterministic:
        os.environ[DETERMINISTIC_ENV] = "1"
        deterministic_environment()


def set_data_env(allow_unverified: bool, workers: int | None) -> None:
    """Data options reach every run, in this process, its workers and Slurm tasks, through the environment."""
    from repro.data.check import ALLOW_UNVERIFIED_ENV, WORKERS_ENV

    if allow_unverified:
        os.environ[ALLOW_UNVERIFIED_ENV] = "1"
    if workers is not None:
        os.environ[WORKERS_ENV] = str(workers)


def interrupted(manifest_id: str, exc: KeyboardInterrupt, results_dir: Path) -> NoReturn:
    """Ctrl-C or SIGTERM: release this process's locks, say what was kept and how to resume; exit 130."""
    import sys

    from repro.execution.records import runs_dir
    from repro.runtime.interrupt import RunsInterrupted, command_line, release_own_locks

    release_own_locks(runs_dir(results_dir))
    command = command_line(sys.argv)
    if isinstance(exc, RunsInterrupted):
        text = f"{manifest_id} {exc.message(command)}"
    else:  # outside training (FLOP counts, tables): every finished record is on disk
        text = f"{manifest_id} interrupted; every finished run record is kept; rerun `{command}` to resume"
    err.print(f"[bold yellow]{escape(text)}[/]", highlight=False)
    raise typer.Exit(130)


def counts_line(run_counts) -> str:
    from repro.execution.runs import RunCounts

    return (run_counts or RunCounts()).line()


VERDICT_COLOURS = {"reproduced": "green", "not reproduced": "red", "inconclusive": "yellow", "not run": "dim"}


def print_verdicts(verdicts) -> None:
    table = Table("Claim", "Verdict", "Evidence", show_lines=False)
    for v in verdicts:
        table.add_row(v.claim, f"[{VERDICT_COLOURS[v.status]}]{v.status}[/]",
                      escape(v.evidence + (f" — {v.note}" if v.note else "")))
    if verdicts:
        console.print(table)
