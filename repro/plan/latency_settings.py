"""How latency is measured at a profile: batch, repetitions, threads. Torch-free, so that the cost
model can estimate a latency table without importing the measurer (repro.measure.latency)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from repro.spec.profiles import Profile


@dataclass(frozen=True)
class LatencySettings:
    batch: int = 256  # the text gives no latency batch: ImageNet's training batch (Section 4.1)
    warmup: int = 10
    min_reps: int = 20
    max_reps: int = 200
    budget_s: float = 5.0  # repetitions stop past this time, once min_reps are done
    threads: int = 1  # CPU intra-op threads
    image_size: int | None = None  # cap on the whole-model resolution; heads keep the paper's D
    op_batch: int = 256  # operator counts always at the paper-scale batch
    compile: bool = False  # time heads under torch.compile (operator counts stay eager)


QUICK = LatencySettings(warmup=1, min_reps=3, max_reps=5, budget_s=0.1)


def settings_for(profile: Profile, paper_scale: bool) -> LatencySettings:
    base = LatencySettings() if paper_scale else QUICK
    return replace(base, batch=profile.latency.batch_size or base.batch, image_size=profile.latency.max_image_size)


# --------------------------------------------------------------------------- models
