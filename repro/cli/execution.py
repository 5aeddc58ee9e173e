"""The execution options, declared once, in their own help panel: the table commands (repro.cli.run.tables) take
them all and build one repro.execution.options.ExecutorOptions from them (options_from_cli); `repro list` and
`repro plan` price the runs under the same --executor, --runs-per-gpu and --slurm-max-parallel, and `repro
status` judges locks with the same --stale-lock-after.
"""

from __future__ import annotations

from typing import Any

import typer

from repro.runtime.locks import DEFAULT_STALE_AFTER_S, MIN_STALE_AFTER_S

PANEL = "Execution"


def _opt(default: Any, *flags: str, **kw: Any) -> Any:
    # Any, as typer.Option's own: the declaration is a parameter's default, whose type is the parameter's.
    return typer.Option(default, *flags, rich_help_panel=PANEL, **kw)


ExecutorOpt = _opt("local", "--executor", help="local (this machine) or slurm (a job array, by submitit).")
RunsPerGpuOpt = _opt(1, "--runs-per-gpu", min=1, help="local: runs at once per visible GPU.")
GpusPerRunOpt = _opt(
    1, "--gpus-per-run", min=1, help="DDP processes per run (torchrun); the global batch stays the recipe's."
)
NoWaitOpt = _opt(False, "--no-wait", help="slurm: submit, return, rerun later.")


def stale_lock_after_option(help: str) -> Any:
    """--stale-lock-after: seconds; `help` says what a lock that old means to the command."""
    return _opt(DEFAULT_STALE_AFTER_S, "--stale-lock-after", help=help)


StaleLockAfterOpt = stale_lock_after_option(
    f"Idle seconds before another's run lock is taken (>= {MIN_STALE_AFTER_S:g})."
)
SlurmPartitionOpt = _opt(None, "--slurm-partition")
SlurmGpusPerTaskOpt = _opt(None, "--slurm-gpus-per-task", min=0)
SlurmCpusPerTaskOpt = _opt(None, "--slurm-cpus-per-task", min=1)
SlurmTimeOpt = _opt("4:00:00", "--slurm-time", help="One array task's time limit (a run cut off resumes).")
SlurmMaxParallelOpt = _opt(256, "--slurm-max-parallel", min=1, help="Array tasks at once.")
SlurmAccountOpt = _opt(None, "--slurm-account")
SlurmRunsPerTaskOpt = _opt(1, "--slurm-runs-per-task", min=1, help="Runs one array task trains in turn.")
SlurmParamOpt = _opt([], "--slurm-param", help="Other sbatch key=value, repeatable (docs/cluster.md).")
