"""The slurm executor: the pending runs as one Slurm job array, submitted through submitit.

Each array task trains its chunk of runs (`runs_per_task`, default one) through
repro.execution.records.attempt_run, in the shared results directory: the same locks, checkpoints
and records as the local executor. Runs checkpoint every epoch; on a time-out or a
preemption submitit calls `RunTask.checkpoint`, which resubmits the same task, and the
requeued task resumes each run from its checkpoint. The submitting command watches the
records appear (and `squeue` for tasks that ended without one) and returns when every
run is recorded or failed, or at once with `no_wait`.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from repro.core.package_data import import_folder
from repro.core.settings import Settings
from repro.execution.files import poll_interval, poll_waiting, probe, submitted_path
from repro.execution.options import ExecutorOptions, SlurmOptions
from repro.execution.protocol import ExecutionRequest, Outcome, RunRequest, RunState
from repro.core.fsutil import FolderWriter
from repro.runtime.locks import LockSettings

MAX_REQUEUES_ON_TIMEOUT = 10  # a run may span this many task time limits, plus one


class RunTask:
    """One array task: its runs, one after another. submitit pickles it; a requeue resubmits it. `run_settings`:
    the submitting command's (repro.core.settings), but for the launch, which the task reads where it starts."""

    def __init__(
        self,
        requests: list,
        results_dir: Path,
        data_dir: Path | None,
        settings: LockSettings,
        run_settings: Settings = Settings(),
    ) -> None:
        self.requests, self.results_dir, self.data_dir, self.settings = requests, results_dir, data_dir, settings
        self.run_settings = run_settings

    def __call__(self) -> list[Outcome]:
        import os

        import torch

        from repro.core.settings import Launch
        from repro.execution.records import attempt_run

        # This process starts here: its Slurm job and array task, and its GPUs, are the ones Slurm set for it.
        run_settings = dataclasses.replace(self.run_settings, launch=Launch.read(os.environ))
        # Slurm exposes only the GPUs it allocated to the task, so "a GPU is visible" is "one was asked for".
        # Each run trains on the threads its config names (repro.runtime.numerics), not the task's CPU count.
        device = "cuda" if torch.cuda.is_available() else "cpu"
        return [
            dataclasses.replace(
                attempt_run(r, self.results_dir, device, self.data_dir, None, "slurm", self.settings, run_settings),
                record=None,
            )  # the submitter reads the record from disk
            for r in self.requests
        ]

    def checkpoint(self, *args: Any, **kwargs: Any):
        """Called by submitit on a time-out or preemption: run the same task again; runs resume from their
        checkpoints."""
        import submitit

        return submitit.helpers.DelayedSubmission(
            RunTask(self.requests, self.results_dir, self.data_dir, self.settings, self.run_settings)
        )


def _value(text: str) -> Any:
    return int(text) if text.lstrip("-").isdigit() else text


def submitit_parameters(s: SlurmOptions, valid: set[str]) -> dict[str, Any]:
    """SlurmOptions -> submitit.SlurmExecutor parameters; a --slurm-param submitit does not know goes to sbatch
    as is."""
    params: dict[str, Any] = {
        "time": s.time_min,
        "array_parallelism": s.max_parallel,
        "job_name": "repro",
        "setup": [f"export PYTHONPATH={import_folder()}${{PYTHONPATH:+:$PYTHONPATH}}"],
    }
    for key, value in (
        ("partition", s.partition),
        ("gpus_per_task", s.gpus_per_task),
        ("cpus_per_task", s.cpus_per_task),
        ("account", s.account),
    ):
        if value is not None:
            params[key] = value
    extra: dict[str, Any] = {}
    for key, text in s.params.items():
        if key == "python":
            continue  # the tasks' interpreter: an argument of the executor, not a parameter (see `submit`)
        if key in valid:
            params[key] = _value(text)
        else:
            extra[key.replace("_", "-")] = text
    if extra:
        params["additional_parameters"] = extra
    return params


def queued_jobs(job_ids: list[str]) -> set[str] | None:
    """Which of these jobs (123 or 123_4) Slurm still knows as queued or running; None if squeue did not answer."""
    arrays = sorted({j.split("_")[0] for j in job_ids})
    try:
        out = subprocess.run(
            ["squeue", "--noheader", "--array", "--format=%i", f"--jobs={','.join(arrays)}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        # squeue refuses job ids that left its memory altogether: then none of them is queued.
        return set() if "Invalid job id" in out.stderr else None
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}


def record_job(record: dict[str, Any]) -> str | None:
    """The Slurm job (123 or 123_4) that trained a record, from its provenance."""
    return _holder_job(record.get("provenance", {}).get("executor", {}))


def _holder_job(ex: dict[str, Any]) -> str | None:
    if ex.get("slurm_array_job_id"):
        return f"{ex['slurm_array_job_id']}_{ex.get('slurm_array_task_id', '')}"
    return ex.get("slurm_job_id")


def submit(
    todo: list, results_dir: Path, data_dir: Path | None, options: ExecutorOptions, settings: Settings = Settings()
) -> dict[str, str]:
    """Submit `todo` as one job array; return the job id (123_4) of each run's task, by hash."""
    import submitit

    s = options.slurm
    folder = (Path(s.folder) if s.folder else results_dir / "slurm").absolute()
    # python=...: how the tasks start Python, e.g. "apptainer exec --nv repro.sif python"; default this interpreter
    executor = submitit.SlurmExecutor(
        folder=folder / "%j", max_num_timeout=MAX_REQUEUES_ON_TIMEOUT, python=s.params.get("python")
    )
    executor.update_parameters(**submitit_parameters(s, executor._valid_parameters()))
    chunks = [todo[i : i + s.runs_per_task] for i in range(0, len(todo), s.runs_per_task)]
    with executor.batch():
        data = data_dir.absolute() if data_dir is not None else None  # the tasks may start in another directory
        folders = dataclasses.replace(
            settings, cache=settings.cache.absolute(), weights=tuple(p.absolute() for p in settings.weights)
        )
        jobs = [
            executor.submit(RunTask(chunk, results_dir.absolute(), data, options.lock, folders)) for chunk in chunks
        ]
    out = {}
    for job, chunk in zip(jobs, chunks):
        for request in chunk:
            out[request.cfg.hash] = job.job_id
            FolderWriter(results_dir).write_json(
                submitted_path(results_dir, request.cfg.hash),
                {
                    "job_id": job.job_id,
                    "label": request.label,
                    "submitted": time.time(),
                    "log": str(folder / job.job_id.split("_")[0]),
                },
            )
    return out


def run_slurm(work: ExecutionRequest) -> list[Outcome]:
    """Submit the runs no live process holds; then, unless no_wait, wait for every run's outcome."""
    results_dir, options, progress = work.results_dir, work.options, work.progress
    settings = dataclasses.replace(options.lock, job=work.settings.launch.slurm)
    waiting: dict[str, tuple[RunRequest, float]] = {}
    to_submit = []
    for request in work.runs:
        if probe(results_dir, request.cfg, settings, time.time()).state is RunState.HELD:
            waiting[request.cfg.hash] = (request, time.time())
        else:
            to_submit.append(request)
    submitted: dict[str, tuple[RunRequest, str, float]] = {}  # hash -> (request, job id, submitted at)
    outcomes: list[Outcome] = []

    def submit_now(requests: list) -> None:
        if not requests:
            return
        started = time.time()
        ids = submit(requests, results_dir, work.data_dir, options, work.settings)
        for r in requests:
            submitted[r.cfg.hash] = (r, ids[r.cfg.hash], started)
        array = next(iter(ids.values())).split("_")[0]
        _say(
            progress,
            f"submitted {len(requests)} run(s) as Slurm job {array} "
            f"({len(set(ids.values()))} array task(s)); "
            f"logs in {options.slurm.folder or results_dir / 'slurm'}",
        )

    submit_now(to_submit)
    if options.no_wait:
        return [
            *(
                Outcome(
                    h,
                    RunState.SUBMITTED,
                    job=job,
                    error=(
                        f"submitted as Slurm job {job}, not finished yet (--no-wait); `repro status` shows its "
                        "progress; run this command again once it has ended to render the table"
                    ),
                )
                for h, (_, job, _) in submitted.items()
            ),
            *(
                Outcome(h, RunState.HELD, error="trained by another process, not finished yet (--no-wait)")
                for h in waiting
            ),
        ]
    overall = (
        progress.add_task(f"runs on Slurm ({work.reused} already recorded)", total=len(work.runs)) if progress else None
    )
    while submitted or waiting:
        time.sleep(poll_interval(settings) if waiting else 2.0)
        alive = queued_jobs([job for _, job, _ in submitted.values()]) if submitted else set()
        for h, (request, job, since) in list(submitted.items()):
            outcome = _submitted_outcome(request, job, since, results_dir, alive, settings)
            if outcome is None:
                continue
            del submitted[h]
            if outcome.state is RunState.HELD:  # its task found another process training it
                waiting[h] = (request, since)
                continue
            outcomes.append(outcome)
            if progress is not None:
                progress.advance(overall)
        ended, resubmit = poll_waiting(results_dir, waiting, settings)
        outcomes.extend(ended)
        if progress is not None and ended:
            progress.advance(overall, len(ended))
        submit_now(resubmit)
    for outcome in outcomes:
        if outcome.record is not None:
            submitted_path(results_dir, outcome.run_hash).unlink(missing_ok=True)
    return outcomes


def _submitted_outcome(
    request: RunRequest, job: str, since: float, results_dir: Path, alive: set[str] | None, settings: LockSettings
) -> Outcome | None:
    """A submitted run's outcome: TRAINED by its task (RECORDED when another process's record came first),
    FAILED, HELD when another process holds it, or None while its task is still queued or running."""
    outcome = probe(results_dir, request.cfg, settings, since)
    if outcome.state not in (RunState.RECORDED, RunState.FAILED):
        if alive is None or job in alive:
            return None
        outcome = probe(results_dir, request.cfg, settings, since)  # written just before the task left the queue
    if outcome.state is RunState.RECORDED:
        assert outcome.record is not None  # probe gives every RECORDED outcome its record
        trained = record_job(outcome.record) == job
        return Outcome(outcome.run_hash, RunState.TRAINED, record=outcome.record, job=job) if trained else outcome
    if outcome.state is RunState.HELD:
        assert outcome.holder is not None  # and every HELD one its holder
        if _holder_job(outcome.holder) != job:
            return outcome
    if outcome.state is RunState.FAILED:
        return outcome
    return Outcome(
        request.cfg.hash,
        RunState.FAILED,
        job=job,
        error=(
            f"Slurm job {job} ended without a record (cancelled, out of time after {MAX_REQUEUES_ON_TIMEOUT} requeues, "
            f"or killed: see its log); its checkpoint is kept, so running the command again resumes it"
        ),
    )


def _say(progress: Any, text: str) -> None:
    if progress is not None:
        progress.log(text)
    else:
        print(text, file=sys.stderr, flush=True)
