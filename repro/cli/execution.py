"""The execution options as one Typer option set: `with_executor_options` adds every option of
repro.execution.options to a command that declares a parameter `executor: ExecutorOptions`, and hands
the command one ExecutorOptions built from them."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Optional

from repro.execution.options import options_from_cli
from repro.runtime.locks import DEFAULT_STALE_AFTER_S, MIN_STALE_AFTER_S


def _typer_parameters() -> list[inspect.Parameter]:
    import typer

    panel = "Execution"

    def opt(name: str, default: Any, annotation: Any, *flags: str, **kw: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                 default=typer.Option(default, *flags, rich_help_panel=panel, **kw))

    return [
        opt("executor_name", "local", str, "--executor", help="local (this machine) or slurm (a Slurm job array, through submitit)."),
        opt("runs_per_gpu", 1, int, "--runs-per-gpu", min=1, help="local on GPUs: concurrent runs per visible GPU, each its own process."),
        opt("gpus_per_run", 1, int, "--gpus-per-run", min=1,
            help="Train each run on N processes with DDP (one per GPU; gloo on a CPU): runs this command under "
                 "torchrun --standalone --nproc-per-node N. The global batch stays the recipe's."),
        opt("no_wait", False, bool, "--no-wait", help="slurm: submit and return at once; rerun the command (or `repro status`) later."),
        opt("stale_lock_after", DEFAULT_STALE_AFTER_S, float, "--stale-lock-after",
            help=f"Seconds without a heartbeat after which another process's run lock is taken over (at least "
                 f"{MIN_STALE_AFTER_S:g}: twice the heartbeat)."),
        opt("slurm_partition", None, Optional[str], "--slurm-partition"),
        opt("slurm_gpus_per_task", None, Optional[int], "--slurm-gpus-per-task", min=0),
        opt("slurm_cpus_per_task", None, Optional[int], "--slurm-cpus-per-task", min=1),
        opt("slurm_time", "4:00:00", str, "--slurm-time", help="Time limit of one array task; a run cut off resumes after the requeue."),
        opt("slurm_max_parallel", 256, int, "--slurm-max-parallel", min=1, help="Array tasks running at once."),
        opt("slurm_account", None, Optional[str], "--slurm-account"),
        opt("slurm_runs_per_task", 1, int, "--slurm-runs-per-task", min=1, help="Runs trained one after another in one array task."),
        opt("slurm_param", [], list[str], "--slurm-param",
            help="Any other submitit or sbatch parameter, key=value, repeatable (e.g. qos=high, mem=16G, "
                 "constraint=a100); python=CMD: how the tasks start Python (e.g. 'apptainer exec --nv repro.sif python')."),
    ]




def with_executor_options(command):
    """Replace the command's `executor` parameter by the execution options; pass it one ExecutorOptions."""
    import typer

    sig = inspect.signature(command)
    if "executor" not in sig.parameters:
        raise TypeError(f"{command.__name__} has no parameter 'executor' to fill with ExecutorOptions")
    extra = _typer_parameters()
    names = [p.name for p in extra]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        values = {n: kwargs.pop(n) for n in names if n in kwargs}
        try:
            kwargs["executor"] = options_from_cli(**values)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        return command(*args, **kwargs)

    params = [p for p in sig.parameters.values() if p.name != "executor"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = [p.replace(kind=p.KEYWORD_ONLY) for p in params if p not in positional]
    wrapper.__signature__ = sig.replace(parameters=positional + keyword + extra)
    return wrapper
