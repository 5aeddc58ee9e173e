"""The expert MLP shared by every MoE variant (Section 3.1).

Shapes: N rows routed to the expert, D input features (d_in), H hidden width h,
O outputs (d_out, the number of classes for a head).
"""

from __future__ import annotations

import torch
from torch import nn


class MLPExpert(nn.Module):
    """d_in -> h -> h -> d_out with ReLU and dropout 0.3 (two hidden layers)."""

    def __init__(self, in_features: int, hidden_features: int, out_features: int, drop: float = 0.3) -> None:
        super().__init__()
        self.in_features, self.hidden_features, self.out_features = in_features, hidden_features, out_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, hidden_features)
        self.fc3 = nn.Linear(hidden_features, out_features)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, D) -> (N, O)
        x = self.drop(self.act(self.fc1(x)))
        x = self.drop(self.act(self.fc2(x)))
        return self.fc3(x)
