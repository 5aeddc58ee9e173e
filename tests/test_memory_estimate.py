"""repro.train.memory: a run's memory estimated before it trains, and refused in one line when the device lacks it.

The issue's row (num_experts 256, expert_hidden 16384: within the allowed ranges) started, then died allocating
37.6 GB; it is refused before any run, naming the estimate and the limit. The estimate's two passes (the meta
device, and a small batch on the CPU where routing needs values) agree where both run."""

import dataclasses
import re

import pytest
import torch
from typer.testing import CliRunner

from repro.cli import app
from repro.models import Component, build_model
from repro.plan.manifest import Row
from repro.plan.run_config import resolve
from repro.spec.profiles import Profile
from repro.train import memory

PROFILE = Profile(
    description="test",
    evidence="pipeline",
    seeds=1,
    epochs=1,
    data="synthetic",
    train_samples=64,
    test_samples=32,
    batch_size=32,
    max_image_size=16,
    pretrained=False,
)
BIG_HEAD = {"name": "sparse_moe", "num_experts": 256, "expert_hidden": 16384}

BIG = """
id = "big"
title = "the issue's row"
paper_ref = "test"
description = "A row within the allowed ranges that no CPU here holds."
seeds = 1

[[rows]]
id = "moe"
label = "moe"
dataset = "cifar10"
measures = ["accuracy"]
backbone = { name = "cifar_standard" }
head = { name = "sparse_moe", num_experts = 256, expert_hidden = 16384 }
"""


def cfg(head: dict, optimizer: str = "adam"):
    row = Row(
        id="r",
        label="r",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component(head["name"], {k: v for k, v in head.items() if k != "name"}),
        measures=("accuracy",),
    )
    return dataclasses.replace(resolve(row, PROFILE, seed=0), optimizer=optimizer)


@pytest.mark.parametrize("optimizer, tensors", [("adam", 4), ("sgd", 3)])  # weights, gradients, the optimiser's
def test_the_state_is_the_parameters_times_what_the_optimiser_keeps(optimizer, tensors):
    c = cfg({"name": "dense"}, optimizer)
    model = build_model(c.dataset, Component(**c.backbone), Component(**c.head), image_size=c.image_size)
    params = sum(p.numel() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    found = memory._measure(c)
    assert (found.parameters, found.state_bytes) == (params, 4 * tensors * params + buffers)


def test_the_meta_pass_and_the_cpu_pass_count_the_same_activations():
    c = cfg({"name": "dense"})
    shape = (4, 3, c.image_size, c.image_size)

    def model(device):
        with torch.device(device):
            return build_model(c.dataset, Component(**c.backbone), Component(**c.head), image_size=c.image_size).train()

    meta = memory._saved_bytes(model("meta"), torch.empty(shape, device="meta"))
    cpu = memory._saved_bytes(model("cpu"), torch.randn(shape))
    assert meta == cpu > 0
    twice = memory._saved_bytes(model("meta"), torch.empty((8, *shape[1:]), device="meta"))
    assert twice == 2 * meta  # activations scale with the batch, as the CPU pass's scaling assumes


def test_the_issues_row_is_refused_naming_the_estimate_and_the_limit():
    c = cfg(BIG_HEAD)
    line = memory.memory_problem(c, "big/moe seed 0", "cpu", (16 * 10**9, "this machine has 16.0 GB available"))
    found = memory.estimate(c, 16 * 10**9)
    assert found.activation_bytes is None and found.state_bytes > 30e9  # refused on its state alone: no pass made
    assert line == (
        f"big/moe seed 0 needs at least {memory.gigabytes(found.state_bytes)} "
        f"({memory.gigabytes(found.state_bytes)} for {found.parameters / 1e9:.2f} G parameters with "
        "gradients and optimiser state, before any activation) to train, and this machine has 16.0 GB "
        "available; make the row smaller (num_experts, expert_hidden, the batch) or train it on a "
        "device with more memory"
    )
    small = cfg({"name": "sparse_moe", "expert_hidden": 32})  # routing needs values: the CPU pass counts it
    assert memory.memory_problem(small, "t/moe seed 0", "cpu", (16 * 10**9, "")) is None
    assert memory.estimate(small).activation_bytes > 0


def test_repro_run_refuses_the_table_before_any_run(tmp_path, monkeypatch):
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "big.toml").write_text(BIG)
    monkeypatch.setenv("REPRO_MANIFESTS", str(tmp_path / "manifests"))
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(memory, "device_memory", lambda device: (16 * 10**9, "this machine has 16.0 GB available"))
    done = CliRunner().invoke(
        app, ["run", "big", "-o", str(tmp_path / "results"), "--device", "cpu"], env={"COLUMNS": "300"}
    )
    assert done.exit_code == 2, done.output
    said = " ".join(done.output.split())
    assert re.search(r"error: big: nothing was trained: big/moe seed 0 needs at least \d+\.\d GB \(", said), said
    assert "and this machine has 16.0 GB available" in said and re.search(r"big: refused: [\d.]+ s", said)
    assert not list((tmp_path / "results" / "runs").glob("*.json"))


def test_the_limit_is_the_gpus_memory_on_cuda_and_what_is_available_on_a_cpu(monkeypatch):
    """The CUDA branch runs here by its nearest CPU equivalent: torch's device properties, stood in."""

    class Props:
        name, total_memory = "NVIDIA H100 80GB HBM3", 85_024_112_640

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Props)
    assert memory.device_memory("cuda") == (85_024_112_640, "the GPU (NVIDIA H100 80GB HBM3) has 85.0 GB")
    room, where = memory.device_memory("cpu")
    assert room > 0 and where in (
        f"this machine has {memory.gigabytes(room)} available",
        f"this container's memory limit leaves {memory.gigabytes(room)}",
    )
