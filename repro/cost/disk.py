"""The disk a profile needs: the datasets its runs train on, and the checkpoints its runs write. Torch-free when cached.

    datasets     each real dataset a planned run reads: its archives' recorded sizes (repro.data.sources: a
                 reference, not measured here) and the decoded copy repro caches of it (repro.data.sizes)
    checkpoints  a run keeps one checkpoint while it trains (repro.train.checkpoints; none for a one-epoch
                 run, which never writes one) and deletes it when its record is written, so at most the runs
                 training at once hold one each: the largest ones, at 4 bytes a parameter it holds (float32:
                 the model and the optimiser's moments, CostModel.run_params)

Synthetic and digit data download nothing. Run records (kilobytes each) are not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from repro.cost.calibration import cores
from repro.cost.estimate import CostModel
from repro.data.sizes import decoded_cache_bytes
from repro.data.sources import dataset_source
from repro.plan.run_config import RunConfig
from repro.plan.table_plan import TablePlan

BYTES_PER_PARAM = 4  # float32


@dataclass(frozen=True)
class DatasetDisk:
    name: str
    title: str
    archive_bytes: int  # the archives' recorded sizes (a reference)
    cache_bytes: int  # the decoded copy repro caches
    unsized: tuple[str, ...] = ()  # archives whose size is not recorded, left out of archive_bytes

    @property
    def total(self) -> int:
        return self.archive_bytes + self.cache_bytes


@dataclass(frozen=True)
class DiskSpace:
    profile: str
    datasets: tuple[DatasetDisk, ...]
    checkpoint_bytes: float  # the largest checkpoints held at once; NaN where a model's size is not counted
    at_once: int  # runs training at once, each holding one checkpoint
    largest_bytes: float  # the largest single checkpoint
    uncounted: int  # models whose sizes are not counted (a cached-only model): checkpoints not priced

    @property
    def total(self) -> float:
        return sum(d.total for d in self.datasets) + self.checkpoint_bytes


def gigabytes(n: float) -> str:
    """'163.2 MB', '154.6 GB', '0 B' (decimal units, as the sources print sizes)."""
    if n != n:
        return "?"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def disk_space(plans: list[TablePlan], model: CostModel) -> DiskSpace:
    """The disk the runs of the tables' plans (at one profile) need, counted once however many tables share a run."""
    runs: dict[str, tuple[RunConfig, str]] = {}  # by hash: the run and the kind of device it trains on
    for plan in plans:
        for p in plan.runs:
            runs.setdefault(p.cfg.hash, (p.cfg, model.device(plan.profile).kind))
    names = sorted({cfg.dataset for cfg, _ in runs.values() if cfg.data == "real"})
    sources = {name: dataset_source(name, model.cache) for name in names}
    datasets = tuple(
        DatasetDisk(n, s.title, s.size_bytes, decoded_cache_bytes(n, model.data_dir, model.cache), s.unsized)
        for n, s in sources.items()
    )
    sizes, uncounted = [], set()
    for cfg, _ in runs.values():
        if cfg.epochs < 2:
            continue
        _, held = model.run_params(cfg)
        if math.isnan(held):
            uncounted.add((cfg.dataset, str(cfg.backbone), str(cfg.head), cfg.image_size))
        else:
            sizes.append(held * BYTES_PER_PARAM)
    kinds = {kind for _, kind in runs.values()}
    threads = max((cfg.threads for cfg, _ in runs.values()), default=1)
    if "gpu" in kinds:
        at_once = model.executor.slots("gpu", len(runs)) * model.executor.packing("gpu")
    else:
        at_once = max(1, cores() // threads)
    held = sum(sorted(sizes, reverse=True)[:at_once]) if not uncounted else float("nan")
    largest = max(sizes, default=0.0) if not uncounted else float("nan")
    profile = plans[0].profile_name if plans else ""
    return DiskSpace(profile, datasets, held if sizes or uncounted else 0.0, at_once, largest, len(uncounted))
