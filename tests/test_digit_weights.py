"""Backbones pretrained on the digit stand-in (repro.train.digit_weights): made once, loaded, frozen, recorded."""

import threading
import time
from dataclasses import replace

import pytest
import torch

from repro.train import digit_weights
from repro.train.digit_weights import Pretraining
from repro.runtime.locks import LockSettings, try_lock
from repro.plan.manifest import Row
from repro.spec.profiles import Profile
from repro.models import Component, build_model
from repro.plan.run_config import resolve

pytestmark = pytest.mark.slow  # each test pretrains a ResNet-18

SMALL = Pretraining(images=256, test_images=100, epochs=1, batch_size=64)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(digit_weights, "PRETRAIN", SMALL)
    return tmp_path / "cache"


def test_made_once_with_a_record_and_loaded_by_every_backbone_that_starts_from_it(cache, one_thread, monkeypatch):
    seen = []
    real = digit_weights._pretrain_on
    monkeypatch.setattr(digit_weights, "_pretrain_on", lambda *a: (seen.append(torch.get_num_threads()), real(*a)))
    path = digit_weights.ensure("resnet18_moeconv", "imagenet", 16, SMALL, cache=cache)  # ResNet-18's weights
    assert path.parent == cache / "digit_weights" and path.name.startswith("resnet18-imagenet-16px-")
    record = digit_weights.record(path)
    assert record["sha256"] == digit_weights.sha256(path) and len(record["test_digit_accuracy"]) == 3
    assert record["settings"]["images"] == 256 and "read the 3 digits" in record["objective"]
    assert record["settings"]["threads"] == 2 and seen == [2]  # fixed: not this machine's core count
    assert torch.get_num_threads() == 1
    torch.manual_seed(7)
    before = torch.get_rng_state()
    digit_weights.ensure("resnet18", "imagenet", 16, replace(SMALL, images=128), cache=cache)  # another file
    assert torch.equal(torch.get_rng_state(), before)  # the caller's stream, as if the file had been cached
    stamp = path.stat().st_mtime_ns
    assert digit_weights.ensure("resnet18", "imagenet", 16, SMALL, cache=cache) == path
    assert path.stat().st_mtime_ns == stamp
    state = torch.load(path, weights_only=True)
    plain = build_model("imagenet", Component("resnet18"), Component("dense"), pretrained=path, image_size=16)
    routed = build_model("imagenet", Component("resnet18_moeconv"), Component("dense"), pretrained=path, image_size=16)
    assert torch.equal(plain.backbone.net.conv1.weight, state["conv1.weight"])
    assert torch.equal(routed.backbone.net.conv1.weight, state["conv1.weight"])  # the stem is not routed
    assert "digit stand-in" in digit_weights.describe(path)
    other = digit_weights.weights_path("resnet18", "imagenet", 16, replace(SMALL, epochs=2), cache)
    assert other != path  # other settings make other weights


def test_a_second_process_waits_for_the_first_ones_file(cache, monkeypatch):
    monkeypatch.setattr(digit_weights, "POLL_S", 0.05)
    path = digit_weights.weights_path("resnet18", "imagenet", 16, SMALL, cache)
    path.parent.mkdir(parents=True)
    lock = try_lock(path.parent, path.stem, LockSettings())  # "another process" pretrains
    got = []
    waiter = threading.Thread(
        target=lambda: got.append(digit_weights.ensure("resnet18", "imagenet", 16, SMALL, cache=cache))
    )
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and not path.exists()
    digit_weights._pretrain("resnet18", "imagenet", 16, SMALL, path, lock)
    lock.release()
    waiter.join(timeout=30)
    assert got == [path]


def test_a_frozen_digit_pretrained_run_trains_its_head_only_and_says_whose_weights(cache, tmp_path):
    from repro.core.settings import Settings
    from repro.train.loop import train_run

    row = Row(
        id="r",
        label="r",
        dataset="imagenet",
        backbone=Component("resnet18"),
        head=Component("dense"),
        measures=("accuracy",),
    )
    profile = Profile(
        description="f",
        evidence="functional",
        data="digits",
        epochs=1,
        train_samples=256,
        test_samples=100,
        batch_size=64,
        max_image_size=16,
        pretrained_on="digits",
        backbone_lr_scale=0.0,
        optimizer="adam",
        lr=1e-3,
    )
    cfg = resolve(row, profile, 0)
    out = train_run(cfg, torch.device("cpu"), None, tmp_path / "ck.pt", settings=Settings(cache=cache))
    path = digit_weights.weights_path("resnet18", "imagenet", 16, cache=cache)
    assert path.is_file()  # made in the settings' cache folder
    assert out["weights"] == digit_weights.describe(path) and out["frozen_parameters"] > 0
    assert out["metrics"]["chance"] == pytest.approx(1 / 256)  # 256 training images of 256 classes
