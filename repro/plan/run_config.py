"""The one place a manifest and a profile become run units, with the paper's recipes (repro.spec.recipes).

A RunConfig is everything that determines a run's result. Its hash names the
run record, so two tables that need the same run share it instead of training
twice. `resolve` makes one, applying the dataset's settings of the profile
(`dataset_profile`, the one place they are applied); `planned_runs` lists the
(row, seed) units a manifest needs under a profile, which its plan holds
(repro.plan.table_plan.TablePlan.runs) for every stage below to read.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from repro.data.specs import get_dataset
from repro.plan.manifest import Manifest, Row
from repro.spec.profiles import Profile
from repro.spec.recipes import RECIPES  # the paper's, per dataset; importers of this module keep them
from repro.models.weights import weights_for

# Bump when a change to the training code changes what a run config produces:
# records written under another version are not reused.
TRAINING_VERSION = 4


# Fields added to RunConfig after its first release, with their defaults (see RunConfig.hash). A record
# written before a field existed reads as that default (repro.execution.record_checks); one written
# before `threads` is reused only where its own provenance says it trained on one thread.
LATER_DEFAULTS: dict[str, Any] = {"pretrained_on": "imagenet", "threads": 1, "deterministic": False}


@dataclass(frozen=True)
class RunConfig:
    dataset: str
    backbone: dict[str, Any]  # {"name": ..., "params": {...}}
    head: dict[str, Any]
    seed: int
    epochs: int
    batch_size: int
    optimizer: str
    lr: float
    momentum: float
    schedule: str
    backbone_lr_scale: float
    bf16: bool
    data: Literal["real", "synthetic", "digits"]
    train_samples: int | None
    test_samples: int | None
    image_size: int
    pretrained: bool
    metric: Literal["final", "peak"]
    pretrained_on: Literal["imagenet", "digits"] = "imagenet"  # whose weights, when pretrained (Profile)
    # The paper's epoch count for the dataset: a shortened profile runs the
    # temperature and k schedules compressed onto its own epochs.
    schedule_epochs: int = 0
    # Intra-op CPU threads the run trains on, under every executor, and PyTorch's deterministic algorithms
    # (repro.runtime.numerics): a float sum split over other threads rounds otherwise, so both identify it.
    threads: int = 1
    deterministic: bool = False
    version: int = TRAINING_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def torchvision_weights(self) -> bool:
        """It starts from torchvision's ImageNet weights (repro.models.weights), which must be on disk."""
        return self.pretrained and self.pretrained_on == "imagenet"

    @property
    def digit_weights(self) -> bool:
        """It starts from weights repro pretrains on the digit stand-in (repro.train.digit_weights)."""
        return self.pretrained and self.pretrained_on == "digits"

    @functools.cached_property  # computed once: `repro plan` asks for thousands (a frozen config never changes)
    def hash(self) -> str:
        # A field added with a default that keeps the earlier behaviour stays out of the hash at that
        # default, so the run records written before it was added are still found.
        d = {k: v for k, v in self.to_dict().items() if LATER_DEFAULTS.get(k, ...) != v}
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        return cls(**d)


def dataset_profile(profile: Profile, dataset: str) -> Profile:
    """`profile` as it applies to the rows on `dataset`: its [profiles.<name>.datasets.<dataset>] settings over its
    own. The one place they are applied: every run (resolve) and every word about a dataset's settings (the
    plan's `datasets`) reads it."""
    return profile.for_dataset(dataset)


def resolve(row: Row, profile: Profile, seed: int) -> RunConfig:
    """The run that trains `row` with `seed` under `profile`."""
    recipe = RECIPES[row.dataset]
    spec = get_dataset(row.dataset)
    profile = dataset_profile(profile, row.dataset)
    pretrained = profile.pretrained and weights_for(row.backbone.name) is not None
    scale = profile.backbone_lr_scale if profile.backbone_lr_scale is not None else recipe.backbone_lr_scale
    return RunConfig(
        dataset=row.dataset,
        backbone=row.backbone.key(),
        head=row.head.key(),
        seed=seed,
        epochs=profile.epochs or recipe.epochs,
        batch_size=profile.batch_size or row.batch_size or recipe.batch_size,  # a quick profile's batch wins
        optimizer=profile.optimizer or recipe.optimizer,
        lr=profile.lr or recipe.lr,
        momentum=recipe.momentum,
        schedule=recipe.schedule,
        backbone_lr_scale=scale if pretrained else 1.0,
        bf16=recipe.bf16,
        data=profile.data,
        train_samples=profile.train_samples,
        test_samples=profile.test_samples,
        image_size=min(spec.image_size, profile.max_image_size or spec.image_size),
        pretrained=pretrained,
        pretrained_on=profile.pretrained_on if pretrained else "imagenet",
        metric=spec.metric,
        schedule_epochs=recipe.epochs,
        threads=profile.run_threads(),
        deterministic=profile.run_deterministic(),
    )


def seeds(profile: Profile) -> list[int]:
    """The seeds of a profile as it applies to a manifest (Profile.for_manifest gives it the count)."""
    if profile.seeds is None:
        raise ValueError("the profile is not applied to a manifest: it has no seed count (Profile.for_manifest)")
    return list(range(profile.seeds))


@dataclass(frozen=True)
class PlannedRun:
    row: str
    seed: int
    cfg: RunConfig
    label: str  # e.g. "table1/std_h128_moe seed 0", for progress and errors


def planned_runs(manifest: Manifest, profile: Profile) -> list[PlannedRun]:
    """Every (row, seed) run the accuracy rows of `manifest` need under `profile`, as it applies to this
    manifest (`manifest.profiles[name]`: applied once, where the manifest was loaded). A command reads them from
    the table's plan (repro.plan.table_plan.build_plan), built once."""
    return [
        PlannedRun(row.id, seed, resolve(row, profile, seed), f"{manifest.id}/{row.id} seed {seed}")
        for row in manifest.rows
        if "accuracy" in row.measures and profile.includes(manifest.id, row.id)
        for seed in seeds(profile)
    ]
