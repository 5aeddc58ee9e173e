"""Classifier heads; the registry (repro.models.catalog) names each builder, the MoE heads live in their own files.

A head builder takes (in_features, num_classes, **params) and returns a module
mapping (B, F) features to (B, num_classes) logits. Heads that route set
``routed = True``: their whole compute is FLOPs_routed in the paper's rho (Section 3.1).
Every head carries the engine hooks of repro.models.base; a dense head's are no-ops.
A linear "FC head" is the dense head with ``hidden = ()``.
"""

from __future__ import annotations

import torch
from torch import nn

from repro.models.base import RoutingHooks, check_features, check_head
from repro.models.catalog import HEADS  # noqa: F401  (re-exported)
from repro.models.configs import DenseHeadConfig


class DenseHead(RoutingHooks, nn.Module):
    """An MLP head: F -> hidden[0] -> ... -> classes, ReLU and dropout between layers."""

    routed = False

    def __init__(self, in_features: int, num_classes: int, cfg: DenseHeadConfig) -> None:
        check_head(self, in_features, num_classes, cfg, DenseHeadConfig)
        super().__init__()
        self.in_features = in_features
        layers: list[nn.Module] = []
        width = in_features
        for h in cfg.hidden:
            layers += [nn.Linear(width, h), nn.ReLU(), nn.Dropout(cfg.dropout)]
            width = h
        layers.append(nn.Linear(width, num_classes))
        self.mlp = nn.Sequential(*layers)

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, F) -> (B, classes)
        check_features(self, h, self.in_features)
        return self.mlp(h)


def build_dense(in_features: int, num_classes: int, **params) -> nn.Module:
    """The dense head: (B, in_features) features -> (B, num_classes) logits;
    `params` are DenseHeadConfig's fields (repro.models.configs), checked there."""
    return DenseHead(in_features, num_classes, DenseHeadConfig(**params))
