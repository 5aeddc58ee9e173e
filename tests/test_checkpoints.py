"""Training checkpoints (repro.train.checkpoints): generator states no map_location moves, a bit-identical resume, and
the interval between checkpoints."""

import dataclasses

import pytest
import torch

from repro.core.environment import BadEnvironment
from repro.core.settings import Settings
from repro.train.checkpoints import restore_rng, rng_state
from repro.plan.manifest import Row
from repro.models import Component
from repro.plan.run_config import resolve
from repro.train.loop import train_run
from fake_records import PROFILE  # tests/fake_records.py: 2 epochs of 64 synthetic images at 16 px

ROW = Row(
    id="r",
    label="r",
    dataset="cifar10",
    backbone=Component("cifar_standard"),
    head=Component("dense"),
    measures=("accuracy",),
)
EVERY_EPOCH = Settings(checkpoint_seconds=0.0)  # a checkpoint after every epoch: the resume tests kill after one


def test_rng_state_survives_a_checkpoint_mapped_off_the_cpu(tmp_path):
    """On CUDA the checkpoint is loaded with map_location=device; "meta" stands in for the GPU here."""
    torch.manual_seed(3)
    path = tmp_path / "ckpt"
    torch.save({"rng": rng_state(torch.device("cpu"))}, path)
    expected = torch.rand(5)
    state = torch.load(path, map_location=lambda storage, loc: storage.to("meta"), weights_only=True)
    with pytest.raises(TypeError, match="ByteTensor"):  # what the old tensor-valued state hit
        torch.set_rng_state(torch.get_rng_state().to("meta"))
    torch.manual_seed(99)
    restore_rng(state["rng"], torch.device("meta"))
    assert torch.equal(torch.rand(5), expected)


def test_a_checkpoint_of_the_old_format_still_restores():
    torch.manual_seed(4)
    old = torch.get_rng_state()
    expected = torch.rand(3)
    restore_rng(old, torch.device("cpu"))
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.slow
def test_resume_from_a_checkpoint_loaded_with_a_device_map_location(tmp_path, monkeypatch):
    """Loaded with map_location=device as on CUDA: the RNG states are bytes no map_location moves; bit-identical."""
    cfg = resolve(ROW, PROFILE, seed=0)
    whole = train_run(cfg, torch.device("cpu"), None, tmp_path / "a.ckpt", settings=EVERY_EPOCH)

    class Crash(Exception):
        pass

    def crash(epoch, epochs, entry):
        if epoch == 1:
            raise Crash

    ckpt = tmp_path / "b.ckpt"
    with pytest.raises(Crash):
        train_run(cfg, torch.device("cpu"), None, ckpt, crash, settings=EVERY_EPOCH)
    real_load, seen = torch.load, []

    def load(path, map_location=None, **kw):
        seen.append(map_location)
        state = real_load(path, map_location=map_location, **kw)
        assert not isinstance(state["rng"]["cpu"], torch.Tensor)  # nothing a map_location can move
        return state

    monkeypatch.setattr(torch, "load", load)
    resumed = train_run(cfg, torch.device("cpu"), None, ckpt, settings=EVERY_EPOCH)
    assert seen == [torch.device("cpu")]
    strip = lambda r: [{k: v for k, v in h.items() if k != "seconds"} for h in r["history"]]  # noqa: E731
    assert strip(resumed) == strip(whole) and resumed["metrics"] == whole["metrics"]


def test_the_checkpoint_interval_is_read_from_the_environment():
    assert Settings.read({}).checkpoint_seconds == Settings().checkpoint_seconds == 60.0
    assert Settings.read({"REPRO_CHECKPOINT_SECONDS": "0"}).checkpoint_seconds == 0.0
    assert Settings.read({"REPRO_CHECKPOINT_SECONDS": "2.5"}).checkpoint_seconds == 2.5
    for bad in ("-1", "soon", "nan"):
        with pytest.raises(ValueError, match=f"REPRO_CHECKPOINT_SECONDS='{bad}': expected a number of seconds"):
            Settings.read({"REPRO_CHECKPOINT_SECONDS": bad})
    assert issubclass(BadEnvironment, ValueError)


@pytest.mark.parametrize("interval,written", [("0", [1, 2]), ("", [])], ids=["every epoch", "default interval"])
def test_a_checkpoint_follows_an_epoch_only_once_the_interval_has_passed(tmp_path, interval, written):
    """Epochs of a fraction of a second: with the default interval (a minute) no checkpoint is written at all;
    with 0, one after every epoch but the last, as the resume tests need."""
    settings = Settings.read({"REPRO_CHECKPOINT_SECONDS": interval})
    cfg = resolve(ROW, dataclasses.replace(PROFILE, epochs=3), seed=0)
    ckpt, seen = tmp_path / "c.ckpt", []

    def look(epoch, epochs, entry):
        if ckpt.exists():
            seen.append(torch.load(ckpt, weights_only=True)["epoch"])

    out = train_run(cfg, torch.device("cpu"), None, ckpt, look, settings=settings)
    assert sorted(set(seen)) == written and len(out["history"]) == 3
    assert ("checkpoints" in out["timings"]) == bool(written)
