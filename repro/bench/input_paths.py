"""The ImageNet input paths measured end to end with a model: `repro bench gpu`'s "input_path" check.

A generated ImageNet-format folder (repro.bench.imagenet_folder) feeds one model (the fastest ImageNet
model the training checks measured: the hardest to keep fed) through each input path, and the same
model trains on device-resident batches (repro.bench.gpu_train.SyntheticBatches) for its model-only rate:

    decode_cpu    the project's loader: DataLoader worker processes decode with decode_jpeg and crop
    decode_cuda   workers read the bytes, the training process decodes on the GPU (nvJPEG) and crops there
    dali          NVIDIA DALI (repro.bench.dali_input), where installed; not a run's path

A path a device cannot run is "not run" with the reason (no CUDA, DALI not installed). Each pass is one
epoch of the folder's training images, repeated to make it long; the first batches of a pass (as many as
the loader has workers, while their prefetch fills) are not timed, so the rates are steady state. Passes
rotate between the model-only batches and the paths (`rounds` each); every rate is a median. Beside it each
path's rate alone (no model). The check records:

    ratio    a path's end-to-end images/s over the model-only images/s, measured in the same process
    chosen   the run path (decode_cpu, decode_cuda) with the highest end-to-end rate: the input path
             ImageNet runs on this GPU take by default (repro.data.input_choice)

On CUDA at full size the check passes when the chosen path's ratio is at least GOAL; a dry run reports it.
File reads come from the page cache: the folder is small, so a disk's bandwidth is not measured.
Result: {"dataset", "model_check", "batch_size", "image_size", "workers", "folder" (repro.bench.
imagenet_folder's summary), "epoch_images", "model_only_images_per_s", "paths": {path: {"status":
"measured" | "not run", "reason", "run_path", "images_per_s", "data_images_per_s", "ratio", "rounds"}},
"chosen", "chosen_ratio", "goal", "judged"}.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import torch

from repro.bench import dali_input
from repro.bench.gpu_train import Trainer
from repro.bench.imagenet_folder import FolderSpec, write_imagenet_folder
from repro.core.settings import Settings
from repro.data.imagenet import FolderLoader, default_workers, image_folder
from repro.data.layout import require
from repro.data.specs import get_dataset
from repro.measure.timing import synchronize
from repro.plan.run_config import RunConfig

GOAL = 0.9  # an input path at >= 0.9x the model-only rate keeps the GPU fed (issue 46)
RUN_PATHS = ("decode_cpu", "decode_cuda")  # repro.data.imagenet's paths worth measuring (pil: slower than decode_cpu)
PATHS = RUN_PATHS + ("dali",)
MODEL_ONLY = "model only"


@dataclass(frozen=True)
class InputSettings:
    folder: FolderSpec = field(default_factory=FolderSpec)
    samples: int | None = None  # the folder's training images a pass reads (None: all), before `repeat`
    repeat: int = 3  # a pass reads them this many times: long enough that its start is a small part
    workers: int | None = None  # loader processes, DALI threads (None: repro.data.imagenet.default_workers)
    rounds: int = 2


FULL_INPUT = InputSettings()
DRY_INPUT = InputSettings(FolderSpec.toy(), samples=24, repeat=1, workers=1, rounds=1)


def unavailable(path: str, device: torch.device) -> str:
    """Why `path` cannot run on `device`, or "" (the GPU paths' CPU equivalents run in the tests)."""
    if path in ("decode_cuda", "dali") and device.type != "cuda":
        return "no CUDA"
    return dali_input.missing() if path == "dali" else ""


class Steady:
    """A pass over `batches` timed from its batch `skip` (after a device sync) to the end (the caller's sync)."""

    def __init__(self, batches: Any, skip: int, device: torch.device) -> None:
        self.batches, self.skip, self.device = batches, min(skip, max(0, len(batches) - 1)), device
        self.started = 0.0
        self.batch_size = 0

    def set_epoch(self, epoch: int) -> None:
        self.batches.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for i, (x, y) in enumerate(self.batches):
            if i == self.skip:
                synchronize(self.device)
                self.started = time.perf_counter()
            self.batch_size = len(y)
            yield x, y

    def rate(self) -> float:
        """Images/s of the timed part; call after the pass and a sync."""
        return (len(self) - self.skip) * self.batch_size / (time.perf_counter() - self.started)


def path_loader(
    path: str,
    samples: list[tuple[str, int]],
    cfg: RunConfig,
    device: torch.device,
    workers: int,
    channels_last: bool,
    folder,
) -> Any:
    """The training batches of `path` over `samples`, as a run would read them."""
    spec = get_dataset(cfg.dataset)
    if path == "dali":
        return dali_input.DaliLoader(samples, cfg.batch_size, cfg.image_size, device, workers, spec.mean, spec.std)
    return FolderLoader(
        replace(folder, samples=samples),
        cfg.batch_size,
        train=True,
        mean=spec.mean,
        std=spec.std,
        workers=workers,
        seed=0,
        device=device,
        channels_last=channels_last,
        pipeline=path,
    )


def _skip(loader: Any) -> int:
    return getattr(loader, "workers", 0) + 1 if getattr(loader, "pipeline", "") != "dali" else 2


def measure_paths(trainer: Trainer, loaders: dict[str, Any], rounds: int, steps: int) -> dict[str, dict[str, Any]]:
    """{name: {"rounds": end-to-end images/s, "data_images_per_s"}} of each loader, and MODEL_ONLY's rounds."""
    device = trainer.device
    synthetic = trainer.synthetic()
    synthetic.steps = steps
    batches = {MODEL_ONLY: synthetic, **loaders}
    for b in batches.values():  # warm-up: workers start, decoders initialise, the model sees its shapes
        trainer.epoch(b)
    rates: dict[str, list[float]] = {name: [] for name in batches}
    names = list(batches)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate who goes first
            timed = Steady(batches[name], _skip(batches[name]), device)
            trainer.epoch(timed)
            rates[name].append(timed.rate())
    out: dict[str, dict[str, Any]] = {name: {"rounds": rates[name]} for name in names}
    for name, loader in loaders.items():  # the path alone, no model
        timed = Steady(loader, _skip(loader), device)
        for _ in timed:
            pass
        synchronize(device)
        out[name]["data_images_per_s"] = timed.rate()
    return out


def choose(paths: dict[str, dict[str, Any]]) -> str | None:
    """The measured run path with the highest end-to-end rate, or None where none was measured."""
    measured = [p for p in RUN_PATHS if paths.get(p, {}).get("images_per_s")]
    return max(measured, key=lambda p: paths[p]["images_per_s"], default=None)


def input_check(
    cfg: RunConfig,
    model_check: str,
    settings: InputSettings,
    device: torch.device,
    dry_run: bool,
    paths: Iterable[str] = PATHS,
    run_settings: Settings = Settings(),
) -> tuple[dict[str, Any], str]:
    """(result, error) of the input paths of `cfg`'s dataset fed to `cfg`'s model (see the module's docstring),
    built and trained under the command's settings `run_settings`."""
    workers = default_workers() if settings.workers is None else settings.workers
    root = Path(tempfile.mkdtemp(prefix="repro-input-paths-"))
    try:
        folder_summary = write_imagenet_folder(root, settings.folder, processes=None if workers > 1 else 1)
        images = image_folder(require(cfg.dataset, root) / "train", True, cfg.image_size, settings.samples)
        samples = images.samples * settings.repeat
        steps = len(samples) // cfg.batch_size
        trainer = Trainer(cfg, device, run_settings)
        result_paths: dict[str, dict[str, Any]] = {}
        loaders = {}
        for path in paths:
            why = unavailable(path, device)
            result_paths[path] = {
                "status": "not run" if why else "measured",
                "reason": why,
                "run_path": path in RUN_PATHS,
                "images_per_s": None,
                "data_images_per_s": None,
                "ratio": None,
                "rounds": [],
            }
            if not why:
                loaders[path] = path_loader(path, samples, cfg, device, workers, trainer.engine.channels_last, images)
        measured = measure_paths(trainer, loaders, settings.rounds, steps)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    model_only = statistics.median(measured[MODEL_ONLY]["rounds"])
    for path, m in measured.items():
        if path != MODEL_ONLY:
            rate = statistics.median(m["rounds"])
            result_paths[path].update(images_per_s=rate, ratio=rate / model_only, **m)
    chosen = choose(result_paths)
    result = {
        "dataset": cfg.dataset,
        "model_check": model_check,
        "batch_size": cfg.batch_size,
        "image_size": cfg.image_size,
        "workers": workers,
        "folder": folder_summary,
        "epoch_images": steps * cfg.batch_size,
        "model_only_images_per_s": model_only,
        "paths": result_paths,
        "chosen": chosen,
        "chosen_ratio": result_paths[chosen]["ratio"] if chosen else None,
        "goal": GOAL,
        "judged": device.type == "cuda" and not dry_run,
    }
    return result, verdict(result)


def verdict(result: dict[str, Any]) -> str:
    """ "" where the chosen path keeps the model fed (or the check is not judged), else why not."""
    if result["chosen"] is None:
        return "no run path was measured"
    if result["judged"] and result["chosen_ratio"] < result["goal"]:
        return (
            f"no run path keeps the GPU fed: the fastest, {result['chosen']}, at {result['chosen_ratio']:.2f}x "
            f"the model-only rate; goal >= {result['goal']}x"
        )
    return ""


def summary_lines(check: dict[str, Any]) -> list[str]:
    """A line per path for the command's output (each under 80 columns)."""
    r = check["result"]
    if not r:
        return []
    lines = [f"{check['name']} with {r['model_check']}: model only {r['model_only_images_per_s']:,.0f} images/s"]
    for path, p in r["paths"].items():
        if p["status"] != "measured":
            lines.append(f"  {path}: not run: {p['reason']}")
        else:
            lines.append(
                f"  {path}: {p['images_per_s']:,.0f}/s end to end ({p['ratio']:.2f}x), "
                f"{p['data_images_per_s']:,.0f}/s alone"
            )
    judged = "" if r["judged"] else ", not judged off a GPU at full size"
    if r["chosen"]:
        lines.append(f"  chosen: {r['chosen']} at {r['chosen_ratio']:.2f}x (goal >= {r['goal']}x{judged})")
    return lines
