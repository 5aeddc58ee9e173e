"""Every kind of unusable run record or checkpoint is moved aside with a warning naming it and why, and redone."""

import dataclasses
import io
import json

import pytest
import torch

from repro.plan.manifest import Row
from fake_records import PROFILE as FAKE  # tests/fake_records.py
from repro.models import Component
from repro.plan.run_config import resolve
from repro.execution.record_checks import record_digest
from repro.execution.runs import RunRequest, checkpoint_path, execute_runs, record_path, runs_dir
from repro.core.settings import Settings
from repro.train.loop import train_run

PROFILE = dataclasses.replace(FAKE, train_samples=32)  # tests/fake_records.py's but for these fields
ROW = Row(
    id="r",
    label="r",
    dataset="cifar10",
    backbone=Component("cifar_standard", {"width": 0.5}),
    head=Component("dense", {"hidden": (32,)}),
    measures=("accuracy",),
)  # small: every case retrains it
CFG = resolve(ROW, PROFILE, seed=0)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """An uninterrupted run's record, and the checkpoint the same run leaves after its first epoch."""
    root = tmp_path_factory.mktemp("trained")
    record = execute_runs([RunRequest(CFG, "r")], root / "whole", "cpu").records[CFG.hash]

    class Stop(Exception):
        pass

    def stop_after_one(epoch, epochs, entry):
        raise Stop

    ckpt = checkpoint_path(root / "partial", CFG)
    ckpt.parent.mkdir(parents=True)
    with pytest.raises(Stop):
        train_run(CFG, torch.device("cpu"), None, ckpt, stop_after_one, settings=Settings(checkpoint_seconds=0.0))
    return record, record_path(root / "whole", CFG).read_bytes(), ckpt.read_bytes()


def _edit(change, redigest=True):
    """A damage that edits the parsed record; `redigest`: as a buggy writer would, so the value check must catch it."""

    def damage(data: bytes) -> bytes:
        record = json.loads(data)
        change(record)
        if redigest:
            record["digest"] = record_digest(record)
        return json.dumps(record, indent=2).encode()  # json writes NaN / Infinity literally

    return damage


def _set(path, value):
    def change(record):
        *parents, last = path.split(".")
        target = record
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[last] = value

    return change


def _other_run(record):
    record["config"]["seed"], record["config_hash"], record["seed"] = 1, resolve(ROW, PROFILE, seed=1).hash, 1


RECORD_DAMAGE = [
    ("truncated", lambda d: d[: len(d) // 2], "not valid JSON"),
    ("not utf-8", lambda d: b"\xff\xfe" + d, "not valid JSON"),
    ("empty file", lambda d: b"", "not valid JSON"),
    ("a bare number", lambda d: b"0.93", "it is a JSON float, expected an object"),
    ("a list", lambda d: b"[]", "it is a JSON list, expected an object"),
    ("no metrics", _edit(lambda r: r.pop("metrics")), "missing keys ['metrics']"),
    ("empty metrics", _edit(_set("metrics", {})), "metrics is {}, expected an object"),
    ("metrics a number", _edit(_set("metrics", 0.9)), "metrics is 0.9, expected an object"),
    (
        "accuracy NaN",
        _edit(_set("metrics.accuracy", float("nan"))),
        "metrics.accuracy is nan, expected a number in [0, 1]",
    ),
    ("accuracy null", _edit(_set("metrics.accuracy", None)), "metrics.accuracy is null, expected a number in [0, 1]"),
    ("accuracy a string", _edit(_set("metrics.accuracy", "0.9")), 'metrics.accuracy is "0.9", expected a number'),
    ("accuracy a bool", _edit(_set("metrics.accuracy", True)), "metrics.accuracy is true, expected a number"),
    ("accuracy above 1", _edit(_set("metrics.accuracy", 1.5)), "metrics.accuracy is 1.5, expected a number in [0, 1]"),
    ("accuracy below 0", _edit(_set("metrics.accuracy", -0.1)), "metrics.accuracy is -0.1, expected"),
    ("final accuracy infinite", _edit(_set("metrics.final_accuracy", float("inf"))), "metrics.final_accuracy is inf"),
    ("chance 0", _edit(_set("metrics.chance", 0)), "metrics.chance is 0, expected a number in (0, 1]"),
    (
        "peak epoch beyond the run",
        _edit(_set("metrics.peak_epoch", 7)),
        "metrics.peak_epoch is 7, expected an epoch in 1..2",
    ),
    ("history empty", _edit(_set("history", [])), "history is a list of 0, expected a list of 2 epochs"),
    ("history accuracy NaN", _edit(_set("history.1.test_accuracy", float("nan"))), "history[1].test_accuracy is nan"),
    ("provenance a string", _edit(_set("provenance", "cpu")), 'provenance is "cpu", expected an object'),
    ("an older schema", _edit(_set("schema", 1)), "schema 1 is not 2"),
    # Issue 41, item 5: with a valid digest, `run` reused these and `status` or `report` (or `run` itself) crashed.
    (
        "wall seconds a word",
        _edit(_set("wall_seconds", "fast")),
        'wall_seconds is "fast", expected a number of seconds',
    ),
    (
        "usage counts as text",
        _edit(_set("routing.test_usage_by_class", [["3", "1"]])),
        'routing.test_usage_by_class is [["3", "1"]], expected a list of lists of counts',
    ),
    (
        "expert usage as text",
        _edit(_set("routing.expert_usage", ["3", "1"])),
        'routing.expert_usage is ["3", "1"], expected a list of counts',
    ),
    (
        "executor host a number",
        _edit(_set("provenance.executor.host", 7)),
        "provenance.executor.host is 7, expected text",
    ),
    (
        "threads as text",
        _edit(_set("provenance.reproducibility.threads", "1")),
        'provenance.reproducibility.threads is "1", expected a whole number of threads',
    ),
    ("another run's record", _edit(_other_run), "its config differs from the run's"),
    (
        "hand-edited accuracy",
        _edit(lambda r: r["metrics"].update(accuracy=r["metrics"]["accuracy"] + 0.01), redigest=False),
        "its digest does not match its content",
    ),
    ("digest removed", _edit(lambda r: r.pop("digest"), redigest=False), "missing keys ['digest']"),
]


@pytest.mark.parametrize("damage,reason", [c[1:] for c in RECORD_DAMAGE], ids=[c[0] for c in RECORD_DAMAGE])
def test_a_damaged_record_is_set_aside_with_its_reason_and_redone(tmp_path, capsys, trained, damage, reason):
    record, data, _ = trained
    path = record_path(tmp_path, CFG)
    path.parent.mkdir(parents=True)
    path.write_bytes(damage(data))
    damaged = path.read_bytes()
    batch = execute_runs([RunRequest(CFG, "r")], tmp_path, "cpu")
    out = capsys.readouterr().out
    assert f"warning: run record {path} is unusable ({reason}" in out
    aside = list(runs_dir(tmp_path).glob(f"{path.name}.invalid-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged and aside[0].name in out  # kept, not deleted
    assert (batch.counts.trained, batch.counts.reused) == (1, 0) and not batch.errors
    redone = json.loads(path.read_text())
    assert redone["metrics"] == record["metrics"] and redone["digest"] == record_digest(redone)
    assert execute_runs([RunRequest(CFG, "r")], tmp_path, "cpu").counts.reused == 1  # the redone record is accepted


def _state(change):
    def damage(data: bytes) -> bytes:
        state = torch.load(io.BytesIO(data), weights_only=True)
        state = change(state)
        buf = io.BytesIO()
        torch.save(state, buf)
        return buf.getvalue()

    return damage


def _reshape_first_weight(state):
    name = next(k for k, v in state["model"].items() if v.ndim >= 2)
    state["model"][name] = torch.zeros(3, 3)
    return state


CHECKPOINT_DAMAGE = [
    ("truncated", lambda d: d[: len(d) // 2], "it cannot be loaded: RuntimeError: PytorchStreamReader failed"),
    ("empty file", lambda d: b"", "it cannot be loaded"),
    ("not a checkpoint", lambda d: b"hello", "it cannot be loaded"),
    ("a list", _state(lambda s: [1, 2]), "it holds a list, expected a dict of training state"),
    ("no optimiser", _state(lambda s: {k: v for k, v in s.items() if k != "optimizer"}), "missing keys ['optimizer']"),
    (
        "another run's",
        _state(lambda s: {**s, "config_hash": "0" * 16}),
        f"it belongs to run {'0' * 16}, not {CFG.hash}",
    ),
    ("epoch beyond the run", _state(lambda s: {**s, "epoch": 5}), "epoch is 5, expected an epoch in 1..2"),
    (
        "history shorter than its epoch",
        _state(lambda s: {**s, "history": []}),
        "its history does not hold its 1 epochs",
    ),
    ("weights of another shape", _state(_reshape_first_weight), "it does not fit the run's model: Error(s) in loading"),
]


@pytest.mark.parametrize("damage,reason", [c[1:] for c in CHECKPOINT_DAMAGE], ids=[c[0] for c in CHECKPOINT_DAMAGE])
def test_a_damaged_checkpoint_is_set_aside_with_its_reason_and_the_run_restarts(
    tmp_path, capsys, trained, damage, reason
):
    record, _, ckpt_data = trained
    ckpt = checkpoint_path(tmp_path, CFG)
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(damage(ckpt_data))
    damaged = ckpt.read_bytes()
    batch = execute_runs([RunRequest(CFG, "r")], tmp_path, "cpu")
    out = capsys.readouterr().out
    assert f"warning: checkpoint {ckpt} is unusable ({reason}" in out and "the run restarts from epoch 0" in out
    aside = list(runs_dir(tmp_path).glob(f"{ckpt.name}.invalid-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged
    assert not batch.errors and not ckpt.exists()
    redone = batch.records[CFG.hash]
    assert redone["resumed_from_epoch"] == 0 and redone["metrics"] == record["metrics"]  # as if never started


def test_an_intact_checkpoint_resumes_without_a_warning(tmp_path, capsys, trained):
    record, _, ckpt_data = trained
    ckpt = checkpoint_path(tmp_path, CFG)
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(ckpt_data)
    redone = execute_runs([RunRequest(CFG, "r")], tmp_path, "cpu").records[CFG.hash]
    assert "warning" not in capsys.readouterr().out
    assert redone["resumed_from_epoch"] == 1 and redone["metrics"] == record["metrics"]


def test_a_checkpoint_that_cannot_be_read_is_named_and_left_alone(tmp_path, capsys, trained, monkeypatch):
    """Issue 41, item 3, for checkpoints: a read error (permission, I/O) is not damage. The run is skipped with one
    line; the checkpoint stays for when it can be read; nothing else is written."""
    import repro.execution.records as records
    from repro.execution.records import attempt_run
    from repro.execution.protocol import RunState

    _, _, ckpt_data = trained
    ckpt = checkpoint_path(tmp_path, CFG)
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(ckpt_data)

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(records.torch, "load", refuse)
    outcome = attempt_run(RunRequest(CFG, "r"), tmp_path, "cpu", None)
    assert outcome.state is RunState.FAILED
    assert outcome.error == f"cannot read {ckpt}: Permission denied; it is left as it is and its run is skipped"
    assert "warning" not in capsys.readouterr().out
    assert sorted(p.name for p in runs_dir(tmp_path).iterdir()) == [ckpt.name] and ckpt.read_bytes() == ckpt_data


def test_an_error_raised_on_the_way_out_of_a_stop_is_the_stop_not_a_failure():
    """A SIGTERM that landed inside torch's lazy import of triton left it half-imported; the next use raised
    AttributeError, which was recorded as the run's failure (seen once in the ten-SIGKILL loop)."""
    from repro.execution.records import interrupted_by

    def failing_after_a_stop():
        try:
            raise KeyboardInterrupt("SIGTERM")
        except KeyboardInterrupt:
            raise AttributeError("module 'triton.backends' has no attribute 'compiler'")

    try:
        failing_after_a_stop()
    except AttributeError as exc:
        assert isinstance(interrupted_by(exc), KeyboardInterrupt)
    assert interrupted_by(ValueError("a real failure")) is None


class _Runs:
    """Pickles as a call of os.system: what a forged checkpoint holds."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


def test_a_forged_checkpoint_is_refused_in_one_short_line_without_running_it(tmp_path, capsys, trained):
    """Issue 45, low: the reason repeated torch's whole weights_only paragraph; the global it names is what matters."""
    marker = tmp_path / "ran"
    ckpt = checkpoint_path(tmp_path, CFG)
    ckpt.parent.mkdir(parents=True)
    buffer = io.BytesIO()
    torch.save({"model": _Runs(f"touch {marker}")}, buffer)
    ckpt.write_bytes(buffer.getvalue())
    batch = execute_runs([RunRequest(CFG, "r")], tmp_path, "cpu")
    out = capsys.readouterr().out
    assert (
        f"warning: checkpoint {ckpt} is unusable (it cannot be loaded: it names posix.system, which a checkpoint "
        "never holds; refused without running it); moved to"
    ) in out
    assert "weights_only" not in out and not marker.exists() and not batch.errors


def test_a_fifo_as_a_checkpoint_is_set_aside_not_waited_on(tmp_path, capsys, trained):
    import os
    import signal

    ckpt = checkpoint_path(tmp_path, CFG)
    ckpt.parent.mkdir(parents=True)
    os.mkfifo(ckpt)
    signal.alarm(60)  # a blocked load would otherwise hang the suite
    try:
        batch = execute_runs([RunRequest(CFG, "r")], tmp_path, "cpu")
    finally:
        signal.alarm(0)
    assert f"warning: checkpoint {ckpt} is unusable (it is a FIFO)" in capsys.readouterr().out
    assert not batch.errors and CFG.hash in batch.records
