"""The routing interface every head (and the backbone MoE) exposes to the training loop.

Shapes: B batch, E experts.

The engine calls, per epoch / step:
    on_epoch_start(epoch, num_epochs)  schedules (tau, k) for the coming epoch
    on_step(step, steps)               before each training step of the epoch: a schedule stepped per step
    schedule_state()                   the scheduled values now in force, e.g. {"tau": 0.5, "k": 1}
    aux_loss()                         weighted auxiliary loss of the last training forward
    routing_stats()                    statistics of the last forward (detached)
    after_backward()                   per-step bookkeeping that needs gradients
    router_parameters()                the router's parameters: the engine records how far a backbone MoE
                                       layer's router moved each epoch (Table 5's k = 1 router)

Modules without routing inherit the no-op versions. A routed module records the
raw tensors of its last forward with ``_record_routing``; the summary dict is
computed only when ``routing_stats()`` is asked for, so the forward pass does no
extra work and no host synchronisation for it.
"""

from __future__ import annotations

import operator
from typing import TypedDict

import torch
from torch import nn


def entropy(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats along the last axis; 0 log 0 = 0 with a finite gradient. (..., E) -> (...)."""
    return -(p * p.clamp_min(torch.finfo(p.dtype).tiny).log()).sum(-1)


class RoutingRecord(TypedDict):
    """What _record_routing keeps of the last forward (summarize's arguments)."""

    probs: torch.Tensor
    mask: torch.Tensor
    forced: torch.Tensor | None
    dropped: torch.Tensor | None
    extra: dict[str, torch.Tensor | float | int]


def check_head(head: object, in_features: object, num_classes: object, cfg: object, config: type) -> None:
    """Refuse, naming the head, what it cannot be built with: sizes below 1 (0 features failed in a division or
    built a head of empty weights, 0 classes a head with no output), and settings of another type than its config
    (a dict failed on its first field: `build_<head>(in_features, num_classes, **fields)` takes keywords)."""
    name = type(head).__name__
    problems = [
        f"{arg} must be a positive int, got {value!r}"
        for arg, value in (("in_features", in_features), ("num_classes", num_classes))
        if not positive_int(value)
    ]
    if problems:
        raise ValueError(f"{name}: " + "; ".join(problems))
    if not isinstance(cfg, config):
        from repro.models.catalog import HEADS

        module = type(head).__module__
        builders = [f"HEADS.get({e.name!r}).builder" for e in HEADS if str(e.target).split(":")[0] == module]
        raise TypeError(
            f"{name} takes its settings as a {config.__name__} (repro.models.configs), got {type(cfg).__name__}: "
            f"{name}(in_features, num_classes, {config.__name__}(**fields))"
            + "".join(f", or {b}(in_features, num_classes, **fields)" for b in builders[:1])
        )


def check_features(head: object, h: torch.Tensor, in_features: int) -> None:
    """Refuse, naming the head, features that are not (B, in_features): an unpooled (B, C, H, W) map, one sample's
    (D,) vector or another width failed inside torch's matmul with no word of the head, or (a (D,) vector) passed
    as a batch."""
    if h.dim() != 2 or h.shape[1] != in_features:
        hint = "; pool and flatten a (B, C, H, W) map first" if h.dim() == 4 else ""
        raise ValueError(
            f"{type(head).__name__} expects features (B, {in_features}) (batch, in_features), "
            f"got shape {tuple(h.shape)}{hint}"
        )


def positive_int(value: object) -> bool:
    """An int of at least 1 (a numpy or torch integer counts; a bool does not)."""
    if isinstance(value, bool):
        return False
    try:
        return operator.index(value) >= 1  # type: ignore[arg-type]  # an int, or a numpy or torch integer
    except TypeError:
        return False


class RoutingHooks:
    """Mixin for nn.Module heads: no-op versions of the engine hooks."""

    # Set by a routed module's forward, absent until its first: the weighted auxiliary loss of the last training
    # forward (None where it had none), and the routing of the last forward.
    _aux: torch.Tensor | None
    _routing: RoutingRecord | None

    def on_epoch_start(self, epoch: int, num_epochs: int) -> None:
        pass

    def on_step(self, step: int, steps: int) -> None:
        pass

    def schedule_state(self) -> dict[str, float | int]:
        return {}

    def aux_loss(self) -> torch.Tensor:
        aux = getattr(self, "_aux", None)
        if aux is not None:
            return aux
        p = next(iter(self.parameters()), None)  # type: ignore[attr-defined]  # a mixin of nn.Module classes
        return torch.zeros((), device=p.device if p is not None else None)

    def routing_stats(self) -> dict:
        record = getattr(self, "_routing", None)
        return summarize(**record) if record is not None else {}

    def after_backward(self) -> None:
        pass

    def router_parameters(self) -> list:
        return []

    def _record_routing(
        self,
        probs: torch.Tensor,
        mask: torch.Tensor,
        forced: torch.Tensor | None = None,
        dropped: torch.Tensor | None = None,
        **extra: torch.Tensor | float | int,
    ) -> None:
        """Keep the last forward's routing: probs (B, E), dispatch mask (B, E), flags (B,)."""
        self._routing = RoutingRecord(
            probs=probs.detach(),
            mask=mask.detach(),
            forced=None if forced is None else forced.detach(),
            dropped=None if dropped is None else dropped.detach(),
            extra={k: v.detach() if isinstance(v, torch.Tensor) else v for k, v in extra.items()},
        )


def summarize(
    probs: torch.Tensor,
    mask: torch.Tensor,
    forced: torch.Tensor | None,
    dropped: torch.Tensor | None,
    extra: dict,
) -> dict:
    """Routing statistics of one forward pass, all detached.

    expert_counts  (E,)  samples each expert processed (the dispatch mask's column sums)
    top1_counts    (E,)  samples whose highest routing probability is that expert
    forced         ()    samples force-assigned to a full top-1 expert (Section 3.3)
    dropped        ()    samples no expert processed (output zero)
    entropy        ()    H(p_bar), p_bar the batch-mean routing distribution (Section 3.4)
    sample_entropy ()    mean over samples of H(p_b)
    usage_entropy  ()    H of expert_counts normalised to a distribution
    probs          (B, E) routing probabilities p
    """
    b, e = probs.shape
    counts = mask.sum(0)  # (E,)
    top1 = torch.zeros(e, dtype=probs.dtype, device=probs.device).scatter_add_(
        0, probs.argmax(-1), torch.ones(b, dtype=probs.dtype, device=probs.device)
    )  # (E,)
    zero = torch.zeros((), dtype=torch.long, device=probs.device)
    stats = {
        "expert_counts": counts.round().long(),
        "top1_counts": top1.long(),
        "forced": zero if forced is None else forced.sum(),
        "dropped": zero if dropped is None else dropped.sum(),
        "entropy": entropy(probs.mean(0)),
        "sample_entropy": entropy(probs).mean(),
        "usage_entropy": entropy(counts / counts.sum().clamp_min(1)),
        "probs": probs,
    }
    stats.update(extra)
    return stats


class RoutedHead(RoutingHooks, nn.Module):
    """Base for classifier heads whose whole compute is FLOPs_routed (Section 3.1)."""

    routed = True
