"""Worked example: the MoE layers in a model of your own, trained a few steps on a CPU, then counted.

    python docs/examples/moe_layers.py

A MoEConv2d (repro.models.moe_conv) takes torch's Conv2d arguments and `num_experts` filter banks, `top_k` of them
a sample. A head is built by its registry name (repro.models.HEADS: sparse_moe, expert_choice, soft_moe, ...) with
its config's fields as keywords (repro.models.configs). Every routed module carries the hooks of
repro.models.base, which a training loop calls: on_epoch_start before each epoch (temperature and k schedules),
aux_loss() after each training forward (added to the loss), after_backward() after each backward. FLOPs are
counted on a Classifier(backbone, head), in multiply-adds per image, a batch-axis head's at the batch it trains
with (docs/architecture.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from repro.models import HEADS
from repro.models.base import RoutingHooks
from repro.models.classifier import Classifier
from repro.models.flops import count_flops

from repro.models.moe_conv import MoEConv2d

IMAGE = (3, 16, 16)
BATCH = 32


def backbone() -> nn.Module:
    """(B, 3, 16, 16) -> (B, 32): a conv, a MoEConv2d of 4 banks mixing 2 a sample, global average pooling."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        MoEConv2d(16, 32, 3, num_experts=4, top_k=2, padding=1, load_balance_weight=0.01),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def build(head: str, **fields) -> Classifier:
    """The backbone above under the head registered as `head`, for 10 classes."""
    return Classifier(backbone(), HEADS.get(head).builder(32, 10, **fields))


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int = 2, steps: int = 5) -> list[float]:
    """A few Adam steps an epoch on one batch; the loss of each step."""
    hooks = [m for m in model.modules() if isinstance(m, RoutingHooks)]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    model.train()
    for epoch in range(epochs):
        for m in hooks:
            m.on_epoch_start(epoch, epochs)
        for _ in range(steps):
            loss = F.cross_entropy(model(x), y) + sum(m.aux_loss() for m in hooks)
            optimizer.zero_grad()
            loss.backward()
            for m in hooks:
                m.after_backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def main() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(BATCH, *IMAGE), torch.randint(0, 10, (BATCH,))
    for head in ("sparse_moe", "expert_choice", "soft_moe"):
        model = build(head, num_experts=4, expert_hidden=64)
        losses = train(model, x, y)
        usage = model.head.routing_stats()["expert_counts"].tolist()  # the last forward's; counting runs one more
        report = count_flops(model, IMAGE, batch=BATCH)  # report.problems: where the three counters disagree
        print(
            f"{head:14} loss {losses[0]:.3f} -> {losses[-1]:.3f}, samples per expert {usage}; "
            f"{report.total:,} MACs an image, rho {report.rho:.1%} ({', '.join(report.routed_modules)})"
        )


if __name__ == "__main__":
    main()
