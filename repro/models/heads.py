"""Classifier heads and their registry; the MoE heads register themselves from their own files.

A head builder takes (in_features, num_classes, **params) and returns a module
mapping (B, F) features to (B, num_classes) logits. Heads that route set
``routed = True``: their whole compute is FLOPs_routed in the paper's rho (Section 3.1).
Every head carries the engine hooks of repro.models.base; a dense head's are no-ops.
A linear "FC head" is the dense head with ``hidden = ()``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from repro.models.base import RoutingHooks
from repro.registry import Registry

HEADS = Registry("head")


@dataclass(frozen=True)
class DenseHeadConfig:
    # The paper's dense head is feature_dim -> 1024 -> h -> classes in the rho-sweep
    # (Table 1), which replaced a fixed h = 256 used elsewhere.
    hidden: tuple[int, ...] = (1024, 256)
    dropout: float = 0.3


class DenseHead(RoutingHooks, nn.Module):
    """An MLP head: F -> hidden[0] -> ... -> classes, ReLU and dropout between layers."""

    routed = False

    def __init__(self, in_features: int, num_classes: int, cfg: DenseHeadConfig) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_features
        for h in cfg.hidden:
            layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(cfg.dropout)]
            width = h
        layers.append(nn.Linear(width, num_classes))
        self.mlp = nn.Sequential(*layers)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, F) -> (B, classes)
        return self.mlp(h)


@HEADS.register("dense", config=DenseHeadConfig, doc="dense MLP head (the paper's Dense baseline)")
def build_dense(in_features: int, num_classes: int, **params) -> nn.Module:
    return DenseHead(in_features, num_classes, DenseHeadConfig(**params))
