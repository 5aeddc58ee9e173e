"""repro.cost.estimate, repro.cost.calibration, repro.data.sizes: the cost model on fixtures of known size."""

import os
import subprocess
import sys

import pytest

from checkout import REPO_ROOT
from repro.core.settings import Settings
from repro.cost import calibration as cal
from repro.cost import estimate as est
from repro.data import sizes
from repro.plan.table_plan import build_plan
from repro.plan.run_config import planned_runs
from inline_manifests import inline_manifest


def _manifest(rows, full=None):
    return inline_manifest(
        {
            "id": "t",
            "title": "T",
            "paper_ref": "Table 1",
            "description": "d",
            "paper_table": "table1",
            "profiles": {
                "smoke": {
                    "description": "s",
                    "evidence": "pipeline",
                    "device": "cpu",
                    "seeds": 2,
                    "epochs": 3,
                    "data": "synthetic",
                    "train_samples": 256,
                    "test_samples": 128,
                    "batch_size": 32,
                    "max_image_size": 16,
                    "pretrained": False,
                },
                "full": {"description": "f", "evidence": "paper", "seeds": 2, **(full or {})},
            },
            "rows": [
                {
                    "id": i,
                    "label": i,
                    "dataset": d,
                    "measures": ["flops", "accuracy"],
                    "backbone": {"name": "cifar_standard"},
                    "head": {"name": "dense", **h},
                }
                for i, d, h in rows
            ],
        },
        "t.toml",
    )


CPU = cal.Throughput("cpu", "cpu", 1e9, 0.004, "test cpu")
GPU = cal.Throughput("A100", "gpu", 1e12, 0.003, "reference, not measured: test")


@pytest.fixture
def fixed(monkeypatch, tmp_path):
    """1e9 MAC/s CPU, 1e12 MAC/s GPU, models of 1e6 backbone + 1e5 head MACs per image at full size; a cost model
    of tmp_path/data and tmp_path/cache, as a command whose settings name them makes it."""
    monkeypatch.setattr(est, "cpu_throughput", lambda speed=None: CPU)
    monkeypatch.setattr(est, "gpu_throughput", lambda *a: GPU)
    monkeypatch.setattr(est, "estimate_macs", lambda *a: {"backbone_macs": 1e6, "head_macs": 1e5})
    settings = Settings.read({"REPRO_DATA": str(tmp_path / "data"), "REPRO_CACHE": str(tmp_path / "cache")})
    return lambda *args, **kw: est.CostModel.under(settings, **dict(zip(("executor",), args)), **kw)


def test_run_time_by_hand_on_synthetic_data(fixed):
    m = _manifest([("a", "cifar10", {})])
    cfg = planned_runs(m, m.profiles["smoke"])[0].cfg
    t = fixed().run_time(cfg, "t", CPU)
    macs = 1e6 * (16 / 32) ** 2 + 1e5  # 16 px: the backbone at a quarter of its 32 px count
    assert t.compute_s == pytest.approx(3 * (3 * macs * 256 + macs * 128) / 1e9)  # 3 epochs
    assert t.overhead_s == pytest.approx(3 * (256 // 32 + 128 // 32 + 1) * 0.004)
    assert t.data == "synthetic data"


def test_real_data_sizes_say_whether_they_are_on_disk(fixed, tmp_path):
    m = _manifest([("a", "cifar10", {})])
    cfg = planned_runs(m, m.profiles["full"])[0].cfg
    absent = fixed().run_time(cfg, "t", GPU)
    assert absent.data == "paper (not on disk)"
    assert absent.compute_s == pytest.approx(50 * (3 * 1.1e6 * 50_000 + 1.1e6 * 10_000) / 1e12)
    (tmp_path / "data" / "cifar-10-batches-py").mkdir(parents=True)
    assert fixed().run_time(cfg, "t", GPU).data == "paper (the folder holds no images)"


def _cifar_folder(root, per_batch, test):
    """torchvision's CIFAR-10 layout holding 5 x `per_batch` training and `test` test images, a meta and a readme."""
    import pickle

    import numpy as np

    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name, n in [(f"data_batch_{i}", per_batch) for i in range(1, 6)] + [("test_batch", test)]:
        batch = {"data": np.zeros((n, 3072), dtype=np.uint8), "labels": [i % 10 for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(batch))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": [str(i) for i in range(10)]}))
    (folder / "readme.html").write_text("<html></html>")
    return folder


def test_a_cifar_of_a_users_own_is_priced_by_the_images_it_holds(fixed, tmp_path, monkeypatch):
    """A 200-image CIFAR-10 in torchvision's format is 200 images, not the 50,000 its name suggests; the count is
    cached until a file changes."""
    folder = _cifar_folder(tmp_path / "data", 40, 40)
    m = _manifest([("a", "cifar10", {})])
    cfg = planned_runs(m, m.profiles["full"])[0].cfg
    t = fixed().run_time(cfg, "t", GPU)
    assert t.data == "on disk (counted)"
    assert t.compute_s == pytest.approx(50 * (3 * 1.1e6 * 200 + 1.1e6 * 40) / 1e12)
    sign, count = sizes.COUNTERS["cifar_pickles"]
    calls = []
    monkeypatch.setitem(sizes.COUNTERS, "cifar_pickles", (sign, lambda f: calls.append(f) or count(f)))
    counted = sizes.split_sizes("cifar10", tmp_path / "data", tmp_path / "cache")
    assert counted == sizes.SplitSizes(200, 40, "on disk (counted)") and calls == []  # the cost model's cache
    _cifar_folder(tmp_path / "more", 100, 60)
    (folder / "test_batch").write_bytes((tmp_path / "more" / "cifar-10-batches-py" / "test_batch").read_bytes())
    counted = sizes.split_sizes("cifar10", tmp_path / "data", tmp_path / "cache")
    assert counted == sizes.SplitSizes(200, 60, "on disk (counted)")
    assert len(calls) == 1


def test_tiny_imagenet_is_counted_from_its_files_and_annotations(tmp_path):
    folder = tmp_path / "tiny-imagenet-200"
    for w, n in (("n01", 3), ("n02", 2)):
        (folder / "train" / w / "images").mkdir(parents=True)
        for i in range(n):
            (folder / "train" / w / "images" / f"{w}_{i}.JPEG").write_bytes(b"")
        (folder / "train" / w / f"{w}_boxes.txt").write_text("")
    (folder / "val").mkdir()
    (folder / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn01\t0\t0\t1\t1\nval_1.JPEG\tn02\t0\t0\t1\t1\n")
    counted = sizes.split_sizes("tiny_imagenet", tmp_path, tmp_path / "cache")
    assert counted == sizes.SplitSizes(5, 2, "on disk (counted)")
    assert any((tmp_path / "cache" / "sizes").iterdir())


def _image_folder(root, train, val):
    for split, counts in (("train", train), ("val", val)):
        for c, n in enumerate(counts):
            d = root / "imagenet" / split / f"n{c:08d}"
            d.mkdir(parents=True)
            for i in range(n):
                (d / f"{i}.JPEG").write_bytes(b"")
            (d / "notes.txt").write_text("not an image")


def test_imagenet_files_are_counted_and_the_count_cached_by_mtime(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    _image_folder(tmp_path, [3, 4], [2, 1])
    assert sizes.split_sizes("imagenet", tmp_path, cache) == sizes.SplitSizes(7, 3, "on disk (counted)")
    calls = []
    real = sizes._count_images
    monkeypatch.setattr(sizes, "_count_images", lambda split: calls.append(split) or real(split))
    assert sizes.split_sizes("imagenet", tmp_path, cache).train == 7 and calls == []  # from the cache
    (tmp_path / "imagenet" / "train" / "n00000000" / "new.JPEG").write_bytes(b"")
    os.utime(tmp_path / "imagenet" / "train" / "n00000000", ns=(1, 10**18))  # a coarse clock must not hide it
    assert sizes.split_sizes("imagenet", tmp_path, cache).train == 8 and len(calls) == 2


def test_imagenet_run_time_uses_the_counted_images(fixed, tmp_path):
    _image_folder(tmp_path / "data", [1000], [100])
    m = _manifest([("a", "imagenet", {})])
    cfg = planned_runs(m, m.profiles["full"])[0].cfg
    t = fixed().run_time(cfg, "t", GPU)
    assert t.data == "on disk (counted)"
    assert t.compute_s == pytest.approx(30 * (3 * 1.1e6 * 1000 + 1.1e6 * 100) / 1e12)
    assert t.overhead_s == pytest.approx(30 * (1000 // 256 + 100 // 256 + 1) * 0.003)


def test_calibrated_rate_replaces_the_flop_model(fixed):
    m = _manifest([("a", "cifar10", {})])
    cfg = planned_runs(m, m.profiles["full"])[0].cfg
    tp = cal.Throughput("H200", "gpu", 1e12, 0.003, "measured: test", {"t": 6000.0})
    t = fixed().run_time(cfg, "t", tp)
    assert (t.compute_s, t.overhead_s) == (pytest.approx(50 * (50_000 + 10_000 / 3) / 6000.0), 0.0)


def test_reference_efficiency_and_labels():
    assert cal.GPU_EFFICIENCY == pytest.approx(2470 * 3 * 4.09e9 * 2 / 312e12)
    a100 = cal.reference_gpu("NVIDIA A100-SXM4-80GB")
    assert a100.device == "A100" and a100.basis == "reference" and a100.source.startswith("reference, not measured")
    assert cal.reference_gpu("NVIDIA H100 80GB HBM3").macs_per_s == pytest.approx(989e12 / 312e12 * a100.macs_per_s)
    assert "not in the table" in cal.reference_gpu("Some GPU").source


def test_shared_runs_count_once_and_wall_time_follows_the_executor(fixed):
    one = _manifest([("a", "cifar10", {})])
    two = _manifest([("a", "cifar10", {}), ("b", "cifar10", {})])  # the same model twice: the same runs
    model = fixed()
    assert model.cost([build_plan(two, "full")]) == model.cost([build_plan(one, "full")])
    other = _manifest([("a", "cifar10", {}), ("b", "cifar10", {"hidden": [64]})])
    c = model.cost([build_plan(other, "full"), build_plan(one, "full")])  # across manifests too
    assert (c.runs, c.epochs, c.kind) == (4, 200, "gpu")
    per_run = c.device_seconds / 4
    assert fixed(est.Executor(gpus=2)).cost([build_plan(other, "full")]).wall_seconds == pytest.approx(2 * per_run)
    assert fixed(est.Executor("slurm", slurm_max_parallel=3)).cost(
        [build_plan(other, "full")]
    ).wall_seconds == pytest.approx(2 * per_run)
    packed = fixed(est.Executor(runs_per_gpu=2)).cost([build_plan(other, "full")])
    t = model.run_time(planned_runs(other, other.profiles["full"])[0].cfg, "t", GPU)
    assert packed.device_seconds == pytest.approx(4 * (t.compute_s + t.overhead_s / 2))  # only overhead overlaps
    assert model.cost([build_plan(other, "smoke")]).kind == "cpu"
    # a full run about to start on a CPU
    assert fixed(kind="cpu").cost([build_plan(other, "full")]).kind == "cpu"


def test_makespan_is_longest_first():
    assert est.makespan([3, 3, 2, 2, 2], 2) == 7  # LPT: {3, 2, 2} and {3, 2}
    assert est.makespan([5, 1], 8) == 5 and est.makespan([], 3) == 0


def test_executor_refuses_nonsense():
    with pytest.raises(ValueError, match="gpus"):
        est.Executor(gpus=0)
    with pytest.raises(ValueError, match="'local' or 'slurm'"):
        est.Executor("pbs")


@pytest.mark.slow
def test_quick_mac_count_equals_the_full_count(tmp_path, monkeypatch):
    """The estimate's one-pass count from layer shapes equals repro.models.flops' analytic column."""
    from repro.plan.manifest import find_manifest
    from repro.measure.flop_check import _shape_macs, row_flops, row_key

    for manifest_id, row_id in [("table1", "std_h2048_moe"), ("table5", "k2_moe"), ("table4", "mnv2_h256_moe")]:
        row = find_manifest(manifest_id).row(row_id)
        full = row_flops(row)
        assert _shape_macs(row_key(row)) == {"backbone_macs": full.backbone, "head_macs": full.head}


def test_duration_formats():
    assert [est.duration(s) for s in (5, 600, 9000)] == ["~5 s", "~10 min", "~2.5 h"]
    assert [est.hours(s) for s in (36, 3600 * 2.34, 3600 * 345.6)] == ["0.01", "2.3", "346"]


MANIFEST_IMPORTS_TORCH = (
    "torch"
    in subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, repro.plan.manifest; print(sorted(m for m in sys.modules if m == 'torch'))",
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    ).stdout
)


@pytest.mark.slow
@pytest.mark.skipif(MANIFEST_IMPORTS_TORCH, reason="repro.plan.manifest still imports torch (through repro.models)")
def test_warm_list_imports_no_torch(tmp_path):
    env = {**os.environ, "REPRO_CACHE": str(tmp_path)}
    code = (
        "import sys; from typer.testing import CliRunner; from repro.cli import app; r = CliRunner().invoke(app, "
        "['list']); assert r.exit_code == 0, r.output; print([m for m in ('torch',) if m in sys.modules])"
    )
    subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO_ROOT, timeout=600, check=True)  # fills the cache
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, timeout=600, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_readme_s_words_for_a_time_keep_its_half_minutes():
    """`repro list` priced a smoke verify-all at ~88 s and the README, from the same estimate, said "about a
    minute": a newcomer timing it read the two as disagreeing by half. Below a few minutes the words keep the half."""
    assert [est.spoken(s) for s in (50, 80, 88, 100, 120, 150, 240, 660, 7200)] == [
        "about a minute",
        "about a minute and a half",
        "about a minute and a half",
        "about a minute and a half",
        "about 2 minutes",
        "about 2 and a half minutes",
        "about 4 minutes",
        "about 11 minutes",
        "about 2 hours",
    ]
