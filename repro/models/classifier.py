"""Backbone + head, the unit every table trains, counts and times (Fig. 1 of the paper)."""

from __future__ import annotations

import torch
from torch import nn


class Classifier(nn.Module):
    """A backbone and a head: (B, C, H, W) images -> the backbone's (B, in_features) features -> the head's
    (B, num_classes) logits. The backbone pools and flattens its map itself; count_flops reads the two parts
    apart (rho, the head's share)."""

    def __init__(self, backbone: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, 3, H, W) -> (B, classes)
        return self.head(self.backbone(x))

    def routed_module_names(self) -> list[str]:
        """Outermost submodules whose compute is FLOPs_routed (rho's numerator, Section 3.1); a routed module that
        names `rho_parts` counts those children only (the sparse head's experts without its router)."""
        names: list[str] = []
        for name, module in self.named_modules():
            if getattr(module, "routed", False) and not any(name.startswith(n + ".") for n in names):
                parts = getattr(module, "rho_parts", ())
                names += [f"{name}.{part}" for part in parts] if parts else [name]
        return names
