"""The `repro` command line: one command per manifest, FLOP checks, reports, verify-all.

    tables     run ID..., <id> (one per manifest), verify-all
    info       list, plan, flops, data: what things are and cost, before anything runs
    report     report: re-render from the results present
    readings   readings ID...: every analytic claim under every alternative reading
    rho        rho MODEL: where rho lands on any torchvision CNN (repro.rho.command)
    status     status: runs done, running, failed, pending
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

import typer

from repro.cli import info, readings, report, status, tables
from repro.cli.bench import bench_app
from repro.rho.command import rho_command


def _flags_show_no_type() -> None:
    """A flag takes no value, so its help shows no type: as Typer's plain help does and its rich help did
    before 0.29, whose rich panel prints one beside every option ("--help  <bool>  Show this message")."""
    option = typer.core.TyperOption
    shown = getattr(option, "display_type_rich", None)  # absent before Typer 0.29: nothing to change
    if shown is None or getattr(shown, "flags_show_no_type", False):
        return

    def display_type_rich(self, ctx):
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich.flags_show_no_type = True
    option.display_type_rich = display_type_rich


class _Group(typer.core.TyperGroup):
    """Typer itself turns Ctrl-C inside a command into exit 130; this group lets the KeyboardInterrupt
    through to whoever called the app: `main` says what was kept, pytest stops, a notebook cell ends."""

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


_flags_show_no_type()
app = typer.Typer(
    help="Reproduce arXiv 2605.15484: run a paper table's manifest, check FLOPs, decide claims, render reports.",
    no_args_is_help=True, add_completion=False, rich_markup_mode="rich", cls=_Group,
)


@app.callback()
def _checked_environment() -> None:
    # Before any command does any work: every environment variable the tool reads parses
    # (repro.runtime.environment), else exit 2 naming each variable, its value and what was expected.
    from repro.cli.common import fail_all
    from repro.runtime.environment import problems

    if found := problems():
        fail_all(found)


app.command("list")(info.list_manifests)
app.command("plan")(info.plan)
app.command("run")(tables.run)
app.command("flops")(info.flops)
app.command("data")(info.data)
app.command("report")(report.report)
app.command("verify-all")(tables.verify_all)
app.command("status")(status.status)
app.command("readings")(readings.readings)
app.command("rho")(rho_command)
app.add_typer(bench_app, name="bench", help="Benchmarks: latency per head, data path, training, capacity assignment.")
tables.register_manifest_commands(app)



def main() -> None:
    """The `repro` command: SIGTERM stops it as Ctrl-C does; either says what was kept and exits 130."""
    import sys

    from rich.markup import escape

    from repro.cli.common import ExitCode, err, interrupted_message
    from repro.fsutil import BYTES_OR_MARK
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
