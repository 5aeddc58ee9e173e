"""The local executor's workers (repro.execution.workers): kept from one table to the next within a
kept_workers() block, new for each table outside one, never reused after a failure."""

import dataclasses
import pytest

from repro.execution import workers as w
from repro.execution.local import Slot, run_local
from repro.execution.protocol import ExecutionRequest, RunRequest, RunState
from repro.plan.manifest import Row
from repro.models import Component
from fake_records import PROFILE as FAKE  # tests/fake_records.py
from repro.plan.run_config import resolve

PROFILE = dataclasses.replace(FAKE, epochs=1, train_samples=32)  # tests/fake_records.py's but for these fields
SLOTS = [Slot("cpu/0"), Slot("cpu/1")]


def _table(tmp_path, seeds):
    row = Row(
        id="r",
        label="r",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component("dense"),
        measures=("accuracy",),
    )
    cfgs = [resolve(row, PROFILE, seed=s) for s in seeds]
    work = ExecutionRequest(tuple(RunRequest(c, str(c.seed)) for c in cfgs), tmp_path, "cpu", jobs=2)
    outcomes = {o.run_hash: o for o in run_local(work, slots=SLOTS)}
    assert sorted(outcomes) == sorted(c.hash for c in cfgs)
    assert all(o.state is RunState.TRAINED for o in outcomes.values()), outcomes
    return {o.record["provenance"]["executor"]["pid"] for o in outcomes.values()}


class _FakePool:
    def __init__(self):
        self.shut, self._broken = False, False

    def shutdown(self, cancel_futures=False):
        self.shut = True


class _FakeManager:
    def shutdown(self):
        pass

    def Queue(self):  # noqa: N802 (multiprocessing's name)
        return None


def test_release_keeps_workers_inside_a_block_and_closes_them_after_a_failure(monkeypatch):
    monkeypatch.setattr(w, "ProcessPoolExecutor", lambda *a, **k: _FakePool())
    monkeypatch.setattr(w, "start_manager", lambda ctx: _FakeManager())
    first = w.start_workers(SLOTS)
    w.release_workers(first, failed=False)  # outside a block: closed at once
    assert all(p.shut for p in first.pools.values())
    with w.kept_workers():
        a = w.start_workers(SLOTS)
        w.release_workers(a, failed=False)
        assert w.start_workers(SLOTS) is a and not any(p.shut for p in a.pools.values())
        w.release_workers(a, failed=True)  # an interrupt or a broken pool: never reused
        assert all(p.shut for p in a.pools.values())
        b = w.start_workers(SLOTS)
        assert b is not a
        w.release_workers(b, failed=False)
        other = w.start_workers(SLOTS[:1])  # other slots: other workers
        assert other is not b
        w.release_workers(other, failed=False)
    assert all(p.shut for p in b.pools.values()) and all(p.shut for p in other.pools.values())


@pytest.mark.slow
def test_two_tables_inside_a_block_are_trained_by_the_same_two_processes(tmp_path):
    with w.kept_workers():
        first = _table(tmp_path, [0, 1])
        second = _table(tmp_path, [2, 3])
    assert len(first) == 2 and second == first
    third = _table(tmp_path, [4, 5])  # outside the block: new processes
    assert not third & first
