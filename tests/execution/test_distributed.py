"""One run on N processes (repro.runtime.distributed, issue 14.3): shards, and 2 gloo processes against 1.

Tolerance. Two processes compute the same per-sample arithmetic as one, but add it up in
another order: DDP's all-reduce sums the ranks' gradients of their B/2 halves (one process
sums all B at once), kernels run on half batches, and evaluation adds per-rank sums. The
results agree to float32 rounding; measured on this run (cifar_standard, dense head without
dropout, Adam, 2 epochs of 3 steps of 64 = 2 x 32): train loss and accuracy identical, test
loss 1.1e-7 and 1.9e-7 apart, test accuracy identical, weights at most 9.2e-6 apart (Adam
divides by the gradient's size, so rounding in a near-zero gradient moves a weight by up to
~lr x 1e-2). The test allows 1e-5 relative on losses, one image on accuracies, 1e-4 on weights.
A fixed world size adds in a fixed order: a 2-process run stopped and resumed is bit-identical.
With dropout or BatchNorm the runs differ by more than rounding (masks are drawn per rank;
batch statistics are per local batch), as in any DDP implementation.
"""

import json
import math
import time

import pytest
import torch

from repro.data.imagenet import EpochSampler
from repro.data.loader import TensorLoader
from repro.runtime.distributed import World, local_batch, shard_positions
from repro.plan.manifest import Row
from repro.spec.profiles import Profile
from repro.models import Component
from repro.plan.run_config import resolve


def _images(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.arange(n, dtype=torch.uint8).view(n, 1, 1, 1).expand(n, 1, 4, 4).contiguous()  # image i is all i
    return x, torch.arange(n) % 3


def _ids(x: torch.Tensor) -> list[int]:
    """Which images a batch holds, read back from a pixel (normalised with mean 0, std 1/255: the id)."""
    return x[:, 0, 2, 2].round().long().tolist()


def test_shard_positions_golden():
    assert shard_positions(7, 0, 2, even=True).tolist() == [0, 2, 4]
    assert shard_positions(7, 1, 2, even=True).tolist() == [1, 3, 5]
    assert shard_positions(7, 1, 2, even=False).tolist() == [1, 3, 5]
    assert shard_positions(7, 0, 2, even=False).tolist() == [0, 2, 4, 6]
    assert shard_positions(5, 0, 1, even=True).tolist() == [0, 1, 2, 3, 4]


def test_gpus_per_run_relaunches_the_command_under_torchrun():
    import sys

    from repro.runtime.distributed import torchrun_command

    head = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4", "-m", "repro"]
    assert torchrun_command(["run", "table6", "--gpus-per-run", "4", "-p", "full"], 4) == head + [
        "run",
        "table6",
        "-p",
        "full",
    ]
    assert torchrun_command(["table6", "--gpus-per-run=4"], 4) == head + ["table6"]


def test_local_batch_splits_the_global_batch():
    assert local_batch(256, World(0, 2)) == 128 and local_batch(256, World()) == 256
    with pytest.raises(ValueError, match="batch_size 256 does not split over 3 processes"):
        local_batch(256, World(0, 3))


@pytest.mark.parametrize("n", [19, 24, 5])
def test_tensor_loader_shards_make_one_process_steps(n):
    """Step i's two local batches of 4, interleaved, are one process's batch of 8: same images, same crops and flips."""
    x = torch.randint(0, 256, (n, 3, 8, 8), generator=torch.Generator().manual_seed(n), dtype=torch.uint8)
    y = torch.arange(n)
    kw = dict(mean=(0.5,) * 3, std=(0.25,) * 3, seed=3)
    one = TensorLoader(x, y, 8, train=True, **kw)
    ranks = [TensorLoader(x, y, 4, train=True, shard=(r, 2), **kw) for r in range(2)]
    for epoch in (0, 1):
        for loader in (one, *ranks):
            loader.set_epoch(epoch)
        whole, parts = list(one), [list(r) for r in ranks]
        assert len(ranks[0]) == len(ranks[1]) == len(one) == len(whole) == len(parts[0]) >= 1
        for (xb, yb), (x0, y0), (x1, y1) in zip(whole, *parts):
            merged = torch.stack([x0, x1], 1).flatten(0, 1)  # (2 * B_local, C, H, W): r0, r1, r0, ...
            assert len(merged) == len(xb) - len(xb) % 2
            assert torch.equal(merged, xb[: len(merged)])
            assert torch.equal(torch.stack([y0, y1], 1).flatten(), yb[: len(merged)])


def test_tensor_loader_test_shards_cover_every_image_once():
    x, y = _images(11)
    kw = dict(mean=(0.0,), std=(1.0 / 255,))
    seen = sorted(
        v for r in range(2) for xb, _ in TensorLoader(x, y, 4, train=False, shard=(r, 2), **kw) for v in _ids(xb)
    )
    assert seen == list(range(11))


def test_epoch_sampler_shards_interleave_the_permutation():
    one = EpochSampler(11, shuffle=True, seed=5)
    ranks = [EpochSampler(11, shuffle=True, seed=5, shard=(r, 2)) for r in range(2)]
    for s in (one, *ranks):
        s.epoch = 2
    order = [i for i, _ in one]
    assert [i for i, _ in ranks[0]] == order[0:10:2] and [i for i, _ in ranks[1]] == order[1:10:2]
    assert len(ranks[0]) == len(ranks[1]) == 5
    tests = [EpochSampler(11, shuffle=False, shard=(r, 2)) for r in range(2)]
    assert sorted(i for s in tests for i, _ in s) == list(range(11))  # evaluation: every image once


@pytest.mark.parametrize("pipeline", ["pil", "decode_cpu"])
def test_folder_loader_shards_make_one_process_steps(tmp_path, pipeline):
    """The same for ImageNet's streaming loader: 11 images, global batch 4 on 2 ranks, crops drawn per image."""
    import numpy as np
    from PIL import Image

    from repro.data.imagenet import image_folder_loader

    rng = np.random.default_rng(0)
    for cls in ("a", "b"):
        (tmp_path / cls).mkdir()
        for i in range(6 if cls == "a" else 5):
            Image.fromarray(rng.integers(0, 256, (20, 28, 3), dtype=np.uint8)).save(tmp_path / cls / f"{i}.png")
    kw = dict(train=True, image_size=16, workers=0, seed=2, pipeline=pipeline)
    one = image_folder_loader(tmp_path, 4, **kw)
    ranks = [image_folder_loader(tmp_path, 2, shard=(r, 2), **kw) for r in range(2)]
    for loader in (one, *ranks):
        loader.set_epoch(1)
    whole, parts = list(one), [list(r) for r in ranks]
    assert len(whole) == len(parts[0]) == len(parts[1]) == len(ranks[0]) == 2
    for (xb, yb), (x0, y0), (x1, y1) in zip(whole, *parts):
        assert torch.equal(torch.stack([x0, x1], 1).flatten(0, 1), xb)
        assert torch.equal(torch.stack([y0, y1], 1).flatten(), yb)


# --- two gloo processes on this CPU --------------------------------------------------------------------------

PROFILE = Profile(
    description="t",
    evidence="pipeline",
    seeds=1,
    epochs=2,
    data="synthetic",
    train_samples=200,
    test_samples=101,
    batch_size=64,
    max_image_size=16,
    pretrained=False,
)
METRICS = ("train_loss", "train_accuracy", "aux_loss", "test_loss", "test_accuracy")


def _cfg():
    row = Row(
        id="r",
        label="r",
        dataset="cifar10",
        backbone=Component("cifar_standard"),
        head=Component("dense", {"dropout": 0.0}),
        measures=("accuracy",),
    )
    return resolve(row, PROFILE, seed=0)


def _two(cfg, folder, name: str, stop_after: int = 0) -> dict:
    import torch.multiprocessing as mp

    from . import ddp_worker

    out = folder / f"{name}.json"
    mp.spawn(
        ddp_worker.rank_main,
        args=(2, ddp_worker.free_port(), cfg, str(folder / f"{name}.ckpt"), str(out), stop_after),
        nprocs=2,
    )
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same run on one process and on two (gloo), one thread each; and the seconds each took."""
    from repro.core.settings import Settings
    from repro.train.loop import train_run

    folder = tmp_path_factory.mktemp("ddp")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        t0 = time.perf_counter()
        one = train_run(
            _cfg(), torch.device("cpu"), None, folder / "one.ckpt", settings=Settings(checkpoint_seconds=0.0)
        )
        t1 = time.perf_counter()
        two = _two(_cfg(), folder, "two")
        t2 = time.perf_counter()
    finally:
        torch.set_num_threads(threads)
    print(f"1 process {t1 - t0:.1f} s, 2 processes {t2 - t1:.1f} s (with their start)")
    return folder, one, two


@pytest.mark.slow
def test_two_processes_give_the_one_process_record(runs):
    _, one, two = runs
    assert one["engine"]["world_size"] == 1 and two["engine"]["world_size"] == 2
    assert two["engine"]["backend"] == "gloo" and two["engine"]["local_batch_size"] == PROFILE.batch_size // 2
    worst = {}
    for a, b in zip(one["history"], two["history"], strict=True):
        for k in METRICS:
            worst[k] = max(worst.get(k, 0.0), abs(a[k] - b[k]))
            if k.endswith("loss"):  # float rounding of the all-reduced gradients through fused Adam: ~1e-5
                assert math.isclose(a[k], b[k], rel_tol=5e-5, abs_tol=1e-7), (k, a[k], b[k])
            else:  # at most one image's prediction flipped by rounding
                assert abs(a[k] - b[k]) <= 1 / min(PROFILE.test_samples, PROFILE.train_samples) + 1e-12, (k, a, b)
    folder = runs[0]
    w1, w2 = (torch.load(folder / f"{n}.ckpt", weights_only=True)["model"] for n in ("one", "two"))
    worst["weights"] = max((w1[k].float() - w2[k].float()).abs().max().item() for k in w1)
    print("max |1 process - 2 processes|:", worst)
    assert 0 < worst["weights"] < 1e-4  # Adam (lr 1e-3) turns rounding in near-zero gradients into ~1e-5 steps
    assert one["metrics"]["accuracy"] == pytest.approx(
        two["metrics"]["accuracy"], abs=1 / PROFILE.test_samples + 1e-9
    )  # one image


@pytest.mark.slow
def test_a_two_process_run_stopped_after_an_epoch_resumes_to_the_same_record(runs):
    """Rank 0's checkpoint, loaded on both ranks, continues the run bit for bit (a fixed world adds in a fixed
    order)."""
    folder, _, two = runs
    assert _two(_cfg(), folder, "cut", stop_after=1) == {"stopped_after": 1}
    state = torch.load(folder / "cut.ckpt", weights_only=True)
    assert state["epoch"] == 1
    resumed = _two(_cfg(), folder, "cut")
    assert len(resumed["history"]) == 2
    for a, b in zip(two["history"], resumed["history"], strict=True):
        assert {k: a[k] for k in METRICS} == {k: b[k] for k in METRICS}
    w, w_resumed = (torch.load(folder / f"{n}.ckpt", weights_only=True)["model"] for n in ("two", "cut"))
    assert all(torch.equal(w[k], w_resumed[k]) for k in w)


@pytest.mark.slow
def test_torchrun_trains_a_table_with_rank_0_writing_the_records(tmp_path):
    """`torchrun --nproc-per-node 2 -m repro <id>`: every run (dense and sparse MoE) trained once on both ranks."""
    import subprocess
    import sys

    from .minitable import counts, write_manifest

    env = write_manifest(tmp_path, epochs=1, train_samples=64)
    results = tmp_path / "results"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "repro",
            "mini",
            "--results-dir",
            str(results),
            "--device",
            "cpu",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert counts(out.stdout) == (4, 0, 0)  # printed once: by rank 0
    records = [json.loads(p.read_text()) for p in (results / "runs").glob("*.json")]
    assert len(records) == 4 and not list((results / "runs").glob("*.ckpt"))
    for r in records:
        assert r["engine"]["world_size"] == 2 and r["provenance"]["executor"]["world_size"] == 2
        assert r["config"]["batch_size"] == 32  # the global batch: the config (and its hash) as on one process
    moe = [r for r in records if r["config"]["head"]["name"] == "sparse_moe"]
    assert len(moe) == 2
    for r in moe:  # routing tallies summed over both ranks: each of the epoch's 64 samples once (k = 1)
        last = r["history"][-1]
        assert last["k"] == 1 and sum(last["expert_usage"]) + last["dropped"] == 64
