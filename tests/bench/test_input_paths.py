"""repro.bench.input_paths and its folder: the ImageNet input paths fed to a model, on this CPU at toy size, and the
GPU paths' code through their nearest CPU equivalents (decode_cuda's main-process decode; DALI's CPU pipeline)."""

import time

import pytest
import torch
from PIL import Image

from repro.bench import gpu, input_paths as ip
from repro.bench.gpu_train import Trainer
from repro.bench.imagenet_folder import FolderSpec, image_size, write_imagenet_folder
from repro.data.imagenet import FolderLoader, image_folder
from repro.data.layout import require
from repro.plan.manifest import load_all

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("inet")
    return root, write_imagenet_folder(root, FolderSpec.toy(), processes=1)


def _cfg():
    table4 = [m for m in load_all() if m.id == "table4"]
    # ResNet-18 + Soft MoE, 4, 16 px
    return gpu.check_config(gpu.plan_training(gpu.paper_plans(table4))[0], gpu.DRY_RUN)


def test_the_folder_is_imagenets_layout_with_every_class_and_deterministic(toy_folder, tmp_path):
    root, summary = toy_folder
    folder = require("imagenet", root)  # 1,000 class folders in train/ and val/, the same names
    assert summary["images"] == 1000 and summary["classes"] == 1000 and summary["quality"] == 90
    files = sorted((folder / "train").glob("*/*.JPEG"))
    assert len(files) == 1000 and files[0].parent.name == "n00000000"
    assert len(list((folder / "val").glob("*/*"))) == 1000
    small = FolderSpec(classes=3, per_class=2, long_side=40, long_min=24)
    one, two = (write_imagenet_folder(tmp_path / d, small, processes=p) for d, p in (("a", 1), ("b", 2)))
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.JPEG"))
    assert one == two and len(files) == 9  # 3 x 2 training images, 3 validation ones
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_sizes_and_bytes_are_those_of_imagenets_training_images(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    sizes = [image_size(rng, FolderSpec()) for _ in range(4000)]
    widths, heights = zip(*sizes)
    assert 380 < sum(widths) / 4000 < 440 and 330 < sum(heights) / 4000 < 380  # about 400x350
    # a quarter portrait, squares aside
    assert sum(w < h for w, h in sizes) / 4000 == pytest.approx(0.25 * 0.85, abs=0.03)
    assert sum(max(s) == 500 for s in sizes) / 4000 == pytest.approx(0.6, abs=0.03)
    summary = write_imagenet_folder(tmp_path, FolderSpec(classes=4), processes=1)
    per_pixel = summary["mean_bytes"] / (summary["mean_width"] * summary["mean_height"])
    assert 0.55 < per_pixel < 0.9  # photographs at quality 90: about 0.8
    with Image.open(next((tmp_path / "imagenet/train").glob("*/*.JPEG"))) as im:
        assert im.format == "JPEG" and im.mode == "RGB"


def test_steady_times_a_pass_from_its_batch_skip(toy_folder):
    class Slow:
        def __len__(self):
            return 6

        def set_epoch(self, e):
            pass

        def __iter__(self):
            for i in range(6):
                if i < 2:
                    time.sleep(0.5)  # a worker's prefetch filling
                yield torch.zeros(4, 1), torch.zeros(4)

    timed = ip.Steady(Slow(), 2, CPU)
    for _ in timed:
        pass
    assert timed.rate() > 4 * 4 / 0.5  # the two slow batches are not in it


def test_on_a_cpu_the_cpu_path_runs_and_the_gpu_paths_say_why_not():
    result, error = ip.input_check(_cfg(), "train/imagenet/table4.r18_soft", ip.DRY_INPUT, CPU, dry_run=True)
    assert error == "" and not result["judged"] and result["chosen"] == "decode_cpu"
    paths = result["paths"]
    assert paths["decode_cuda"]["status"] == paths["dali"]["status"] == "not run"
    assert paths["decode_cuda"]["reason"] == paths["dali"]["reason"] == "no CUDA"
    cpu = paths["decode_cpu"]
    assert cpu["status"] == "measured" and cpu["images_per_s"] > 0 and cpu["data_images_per_s"] > 0
    assert cpu["ratio"] == pytest.approx(cpu["images_per_s"] / result["model_only_images_per_s"])
    assert result["epoch_images"] == 24 and result["workers"] == 1 and result["folder"]["images"] == 1000
    lines = ip.summary_lines({"name": "input_path/imagenet", "result": result})
    assert lines[2:4] == ["  decode_cuda: not run: no CUDA", "  dali: not run: no CUDA"]
    assert lines[-1].startswith("  chosen: decode_cpu at") and all(len(line) <= 80 for line in lines)


@pytest.mark.parametrize(
    "judged, ratio, expected",
    [
        (True, 0.95, ""),
        (False, 0.2, ""),
        (
            True,
            0.62,
            "no run path keeps the GPU fed: the fastest, decode_cuda, at 0.62x the model-only rate; goal >= 0.9x",
        ),
    ],
)
def test_the_chosen_path_is_judged_against_the_goal_on_a_gpu_only(judged, ratio, expected):
    paths = {
        "decode_cpu": {"images_per_s": 10.0},
        "decode_cuda": {"images_per_s": 62.0},
        "dali": {"images_per_s": 99.0},
    }
    assert ip.choose(paths) == "decode_cuda"  # DALI is faster, but not a path a run can take
    result = {"chosen": "decode_cuda", "chosen_ratio": ratio, "judged": judged, "goal": ip.GOAL}
    assert ip.verdict(result) == expected
    assert ip.choose({"decode_cpu": {"images_per_s": None}}) is None


def _measure(loaders_of, toy_folder):
    root, _ = toy_folder
    cfg = _cfg()
    images = image_folder(root / "imagenet" / "train", True, cfg.image_size, n=16)
    trainer = Trainer(cfg, CPU)
    return ip.measure_paths(trainer, loaders_of(images, cfg, trainer), rounds=1, steps=4)


def test_the_gpu_decode_paths_code_runs_here_with_the_cpu_as_its_device(toy_folder):
    """decode_cuda: workers hand over bytes, the training process decodes and crops (on CUDA: nvJPEG)."""

    def loaders(images, cfg, trainer):
        loader = ip.path_loader("decode_cpu", images.samples, cfg, CPU, 0, True, images)
        assert isinstance(loader, FolderLoader)  # the loader a run reads ImageNet with
        loader.pipeline, loader.loader.collate_fn.decode = "decode_cuda", False  # as on CUDA, with device cpu
        x, _ = next(iter(loader))
        assert x.shape == (4, 3, 16, 16) and x.is_contiguous(memory_format=torch.channels_last)
        return {"decode_cuda": loader}

    out = _measure(loaders, toy_folder)
    assert out["decode_cuda"]["rounds"][0] > 0 and out["decode_cuda"]["data_images_per_s"] > 0


def test_dalis_pipeline_runs_here_on_its_cpu_backend(toy_folder):
    pytest.importorskip("nvidia.dali", reason="DALI is not installed (an optional package: nvidia-dali-cuda130)")

    def loaders(images, cfg, trainer):
        loader = ip.path_loader("dali", images.samples, cfg, CPU, 1, True, images)
        x, y = next(iter(loader))
        assert x.shape == (4, 3, 16, 16) and x.is_contiguous(memory_format=torch.channels_last)
        assert y.dtype == torch.int64 and x.dtype == torch.float32 and abs(float(x.mean())) < 3
        return {"dali": loader}

    out = _measure(loaders, toy_folder)
    assert out["dali"]["rounds"][0] > 0


def test_dali_missing_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setattr(ip.dali_input.importlib.util, "find_spec", lambda name: None)
    assert (
        ip.unavailable("dali", torch.device("cuda")) == "nvidia.dali is not installed (pip install nvidia-dali-cuda130)"
    )
    assert ip.unavailable("decode_cpu", CPU) == ""
