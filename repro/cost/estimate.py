"""What runs cost before they run: the one function that prices runs (`CostModel.cost`), and the words for its figures.

A run's time = epochs x (training FLOPs / the device's throughput + steps x a cost per step):
- training multiply-adds per image ~ 3x the forward pass's (repro.measure.flop_check.estimate_macs:
  backbone scaled to the run's resolution, plus the head), over the training images actually on
  disk (repro.data.sizes; the paper's sizes when absent, and the output says which) or the
  profile's subset, plus one forward pass over the test split;
- the throughput of the device that would run the profile (repro.cost.calibration).
Runs are counted once however many rows, tables and claims share them (their config hash); so are the fixed
costs runs share (a backbone's compilation, a stand-in pretraining). Wall time follows the executor: runs
spread longest-first over its parallel slots (GPUs x runs per GPU locally, the array's parallelism under
Slurm); runs packed onto one GPU share its arithmetic and overlap only their per-step overhead. For the
shipped manifests nothing here imports torch, even on a cold cache: their multiply-adds are shipped
(repro.measure.model_macs) and the CPU's figures are the shipped reference's.
"""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Literal

from repro.core.settings import DEFAULT_CACHE, Settings
from repro.cost.calibration import Speed, Throughput, cores, cpu_throughput, gpu_throughput, kept_speed
from repro.data.sizes import run_split_sizes
from repro.data.specs import get_dataset
from repro.measure.flop_check import estimate_macs
from repro.models import Component
from repro.plan.run_config import RunConfig
from repro.plan.table_plan import TablePlan
from repro.spec.profiles import Profile


@dataclass(frozen=True)
class Executor:
    """How many runs train at once: the options of `repro run` (repro.execution.options) as plain numbers."""

    kind: Literal["local", "slurm"] = "local"
    gpus: int = 1
    runs_per_gpu: int = 1
    slurm_max_parallel: int = 0  # 0: no limit, every run of the array at once

    def __post_init__(self) -> None:
        if self.kind not in ("local", "slurm"):
            raise ValueError(f"executor: expected 'local' or 'slurm', got {self.kind!r}")
        for name in ("gpus", "runs_per_gpu"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name.replace('_', '-')}: expected at least 1, got {getattr(self, name)}")
        if self.slurm_max_parallel < 0:
            raise ValueError(f"slurm-max-parallel: expected 0 (no limit) or more, got {self.slurm_max_parallel}")

    def packing(self, kind: str) -> int:
        """Runs sharing one device: only local GPUs are packed (a Slurm task holds one run)."""
        return self.runs_per_gpu if kind == "gpu" and self.kind == "local" else 1

    def slots(self, kind: str, runs: int) -> int:
        if kind == "cpu":
            return 1  # the CPU figure is measured on every core: parallel runs only share them
        if self.kind == "slurm":
            return min(runs, self.slurm_max_parallel) if self.slurm_max_parallel else max(runs, 1)
        return self.gpus

    def describe(self, kind: str) -> str:
        if kind == "cpu":
            return "this CPU"
        if self.kind == "slurm":
            return f"Slurm, {self.slurm_max_parallel or 'unlimited'} parallel"
        return f"{self.gpus} GPU(s) x {self.runs_per_gpu} run(s) each"


@dataclass(frozen=True)
class RunTime:
    compute_s: float  # arithmetic on the device, every epoch
    overhead_s: float  # fixed per-step costs, every epoch, and the run's own set-up
    data: str  # where the split sizes came from


@dataclass(frozen=True)
class RunWork:
    """What one run does, whatever device runs it: the quantities its time is fitted on (repro.cost.fit)."""

    macs: float  # training multiply-adds over every epoch, and the test passes (NaN where not counted)
    steps: int  # optimiser and evaluation steps over every epoch
    images: float  # training images plus a third of the test images (a forward pass), over every epoch
    data: str  # where the split sizes came from


@dataclass(frozen=True)
class Cost:
    """Runs counted once, their device-hours and the wall time under an executor."""

    kind: str  # "gpu" or "cpu": what the device-hours are hours of
    runs: int
    epochs: int
    device_seconds: float
    wall_seconds: float
    sources: tuple[str, ...] = ()  # throughput and data sources, as shown
    # Device seconds by what pays them: a run (its hash), or a fixed cost runs share ("compile ...",
    # "pretraining ..."); what two claims share is paid once (repro.cost.plan).
    items: dict[str, float] = field(default_factory=dict)

    @property
    def device_hours(self) -> float:
        return self.device_seconds / 3600


@dataclass
class CostModel:
    """Costs of runs on the devices that would train them; devices are calibrated on first use."""

    executor: Executor = field(default_factory=Executor)
    data_dir: Path | None = None
    calibration: Path | None = None  # a GPU calibration file (repro.cost.calibration)
    gpu: str | None = None  # the reference GPU's name when there is no calibration
    cached_only: bool = False  # never count FLOPs (torch-free callers): NaN where uncached
    kind: str | None = None  # "cpu" or "gpu" when the device is already chosen (a run about to start)
    # By kind ("cpu", "gpu"): figures fitted to the run records of a results folder (repro.cost.fit), used
    # instead of the measured or reference ones.
    fitted: dict[str, Throughput] = field(default_factory=dict)
    exact_sizes: bool = False  # price runs by the model built at their resolution (repro.cost.fit sets it)
    cache: Path = DEFAULT_CACHE  # the cache folder: FLOP counts, model sizes, split sizes, the CPU's speed factor
    visible_gpus: str | None = None  # this process's CUDA_VISIBLE_DEVICES ("": none), to name its GPU
    _devices: dict[str, Throughput] = field(default_factory=dict, repr=False)

    @classmethod
    def under(cls, settings: Settings, **given) -> CostModel:
        """A cost model under a command's settings: its data root, GPU calibration file, cache folder and visible
        GPUs, where `given` (an option of the command line) does not name them."""
        given["data_dir"] = given.get("data_dir") or settings.data
        given["calibration"] = given.get("calibration") or settings.gpu_calibration
        return cls(cache=settings.cache, visible_gpus=settings.launch.visible_gpus, **given)

    def device(self, profile: Profile) -> Throughput:
        """The device a profile's runs are priced on: the CPU for a profile pinned to it, else a GPU."""
        return self.of_kind(self.kind or ("cpu" if profile.device == "cpu" else "gpu"))

    def of_kind(self, kind: str) -> Throughput:
        if kind in self.fitted:
            return self.fitted[kind]
        if kind not in self._devices:
            self._devices[kind] = (
                cpu_throughput(self.speed)
                if kind == "cpu"
                else gpu_throughput(self.calibration, self.gpu, self.visible_gpus)
            )
        return self._devices[kind]

    @cached_property
    def speed(self) -> Speed | None:
        """This CPU's kept speed factor against the CPU reference's machine (calibration.Speed), or None; read once."""
        return kept_speed(cache=self.cache)

    def split_counts(self, cfg: RunConfig) -> tuple[int, int, str]:
        """(training images, test images, where their counts came from) of one run (repro.data.sizes)."""
        sizes = run_split_sizes(cfg.dataset, cfg.data, cfg.train_samples, cfg.test_samples, self.data_dir, self.cache)
        return sizes.train, sizes.test, sizes.source

    def run_work(self, cfg: RunConfig) -> RunWork:
        n_train, n_test, data = self.split_counts(cfg)
        steps = cfg.epochs * (n_train // cfg.batch_size + n_test // cfg.batch_size + 1)
        images = cfg.epochs * (n_train + n_test / 3)
        macs = self._macs(cfg)
        if macs is None:
            return RunWork(float("nan"), steps, images, data)
        body, head = macs
        backward = 0 if cfg.backbone_lr_scale == 0 else 2 * body  # a frozen backbone runs forward only
        work = (body + head + backward + 2 * head) * n_train + (body + head) * n_test
        return RunWork(cfg.epochs * work, steps, images, data)

    def forward_macs(self, dataset: str, backbone: Component, head: Component) -> dict[str, int] | None:
        """{"backbone_macs", "head_macs"} of a model's forward pass at the paper's resolution (None where not
        cached and `cached_only`): repro.measure.flop_check.estimate_macs in this model's cache folder."""
        return estimate_macs(dataset, backbone, head, not self.cached_only, self.cache)

    def _macs(self, cfg: RunConfig) -> tuple[float, float] | None:
        """(backbone, head) forward multiply-adds per image at the run's resolution. Fitted figures use the model
        built for that resolution (repro.measure.model_size, counted once: `exact_sizes`; `cached_only` and not
        counted yet: as the others); the others the paper-resolution count with the backbone's scaled by area,
        which needs no model built."""
        spec = get_dataset(cfg.dataset)
        size = self._size(cfg) if self.exact_sizes and cfg.image_size != spec.image_size else None
        if size is not None:
            return size.backbone_macs, size.head_macs
        macs = self.forward_macs(cfg.dataset, Component(**cfg.backbone), Component(**cfg.head))
        if macs is None:
            return None
        return macs["backbone_macs"] * (cfg.image_size / spec.image_size) ** 2, macs["head_macs"]

    def _size(self, cfg: RunConfig):
        from repro.measure.model_size import model_size

        model = Component(**cfg.backbone), Component(**cfg.head)
        return model_size(cfg.dataset, *model, cfg.image_size, not self.cached_only, self.cache)

    def run_params(self, cfg: RunConfig) -> tuple[float, float]:
        """(trainable parameters, parameters a checkpoint holds: the model and Adam's two moments of the
        trainable ones) of the model built for the run's resolution; NaN where not counted and `cached_only`."""
        size = self._size(cfg)
        if size is None:
            return float("nan"), float("nan")
        trainable = size.head_params + (0 if cfg.backbone_lr_scale == 0 else size.backbone_params)
        return trainable, size.backbone_params + size.head_params + 2 * trainable

    def run_time(self, cfg: RunConfig, manifest_id: str, device: Throughput) -> RunTime:
        """Device seconds of one run (CPU seconds for a fitted CPU) as compute and the rest; wall = their sum /
        device.cpu_share."""
        w = self.run_work(cfg)
        measured = device.run_seconds.get(cfg.hash)
        if measured is not None:  # the CPU reference has this very run (repro.cost.cpu_reference)
            return RunTime(measured, 0.0, w.data)
        fixed = device.run_overhead_s + self._data_preparation_s(cfg, device)
        rate = device.model_rate(cfg.dataset, cfg.backbone, cfg.head) or device.images_per_s.get(manifest_id)
        feed = self.input_rate(cfg, device)
        if rate:  # a measured training rate: its per-step costs are inside it; evaluation is a forward pass
            return RunTime(w.images / min(rate, feed or rate), fixed, w.data)
        overhead = w.steps * device.step_overhead_s + fixed
        if device.step_param_s or device.checkpoint_param_s:
            trainable, held = self.run_params(cfg)
            if trainable == trainable:  # NaN: sizes not counted (cached_only), priced without these terms
                overhead += (
                    w.steps * trainable * device.step_param_s + (cfg.epochs - 1) * held * device.checkpoint_param_s
                )
        return RunTime(max(w.macs / device.macs_per_s, w.images / feed if feed else 0.0), overhead, w.data)

    def _data_preparation_s(self, cfg: RunConfig, device: Throughput) -> float:
        """Host seconds making or loading a run's in-memory splits, on a GPU priced by a calibration file
        (repro.cost.gpu_reference); streamed image folders are read inside the epochs."""
        spec = get_dataset(cfg.dataset)
        if not device.data_s_per_value or not spec.in_memory:
            return 0.0
        n_train, n_test, _ = self.split_counts(cfg)
        return (n_train + n_test) * spec.channels * cfg.image_size**2 * device.data_s_per_value

    def input_rate(self, cfg: RunConfig, device: Throughput) -> float | None:
        """Images/s the measured input path feeds a run that streams its dataset from image folders; None where
        the run does not stream or its input path was not measured (repro.cost.gpu_reference)."""
        if cfg.data != "real" or get_dataset(cfg.dataset).in_memory or device.kind != "gpu":
            return None
        measured = device.inputs.get(cfg.dataset)
        return measured.images_per_s if measured else None

    def cost(self, plans: Iterable[TablePlan], skip: frozenset[str] = frozenset()) -> Cost:
        """The distinct runs of the tables' plans, on the device each plan's profile runs on, but those whose
        config hash is in `skip` (recorded already, or trained by an earlier table of the same command): the one
        function every figure of device or training time comes from (a table, a profile, a claim, a plan)."""
        runs: dict[str, tuple[RunConfig, str, Throughput]] = {}
        for plan in plans:
            device = self.device(plan.profile)
            for p in plan.runs:
                if p.cfg.hash not in skip:
                    runs.setdefault(p.cfg.hash, (p.cfg, plan.id, device))
        kind = "gpu" if any(d.kind == "gpu" for _, _, d in runs.values()) else "cpu"
        items: dict[str, float] = {}  # GPU- or CPU-seconds by what they pay for
        walls: dict[str, float] = {}  # each run's wall seconds, by its hash
        sources: set[str] = set()
        for h, (cfg, manifest_id, device) in runs.items():
            t = self.run_time(cfg, manifest_id, device)
            items[h] = t.compute_s + t.overhead_s / self.executor.packing(device.kind)
            walls[h] = items[h] / device.cpu_share
            sources.update((device.source, f"{cfg.dataset}: {t.data}"))
        # Figures per run (fitted to records, the reference): the runs share the cores, each on its threads.
        cpus = [(c, d) for c, _, d in runs.values() if d.kind == "cpu"]
        parallel = max((d.parallel for _, d in cpus), default=1)
        if parallel > 1:
            parallel = max(1, cores() // max(c.threads for c, _ in cpus))
        slots = parallel if kind == "cpu" else self.executor.slots(kind, len(walls))
        for key, (h, seconds) in self._compilation(runs, slots).items():
            items[key] = seconds
            walls[h] += seconds
        pretraining = self._pretraining([(cfg, device) for cfg, _, device in runs.values()])
        items.update(pretraining)
        wall = makespan(list(walls.values()), slots) + sum(pretraining.values())  # in the main process, first
        epochs = sum(c.epochs for c, _, _ in runs.values())
        return Cost(kind, len(runs), epochs, sum(items.values()), wall, tuple(sorted(sources)), items)

    def _compilation(
        self, runs: dict[str, tuple[RunConfig, str, Throughput]], slots: int
    ) -> dict[str, tuple[str, float]]:
        """Each compilation the runs pay on a GPU priced by a calibration file, as (the run that pays it, seconds):
        a backbone once per process that trains it, so once per slot that takes one of its runs locally (at most),
        once per run under Slurm (a task a run)."""
        by_backbone: dict[str, list[str]] = {}
        for h, (cfg, _, device) in runs.items():
            if device.compile_s:
                by_backbone.setdefault(json.dumps(cfg.backbone, sort_keys=True), []).append(h)
        out = {}
        for backbone, hashes in by_backbone.items():
            cfg, _, device = runs[hashes[0]]
            if self.executor.kind == "slurm":
                keys = [f"compile {h}" for h in hashes]
            else:
                keys = [f"compile {backbone} #{i}" for i in range(min(len(hashes), slots))]
            out.update({k: (h, device.compile_seconds(cfg.backbone)) for k, h in zip(keys, hashes)})
        return out

    def _pretraining(self, runs: list[tuple[RunConfig, Throughput]]) -> dict[str, float]:
        """Seconds of each digit-stand-in pretraining the runs need that is not cached (repro.train.digit_weights),
        by its weights file."""
        from repro.train.digit_weights import PRETRAIN, base_backbone, weights_path

        out: dict[str, float] = {}
        for cfg, device in runs:
            if not cfg.digit_weights:
                continue
            path = weights_path(cfg.backbone["name"], cfg.dataset, cfg.image_size, cache=self.cache)
            key = f"pretraining {path}"
            if key in out or path.is_file():
                continue
            macs = self.forward_macs(cfg.dataset, Component(base_backbone(cfg.backbone["name"])), Component("dense"))
            if macs is None:
                out[key] = float("nan")
                continue
            body = macs["backbone_macs"] * (cfg.image_size / get_dataset(cfg.dataset).image_size) ** 2
            steps = PRETRAIN.epochs * (PRETRAIN.images // PRETRAIN.batch_size)
            out[key] = PRETRAIN.epochs * 3 * body * PRETRAIN.images / device.macs_per_s + steps * device.step_overhead_s
        return out


def is_run(item: str) -> bool:
    """Whether an item of Cost.items is a run (its hash) rather than a fixed cost (named in words)."""
    return " " not in item


def makespan(durations: list[float], slots: int) -> float:
    """Longest-first onto the least-loaded slot (Graham's LPT: within 4/3 of the optimum)."""
    loads = [0.0] * max(1, min(slots, len(durations) or 1))
    for d in sorted(durations, reverse=True):
        heapq.heapreplace(loads, loads[0] + d)
    return max(loads)


def hours(seconds: float) -> str:
    h = seconds / 3600
    return f"{h:,.0f}" if h >= 100 else f"{h:,.1f}" if h >= 1 else f"{h:.2f}"


def device_time(seconds: float, kind: str) -> str:
    """Device time in hours, or in seconds where hours would read 0.00: '1.5 GPU-h', '42 CPU-s'."""
    if seconds != seconds:  # NaN: not counted
        return f"? {kind.upper()}-h"
    return f"{hours(seconds)} {kind.upper()}-h" if seconds >= 36 else f"{seconds:.0f} {kind.upper()}-s"


def seconds_text(seconds: float) -> str:
    """A measured or estimated time to compare with another: '388 s', '14.2 min', '3.1 h'."""
    if seconds < 600:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 5400:
        return f"~{seconds / 60:.0f} min"
    return f"~{seconds / 3600:.1f} h"


def spoken(seconds: float) -> str:
    """A time in the README's words: 'about a minute', 'about a minute and a half', 'about 7 minutes', 'about 2
    hours'. Below three minutes, to the half minute: ~88 s read "about a minute" beside `repro list`'s figure."""
    halves = math.floor(seconds / 30 + 0.5)
    if halves <= 2:
        return "about a minute"
    if halves < 6:
        return (
            "about a minute and a half" if halves == 3 else f"about {halves // 2}{' and a half' * (halves % 2)} minutes"
        )
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"about {minutes} minutes"
    return f"about {round(seconds / 3600)} hours"
