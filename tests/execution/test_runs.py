"""Run records: atomic, never repeated, damaged ones redone; interrupted runs resume to the same record."""

import json
import os

import pytest
import torch

from repro.plan.manifest import Row
from repro.spec.profiles import Profile
from repro.models import Component
from repro.plan.run_config import resolve
from repro.execution.runs import (
    RunRequest,
    checkpoint_path,
    execute_runs,
    failure_path,
    load_record,
    record_path,
)
from repro.execution.records import run_one
from repro.core.settings import Settings
from repro.train.loop import NonFiniteLoss, train_run

pytestmark = pytest.mark.slow  # every test here trains runs
EVERY_EPOCH = Settings(checkpoint_seconds=0.0)  # a checkpoint after every epoch: the runs here are killed after one

PROFILE = Profile(
    description="test",
    evidence="pipeline",
    seeds=1,
    epochs=3,
    data="synthetic",
    train_samples=128,
    test_samples=64,
    batch_size=32,
    max_image_size=16,
    pretrained=False,
)


def _row(head="dense", **params):
    return Row(
        id="r",
        label="r",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component(head, params),
        measures=("accuracy",),
    )


def _strip(record):
    """The parts of a record that must not depend on interruption or timing."""
    keep = {k: record[k] for k in ("config", "config_hash", "metrics", "routing")}
    keep["history"] = [{k: v for k, v in h.items() if k != "seconds"} for h in record["history"]]
    return keep


def test_record_is_written_once_and_reused(tmp_path):
    cfg = resolve(_row(), PROFILE, seed=0)
    first = execute_runs([RunRequest(cfg, "r"), RunRequest(cfg, "same run, another label")], tmp_path, "cpu")
    records, errors = first
    assert not errors and record_path(tmp_path, cfg).is_file()
    assert not checkpoint_path(tmp_path, cfg).exists() and not (tmp_path / "runs" / f"{cfg.hash}.lock").exists()
    assert first.counts.line() == "runs: 1 trained here, 0 reused, 0 trained by another process"
    mtime = record_path(tmp_path, cfg).stat().st_mtime_ns
    again = execute_runs([RunRequest(cfg, "r")], tmp_path, "cpu")
    assert record_path(tmp_path, cfg).stat().st_mtime_ns == mtime
    assert again.records[cfg.hash]["metrics"] == records[cfg.hash]["metrics"]
    assert (again.counts.trained, again.counts.reused, again.counts.by_other) == (0, 1, 0)
    executor = records[cfg.hash]["provenance"]["executor"]
    assert executor["name"] == "local" and executor["pid"] == os.getpid() and executor["device"] == "cpu"


def test_a_truncated_record_is_detected_and_redone(tmp_path):
    cfg = resolve(_row(), PROFILE, seed=0)
    execute_runs([RunRequest(cfg, "r")], tmp_path, "cpu")
    path = record_path(tmp_path, cfg)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # a write cut short
    assert load_record(tmp_path, cfg) is None
    assert list(path.parent.glob(f"{path.name}.invalid-*")), "the damaged record is kept aside, not deleted"
    records, errors = execute_runs([RunRequest(cfg, "r")], tmp_path, "cpu")
    assert not errors and json.loads(path.read_text())["metrics"] == records[cfg.hash]["metrics"]


def test_a_record_of_another_config_is_not_read_as_this_one(tmp_path):
    cfg = resolve(_row(), PROFILE, seed=0)
    other = resolve(_row(), PROFILE, seed=1)
    execute_runs([RunRequest(other, "r")], tmp_path, "cpu")
    record_path(tmp_path, cfg).write_text(record_path(tmp_path, other).read_text())
    assert load_record(tmp_path, cfg) is None


@pytest.mark.parametrize("head,params", [("dense", {}), ("sparse_moe", {"expert_hidden": 32, "k_warmup_epochs": 5})])
def test_resume_after_an_interruption_gives_the_same_record(tmp_path, head, params):
    cfg = resolve(_row(head, **params), PROFILE, seed=0)
    whole = run_one(RunRequest(cfg, "r"), tmp_path / "a", "cpu", None, settings=EVERY_EPOCH)

    class Crash(Exception):
        pass

    def crash_after_two(epoch, epochs, entry):
        if epoch == 2:
            raise Crash

    ckpt = checkpoint_path(tmp_path / "b", cfg)
    ckpt.parent.mkdir(parents=True)
    with pytest.raises(Crash):
        train_run(cfg, torch.device("cpu"), None, ckpt, crash_after_two, settings=EVERY_EPOCH)
    assert torch.load(ckpt, weights_only=True)["epoch"] == 2
    resumed = run_one(RunRequest(cfg, "r"), tmp_path / "b", "cpu", None, settings=EVERY_EPOCH)
    assert resumed["resumed_from_epoch"] == 2
    assert _strip(resumed) == _strip(whole)


def test_non_finite_loss_stops_the_run_without_a_record(tmp_path, monkeypatch):
    cfg = resolve(_row(), PROFILE, seed=0)
    monkeypatch.setattr(
        torch.nn.functional, "cross_entropy", lambda *a, **k: torch.tensor(float("nan"), requires_grad=True)
    )
    with pytest.raises(NonFiniteLoss, match="epoch 1"):
        run_one(RunRequest(cfg, "r"), tmp_path, "cpu", None)
    assert not record_path(tmp_path, cfg).exists()


def test_failed_runs_are_reported_and_others_finish(tmp_path):
    good = resolve(_row(), PROFILE, seed=0)
    broken = Row(
        id="b",
        label="b",
        dataset="cifar10",
        backbone=Component("cifar_standard", {"width": -1.0}),
        head=Component("dense"),
        measures=("accuracy",),
    )
    bad = resolve(broken, PROFILE, seed=0)
    records, errors = execute_runs([RunRequest(good, "good"), RunRequest(bad, "bad")], tmp_path, "cpu")
    assert good.hash in records and bad.hash in errors and "width must be positive" in errors[bad.hash]
    failed = json.loads(failure_path(tmp_path, bad.hash).read_text())  # for `repro status` and other processes
    assert failed["label"] == "bad" and "width must be positive" in failed["error"]
    assert not (tmp_path / "runs" / f"{bad.hash}.lock").exists()


def test_no_checkpoint_is_written_after_the_last_epoch_and_a_kill_there_resumes_that_epoch(tmp_path):
    """The record follows the last epoch at once, so its checkpoint is skipped; a crash between the two
    resumes from the epoch before and still gives the uninterrupted record."""
    cfg = resolve(_row(), PROFILE, seed=0)
    whole = run_one(RunRequest(cfg, "r"), tmp_path / "a", "cpu", None, settings=EVERY_EPOCH)
    ckpt = checkpoint_path(tmp_path / "b", cfg)
    ckpt.parent.mkdir(parents=True)
    saved = []

    def crash_at_the_end(epoch, epochs, entry):
        saved.append(torch.load(ckpt, weights_only=True)["epoch"])
        if epoch == epochs:
            raise RuntimeError("killed before the record")

    with pytest.raises(RuntimeError):
        train_run(cfg, torch.device("cpu"), None, ckpt, crash_at_the_end, settings=EVERY_EPOCH)
    assert saved == [*range(1, cfg.epochs), cfg.epochs - 1]
    resumed = run_one(RunRequest(cfg, "r"), tmp_path / "b", "cpu", None, settings=EVERY_EPOCH)
    assert resumed["resumed_from_epoch"] == cfg.epochs - 1
    assert _strip(resumed) == _strip(whole)


def test_the_counts_name_the_runs_that_failed():
    """`repro run table5` with every run failing printed "runs: 0 trained here, 0 reused, 0 trained by another
    process" on the table's line, the failures only at the end (a simulated crash in an evaluator's walk-through)."""
    from repro.execution.protocol import Outcome, RunState
    from repro.execution.runs import RunBatch

    batch = RunBatch()
    batch.add(Outcome("a" * 16, RunState.FAILED, error="RuntimeError: boom"))
    batch.add(Outcome("b" * 16, RunState.RECORDED, record={"config_hash": "b" * 16}))
    assert batch.counts.failed == 1 and batch.errors == {"a" * 16: "RuntimeError: boom"}
    assert batch.counts.line() == "runs: 0 trained here, 0 reused, 1 trained by another process, 1 failed"
