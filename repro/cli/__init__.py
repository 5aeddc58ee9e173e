"""The `repro` command line: one command per manifest, FLOP checks, reports, verify-all.

    tables     run ID..., <id> (one per manifest), verify-all
    info       list, plan, flops, data: what things are and cost, before anything runs
    report     report: re-render from the results present
    appendix   appendix: the Artifact Appendix, claim by claim, from the configuration and a results folder
    readings   readings ID...: every analytic claim under every alternative reading
    rho        rho MODEL: where rho lands on any torchvision CNN (repro.cli.rho)
    status     status: runs done, running, failed, pending
    export     export: every run, epoch and verdict as CSV, Parquet or JSON (repro.results.frames)
    compare    compare A B: two results folders, rows beyond seed noise, verdicts changed (repro.report.compare)
    trace      trace TABLE ROW [COLUMN]: one number back to its claims, records, code and data (repro.report.trace)
    package    package: one archive of a results folder, ready to deposit (repro.results.package)
    bench      bench ...: the benchmarks
    common     consoles, shared options, loading with clear errors, printing that fits 80 columns
    progress   what a table command hands the library as progress: bars, detail behind -v, the log file
    verdicts   the claims checklist as the terminal shows it
    execution  the executors' options as one Typer option set

The commands import their heavy modules (torch, matplotlib) when they run. `main` is the `repro`
command: Ctrl-C and SIGTERM are handled there and only there, so a test or a notebook that calls
`app` (or the library) keeps its own Ctrl-C.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import typer
from rich.text import Text

from repro.cli import appendix, info, readings, report, status
from repro.cli.compare import compare
from repro.cli.export import export
from repro.cli.package import package
from repro.cli.trace import trace
from repro.cli import run as tables
from repro.cli.bench import bench_app
from repro.cli.rho import rho_command
from repro.core.registry import closest
from repro.core.schema import SchemaError


TYPES_FROM = 100  # columns: a narrower --help leaves out the type column ("<int range> [x>=0]"), for the help


def _narrow() -> bool:
    """The terminal --help prints on is narrower than TYPES_FROM: there the type column would leave the help text
    a column of 23 characters (`verify-all --help` was 135 lines at 80 columns)."""
    return typer.rich_utils._get_rich_console().width < TYPES_FROM


def _flags_show_no_type() -> None:
    """A flag takes no value, so its help shows no type: as Typer's plain help does and its rich help did
    before 0.29, whose rich panel prints one beside every option ("--help  <bool>  Show this message").
    Below TYPES_FROM columns no parameter shows one (nor its range): the help text says what it takes."""
    option, argument = typer.core.TyperOption, typer.core.TyperArgument
    shown = getattr(option, "display_type_rich", None)  # absent before Typer 0.29: nothing to change
    if shown is None or shown.__module__ == __name__:  # ours already
        return
    shown_argument, shown_range = argument.display_type_rich, option._get_number_range_help_str

    def display_type_rich(self, ctx):
        return None if self.is_flag or self.count or _narrow() else shown(self, ctx)

    # Typer's own classes, patched: it makes its parameters itself, so no subclass of ours could stand in
    setattr(option, "display_type_rich", display_type_rich)
    setattr(option, "_get_number_range_help_str", lambda self: "" if _narrow() else shown_range(self))
    setattr(argument, "display_type_rich", lambda self, ctx: None if _narrow() else shown_argument(self, ctx))


class _Group(typer.core.TyperGroup):
    """Typer itself turns Ctrl-C inside a command into exit 130; this group lets the KeyboardInterrupt
    through to whoever called the app: `main` says what was kept, pytest stops, a notebook cell ends.

    `repro <id>` for any manifest id is `repro run <id>`: the id is resolved here, not registered as a
    command of its own, so that the table commands' options are declared once (repro.cli.run.tables)."""

    interrupt: KeyboardInterrupt | None  # the Ctrl-C a command raised, for `main` to raise again

    def resolve_command(self, ctx, args):
        ctx.meta[HELP_ONLY] = any(a in ("--help", "-h") for a in args)  # the callback's preflight then waits
        if args and args[0] not in self.commands:
            from repro.cli.common import read_settings  # the command's settings, read here once: $REPRO_MANIFESTS

            own = read_settings(ctx)
            try:
                ids = manifest_ids(own.manifests, (own.profiles, own.readings))
            except SchemaError as exc:  # $REPRO_MANIFESTS names no folder of manifests
                from repro.cli.common import fail

                fail(str(exc))
            if args[0] in ids:
                return args[0], self.commands["run"], args[:1] + args[1:]
            if hint := closest(args[0], [*self.commands, *ids]):  # `repro tabel5`: table5
                ctx.fail(f"No such command {args[0]!r}{hint}.")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            self.interrupt = exc
            raise

    def main(self, *args, **kwargs):
        self.interrupt = None
        try:
            result = super().main(*args, **kwargs)
        except SystemExit:
            if self.interrupt is not None:
                raise self.interrupt from None
            raise
        if self.interrupt is not None:  # standalone_mode=False: Typer returned 130
            raise self.interrupt
        return result


HELP_ONLY = "help_only"  # ctx.meta: the command line asks for a command's help, which needs no torch
# The commands that import torch on every call (they train, count FLOPs or build models), and `repro <id>`.
TORCH_COMMANDS = frozenset({"run", "verify-all", "flops", "readings", "data", "rho", "bench"})


def manifest_ids(folder: Path | None = None, besides: Iterable[Path | None] = ()) -> list[str]:
    """The ids of the manifests in `folder` (default: the package's), by file name, without loading them; `besides`:
    the profiles and readings files of one's own, which may sit among them."""
    from repro.plan.manifest import manifest_paths

    return [p.stem for p in manifest_paths(folder, besides)]


def _default_beside_the_help() -> None:
    """An option's "[default: 1]" follows its help text on the same line, unbroken: Typer sets the two as rich
    Columns, which put the default on a line of its own below any help that wraps (a line more per option)."""
    import typer.rich_utils

    laid_out = typer.rich_utils._get_parameter_help
    if laid_out.__module__ == __name__:  # ours already
        return

    def joined(*args, **kwargs):
        out = laid_out(*args, **kwargs)
        parts = getattr(out, "renderables", None)
        if not parts or not all(isinstance(p, Text) for p in parts):
            return out
        # "[default:1]", one word: rich breaks a line at any space, a no-break one too ("[default:" / "1]")
        whole = [Text(p.plain.replace("[default: ", "[default:", 1), style=p.style) for p in parts]
        return Text(" ").join(whole)

    typer.rich_utils._get_parameter_help = joined


_flags_show_no_type()
_default_beside_the_help()
app = typer.Typer(
    help="Reproduce arXiv 2605.15484: run a paper table's manifest, check FLOPs, decide claims, render reports.",
    epilog=f"repro <id> runs one table (repro run <id>): {', '.join(manifest_ids())}.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    cls=_Group,
)


@app.callback()
def _read_settings(ctx: typer.Context) -> None:
    # Before any command does any work: its environment, read once into its settings (repro.core.settings);
    # a value that does not parse ends it with exit 2, naming each variable, its value and what was expected.
    # A command that needs torch then finds torch and torchvision working together, else one error with the fix.
    from repro.cli.common import begin, fail, read_settings

    begin(ctx)
    name = ctx.invoked_subcommand
    own = read_settings(ctx)
    # a name that is no command was resolved as a manifest id (_Group.resolve_command): `repro <id>`
    needs_torch = name in TORCH_COMMANDS or (name is not None and name not in getattr(ctx.command, "commands", {}))
    if needs_torch and not ctx.meta.get(HELP_ONLY):
        from repro.runtime.preflight import torch_problem

        if (problem := torch_problem(own.cache)) is not None:
            fail(problem)


app.command(
    "verify-all",
    help=tables.VERIFY_ALL_HELP,
    short_help="Every table, FLOP check and claim: one report, one exit code.",
)(tables.tables)
app.command(  # the ids are `repro --help`'s epilog: listed here too, they took this help past a screen
    "run", help=f"{tables.RUN_HELP} repro <id> is repro run <id> (the ids: repro --help).", short_help=tables.RUN_HELP
)(tables.tables)
# One line each in `repro --help` (each command's --help has the whole text).
app.command("list", short_help="Each table and what each profile costs, before anything runs.")(info.list_manifests)
app.command("plan", short_help="What deciding each empirical claim costs; the claims a budget decides.")(info.plan)
app.command("status", short_help="Per table: runs done, running, failed, pending.")(status.status)
app.command("report", short_help="Re-render report.md and report.html from the results present.")(report.report)
app.command("appendix", short_help="The Artifact Appendix: each claim's command, hardware, cost and expected result.")(
    appendix.appendix
)
app.command("export", short_help="Runs, epochs and verdicts as CSV, JSON or Parquet tables.")(export)
app.command("compare", short_help="Two results folders: rows beyond seed noise, changed verdicts.")(compare)
app.command("trace", short_help="One number of a table: its claims, run records, code, container and data.")(trace)
app.command("package", short_help="One archive of a results folder, its crate, records and source, to deposit.")(
    package
)
app.command("flops", short_help="Every row's FLOPs counted three ways; exit 1 on a disagreement.")(info.flops)
app.command("readings", short_help="Every analytic claim under every reading the text leaves open.")(readings.readings)
app.command("data", short_help="Which datasets and weights are present; how to fill what is missing.")(info.data)
app.command("rho", short_help="Beyond the paper: where rho lands on any torchvision CNN.")(rho_command)
app.add_typer(
    bench_app,
    name="bench",
    help="Benchmarks: latency per head, data path, training, capacity assignment.",
    short_help="Speed benchmarks, as ratios measured in one run; gpu: the device check.",
)


def main() -> None:
    """The `repro` command: SIGTERM stops it as Ctrl-C does; either says what was kept and exits 130."""
    import sys

    from rich.markup import escape

    from repro.cli.common import ExitCode, err, interrupted_message
    from repro.core.fsutil import BYTES_OR_MARK
    from repro.runtime.interrupt import sigterm_as_interrupt
    from repro.runtime.memory import keep_freed_memory

    keep_freed_memory()  # this process counts FLOPs, pretrains and times latency; its workers train
    for stream in (sys.stdout, sys.stderr):  # a locale's encoding that lacks a character never stops a line
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=BYTES_OR_MARK)
    try:
        with sigterm_as_interrupt():
            app(prog_name="repro")
    except KeyboardInterrupt as exc:
        err.print(f"[bold yellow]{escape(interrupted_message(exc, sys.argv))}[/]", highlight=False)
        raise SystemExit(int(ExitCode.INTERRUPTED)) from None


__all__ = ["app", "main"]
