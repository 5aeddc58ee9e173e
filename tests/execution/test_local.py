"""The local executor: run slots per GPU (with a fake GPU count), pinning, and runs held by another process."""

import json
import shutil
import socket
import subprocess
import threading
import time
from collections import Counter

import pytest

from repro.execution.local import Slot, local_slots, run_local, visible_gpus
from repro.execution.protocol import ExecutionRequest, RunState
from repro.runtime.locks import lock_path
from repro.plan.manifest import Row
from repro.models import Component
from repro.plan.run_config import resolve
from repro.execution.runs import RunRequest, execute_runs, record_path, runs_dir
from fake_records import PROFILE  # tests/fake_records.py: 2 epochs of 64 synthetic images at 16 px


def _cfg(seed):
    row = Row(
        id="r",
        label="r",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component("dense"),
        measures=("accuracy",),
    )
    return resolve(row, PROFILE, seed=seed)


def test_slots_spread_runs_over_gpus_before_doubling_up():
    slots = local_slots("cuda", jobs=1, gpus=["4", "6"], runs_per_gpu=3)
    assert [s.name for s in slots] == ["gpu4/0", "gpu6/0", "gpu4/1", "gpu6/1", "gpu4/2", "gpu6/2"]
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in slots] == ["4", "6"] * 3
    assert not any(s.in_process for s in slots)
    assert Counter(s.env["CUDA_VISIBLE_DEVICES"] for s in local_slots("cuda", 1, ["0"], 4)) == {"0": 4}


def test_one_slot_trains_in_this_process_as_before():
    assert local_slots("cuda", jobs=8, gpus=["0"], runs_per_gpu=1) == [Slot("gpu0/0", in_process=True)]
    assert local_slots("cpu", jobs=1, gpus=[], runs_per_gpu=4) == [Slot("cpu", in_process=True)]
    assert [(s.name, s.env) for s in local_slots("cpu", 3, [], 1)] == [("cpu/0", {}), ("cpu/1", {}), ("cpu/2", {})]
    with pytest.raises(RuntimeError, match="no GPU is visible"):
        local_slots("cuda", 1, [], 1)


def test_visible_gpus_follow_the_parents_cuda_visible_devices():
    from repro.core.settings import Launch

    assert visible_gpus(Launch.read({"CUDA_VISIBLE_DEVICES": "2, 5"})) == ["2", "5"]
    assert visible_gpus(Launch.read({"CUDA_VISIBLE_DEVICES": ""})) == []


@pytest.mark.slow
def test_a_run_held_by_another_process_is_awaited_not_trained(tmp_path):
    done, held, freed = _cfg(0), _cfg(1), _cfg(2)
    source = tmp_path / "source"
    execute_runs([RunRequest(held, "held")], source, "cpu")
    execute_runs([RunRequest(done, "done")], tmp_path / "r", "cpu")
    holder = subprocess.Popen(["sleep", "60"])  # a live process on this host holds two runs
    try:
        for cfg in (held, freed):
            path = lock_path(runs_dir(tmp_path / "r"), cfg.hash)
            path.write_text(
                json.dumps({"host": socket.gethostname(), "pid": holder.pid, "token": "x", "started": time.time()})
            )

        def other_process_finishes():
            time.sleep(1.5)
            shutil.copy(record_path(source, held), record_path(tmp_path / "r", held))
            lock_path(runs_dir(tmp_path / "r"), held.hash).unlink()
            time.sleep(1.0)
            holder.kill()  # leaves `freed` locked by a dead process: tried here
            holder.wait()

        threading.Thread(target=other_process_finishes, daemon=True).start()
        batch = execute_runs([RunRequest(c, c.hash) for c in (done, held, freed)], tmp_path / "r", "cpu")
    finally:
        holder.kill()
    assert (batch.counts.trained, batch.counts.reused, batch.counts.by_other) == (1, 1, 1)
    assert not batch.errors and set(batch.records) == {done.hash, held.hash, freed.hash}
    assert batch.records[held.hash]["provenance"] == json.loads(record_path(source, held).read_text())["provenance"]
    assert batch.counts.line() == "runs: 1 trained here, 1 reused, 1 trained by another process"


@pytest.mark.slow
def test_each_slot_process_is_pinned_to_its_device(tmp_path):
    """Three slots on two fake GPUs (CPU training; the pinning is the env each slot's process starts with)."""
    slots = [
        Slot("gpu0/0", {"CUDA_VISIBLE_DEVICES": "0"}),
        Slot("gpu1/0", {"CUDA_VISIBLE_DEVICES": "1"}),
        Slot("gpu0/1", {"CUDA_VISIBLE_DEVICES": "0"}),
    ]
    cfgs = [_cfg(s) for s in range(3)]
    outcomes = run_local(
        ExecutionRequest(tuple(RunRequest(c, str(c.seed)) for c in cfgs), tmp_path, "cpu"), slots=slots
    )
    assert [o.state for o in outcomes] == [RunState.TRAINED] * 3
    records = {o.run_hash: o.record for o in outcomes}
    executors = [records[c.hash]["provenance"]["executor"] for c in cfgs]
    assert Counter(e["cuda_visible_devices"] for e in executors) == {"0": 2, "1": 1}
    assert len({e["pid"] for e in executors}) == 3 and {e["name"] for e in executors} == {"local"}


class _Log:
    """A progress the executor reports to: the lines it logs."""

    def __init__(self):
        self.lines = []

    def add_task(self, *a, **kw):
        return len(self.lines)

    def log(self, text):
        self.lines.append(text)

    def __getattr__(self, name):  # advance, update, start_task, remove_task
        return lambda *a, **kw: None


def test_a_run_its_lock_keeps_from_us_is_retried_once_a_poll_and_its_wait_is_logged_once(tmp_path, monkeypatch):
    """Issue 41, item 4: with a stale lock whose takeover guard stayed, the probe said free, the lock said held, and
    the scheduler looped with no sleep, writing 33,566 identical lines to repro.log (about 550 lines/s)."""
    import repro.execution.files as files
    import repro.execution.local as local
    import repro.execution.records as records
    from repro.execution.protocol import Outcome

    cfg, tries, sleeps = _cfg(0), [], []
    holder = {"host": "vm", "pid": 7, "token": "theirs", "heartbeat": time.time() - 900}

    def held_five_times(request, *args, **kwargs):
        tries.append(len(sleeps))
        if len(tries) <= 5:
            return Outcome(cfg.hash, RunState.HELD, holder={**holder, "heartbeat": time.time() - 900 - len(tries)})
        return Outcome(cfg.hash, RunState.TRAINED, record={"done": True})

    monkeypatch.setattr(records, "attempt_run", held_five_times)
    monkeypatch.setattr(files, "probe", lambda *a, **kw: Outcome(cfg.hash, RunState.FREE, holder=holder))
    monkeypatch.setattr(local.time, "sleep", sleeps.append)
    progress = _Log()
    outcomes = run_local(ExecutionRequest((RunRequest(cfg, "r seed 0"),), tmp_path, "cpu", progress=progress))
    assert [o.state for o in outcomes] == [RunState.TRAINED]
    assert tries == [0, 1, 2, 3, 4, 5]  # each try after one more sleep
    assert [line for line in progress.lines if "held by" in line] == [
        "r seed 0: held by vm:7, last heartbeat 901 s ago; waiting for its record"
    ]
