"""A real one-node Slurm (.ci/slurm-up.sh): the slurm executor trains every run as an array task, a
cancelled task's run resumes from its checkpoint on the rerun, and every run's numbers equal the local
executor's bit for bit (both train on the profile's threads, whatever CPUs a task was given).

Skipped unless Slurm answers; with REPRO_REQUIRE_SLURM=1 (as .ci/run sets) a missing Slurm fails it.
A requeued task waits for Slurm's BeginTime (about 2.5 minutes), so the test cancels and resubmits instead.
"""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import torch

from .minitable import counts, repro, write_manifest

EPOCHS = 8
# Two CPUs a task, where the runs' profile gives one thread (OMP_NUM_THREADS=1, minitable): a task that trained on
# its CPU count, as it once did, would round otherwise than the local executor.
SLURM = ("--executor", "slurm", "--slurm-cpus-per-task", "2", "--slurm-time", "10")


def _slurm_missing() -> str | None:
    if shutil.which("sinfo") is None:
        return "Slurm is not installed (sinfo not found); .ci/slurm-up.sh installs and starts a one-node cluster"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20 s; start the cluster with .ci/slurm-up.sh"
    states = out.stdout.split()
    if out.returncode != 0 or not {"idle", "mix", "alloc"} & set(states):
        return f"no Slurm node is up (sinfo: {out.stdout.strip() or out.stderr.strip()}); run .ci/slurm-up.sh"
    return None


@pytest.fixture
def slurm():
    reason = _slurm_missing()
    if reason and os.environ.get("REPRO_REQUIRE_SLURM") == "1":
        pytest.fail(f"REPRO_REQUIRE_SLURM=1 but {reason}")
    if reason:
        pytest.skip(reason)


def _cancel_frozen(pid, job):
    """scancel the task while holding its process (on this host) stopped until it is gone: Slurm sends
    SIGCONT, then SIGTERM (which submitit ignores), and SIGKILL seconds later, time enough for this
    tiny run to finish its last epochs and so not be cut mid-run at all."""
    os.kill(pid, signal.SIGSTOP)
    subprocess.run(["scancel", job], check=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        time.sleep(0.005)
    raise AssertionError(f"scancel {job}: its process {pid} still runs after 120 s")


def _table(results):
    record = json.loads((results / "smoke" / "mini" / "results.json").read_text())
    return {"metrics": record["metrics"], "verdicts": record["verdicts"]}


def _numbers(results):
    """Every run's metrics, history (without timings) and routing, by hash: what must not depend on the executor."""
    out = {}
    for path in (results / "runs").glob("*.json"):
        r = json.loads(path.read_text())
        out[path.stem] = (
            r["metrics"],
            r["routing"],
            [{k: v for k, v in h.items() if k != "seconds"} for h in r["history"]],
            r["provenance"]["reproducibility"]["threads"],
        )
    return out


@pytest.mark.slow
def test_slurm_executor_resumes_a_cancelled_task_and_equals_the_local_table(tmp_path, slurm):
    env = write_manifest(tmp_path, epochs=EPOCHS, train_samples=256)
    local, cluster = tmp_path / "local", tmp_path / "slurm"
    submitter = repro(cluster, env, *SLURM)
    runs = cluster / "runs"
    deadline = time.time() + 300
    while True:  # the first run with a checkpoint and no record yet: cancel its task mid-run
        assert submitter.poll() is None, submitter.stdout.read()
        assert time.time() < deadline, "no run checkpointed within 300 s"
        ckpts = [p for p in runs.glob("*.ckpt")] if runs.exists() else []
        victim = next((p for p in ckpts if not p.with_suffix(".json").exists()), None)
        if victim is not None:
            holder = json.loads(victim.with_suffix(".lock").read_text())
            job = f"{holder['slurm_array_job_id']}_{holder['slurm_array_task_id']}"
            _cancel_frozen(holder["pid"], job)
            break
        time.sleep(0.05)
    output = submitter.communicate(timeout=600)[0]
    assert submitter.returncode == 1, output  # the table is incomplete: one run has no record
    assert f"Slurm job {job} ended without a record" in output, output
    assert not victim.with_suffix(".json").exists()
    cut_at = torch.load(victim, weights_only=True)["epoch"]
    assert 1 <= cut_at < EPOCHS
    assert counts(output) == (3, 0, 0)

    rerun = repro(cluster, env, *SLURM)
    output = rerun.communicate(timeout=600)[0]
    assert rerun.returncode == 0, output
    assert counts(output) == (1, 3, 0)
    resumed = json.loads(victim.with_suffix(".json").read_text())
    assert resumed["resumed_from_epoch"] == cut_at and len(resumed["history"]) == EPOCHS
    executors = [json.loads(p.read_text())["provenance"]["executor"] for p in runs.glob("*.json")]
    assert len(executors) == 4 and {e["name"] for e in executors} == {"slurm"}
    assert all(e["slurm_job_id"] and e["host"] for e in executors)
    # the first three ran as tasks of the cancelled task's array; the lone resumed run as a job of its own
    again = resumed["provenance"]["executor"]
    assert sorted(
        f"{e['slurm_array_job_id']}_{e['slurm_array_task_id']}" for e in executors if "slurm_array_job_id" in e
    ) == sorted(f"{job.split('_')[0]}_{t}" for t in range(4) if f"{job.split('_')[0]}_{t}" != job)
    assert again["slurm_job_id"] != job.split("_")[0] and "slurm_array_job_id" not in again
    assert not list(runs.glob("*.ckpt")) and not list(runs.glob("*.lock"))

    baseline = repro(local, env)
    output = baseline.communicate(timeout=600)[0]
    assert baseline.returncode == 0 and counts(output) == (4, 0, 0), output
    assert _table(cluster) == _table(local)
    assert len(_numbers(local)) == 4 and _numbers(cluster) == _numbers(local)  # bit for bit, run by run
