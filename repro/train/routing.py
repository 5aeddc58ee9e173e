"""What a run records of its routing: the routed modules (the head and any routed backbone layers), the sums
of their per-step statistics over an epoch (RoutingTally), how far a backbone router moved (router_shift), and
the last epoch's routing as the record keeps it (last_routing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

import torch
from torch import nn

from repro.models.base import RoutingHooks, entropy
from repro.runtime import distributed

if TYPE_CHECKING:

    class RoutedModule(RoutingHooks, nn.Module):
        """What routing_modules finds: a module with the engine hooks (a sparse head, MoEConv2d), as one type."""


def _has_hooks(module: nn.Module) -> TypeGuard[RoutedModule]:
    return isinstance(module, RoutingHooks)


def routing_modules(model: nn.Module) -> list[RoutedModule]:
    """The head and any routed backbone layers: every module with the engine hooks."""
    return [m for m in model.modules() if m is not model and _has_hooks(m)]


class RoutingTally:
    """Sums of one routed module's per-step routing statistics over an epoch, on the device."""

    def __init__(self) -> None:
        self.steps = 0
        # Summed over the steps added; None until the first.
        self.usage: torch.Tensor | None = None
        self.dropped: torch.Tensor | None = None
        self.forced: torch.Tensor | None = None
        self.entropy: torch.Tensor | None = None

    def add(self, stats: dict) -> None:
        self.steps += 1
        for name, key in (
            ("usage", "expert_counts"),
            ("dropped", "dropped"),
            ("forced", "forced"),
            ("entropy", "entropy"),
        ):
            value = stats[key].float() if key == "entropy" else stats[key]
            old = getattr(self, name)
            setattr(self, name, value if old is None else old + value)

    def sums(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(usage, dropped, forced, entropy); asked for only once a step was added."""
        assert self.usage is not None and self.dropped is not None
        assert self.forced is not None and self.entropy is not None
        return self.usage, self.dropped, self.forced, self.entropy

    def layer_summary(self) -> dict[str, Any]:
        """A backbone MoE layer's epoch (Table 5): expert usage counts, mean H(p_bar), H of the usage."""
        counts, _, _, entropy_sum = self.sums()
        usage = counts.float()
        return {
            "expert_usage": counts.tolist(),
            "entropy": (entropy_sum / self.steps).item(),
            "usage_entropy": entropy(usage / usage.sum().clamp_min(1)).item(),
        }

    def all_sum(self, world: distributed.World) -> None:
        """Sums over the ranks; `steps` counts every rank's steps, so means stay means over steps."""
        distributed.all_sum(*self.sums())
        self.steps *= world.size


def router_shift(before: torch.Tensor, after: torch.Tensor) -> float:
    """How far a router moved over an epoch: ||W_after - W_before|| / ||W_before||, 0.0 when it did not."""
    return ((after - before).norm() / before.norm().clamp_min(torch.finfo(before.dtype).tiny)).item()


def last_routing(last: dict[str, Any]) -> dict[str, Any]:
    """The last epoch's routing: the head's (expert_usage, test_usage_by_class, routing_entropy) and, under
    "layers", each backbone MoE layer's {"expert_usage": [E counts], "entropy": H(p_bar), "usage_entropy": ...,
    "router_shift": how far its router moved that epoch}."""
    out: dict[str, Any] = {k: last[k] for k in ("expert_usage", "test_usage_by_class", "routing_entropy") if k in last}
    if "routing_layers" in last:
        out["layers"] = last["routing_layers"]
    return out
