"""The expert MLPs shared by every MoE variant (Section 3.1), stored as one stacked bank.

Shapes: E experts, N rows routed to one expert, C rows per expert in a batched
buffer, D input features (d_in), H hidden width h, O outputs (d_out).

Each expert is d_in -> h -> h -> d_out with ReLU and dropout 0.3 after both hidden
layers ("each_hidden"; the reading "expert-dropout" has it after the second only,
"last_hidden": Section 3.1 lists the dropout without saying where).
The weights of all E experts are stacked on a leading axis so that one
parameter set serves both dispatch implementations:

    bank(x, e)   x (N, D)     one expert, three F.linear calls (the paper's loop)
    bank(x)      x (E, C, D)  all experts at once, one torch.bmm per layer

A loop over experts passes bank.views() (every stacked tensor unbound once) to each
bank(x, e, views=...) call. Indexing w[e] per expert instead costs, in the backward
pass, one zero-filled full (E, out, in) gradient and one full-size addition per
expert (autograd's SelectBackward); the unbound views' gradients are stacked once.
Indexing made those fills most of a sparse head's step (docs/performance.md).
"""

from __future__ import annotations

import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from repro.models.zero_banks import init_bank

# Per layer, the E experts' weights, and the same for the biases (ExpertBank.views).
ExpertViews = tuple[list[tuple[torch.Tensor, ...]], list[tuple[torch.Tensor, ...]]]


class ExpertBank(nn.Module):
    def __init__(
        self,
        num_experts: int,
        in_features: int,
        hidden_features: int,
        out_features: int,
        drop: float = 0.3,
        drop_at: str = "each_hidden",
    ) -> None:
        super().__init__()
        if drop_at not in ("each_hidden", "last_hidden"):
            raise ValueError(f"unknown dropout position '{drop_at}'")
        self.drop_at = drop_at
        self.num_experts = num_experts
        self.in_features, self.hidden_features, self.out_features = in_features, hidden_features, out_features
        self.act: nn.Module = nn.ReLU()  # a module, so the all-ops FLOP convention sees it
        self.dropout = nn.Dropout(drop)
        shapes = [(hidden_features, in_features), (hidden_features, hidden_features), (out_features, hidden_features)]
        self.weights = nn.ParameterList(nn.Parameter(torch.empty(num_experts, o, i)) for o, i in shapes)  # (E, out, in)
        self.biases = nn.ParameterList(nn.Parameter(torch.empty(num_experts, o)) for o, _ in shapes)  # (E, out)
        for w, b in zip(self.weights, self.biases):
            bound = 1 / math.sqrt(w.shape[-1])  # nn.Linear's default initialisation, per expert
            init_bank(w, partial(nn.init.uniform_, a=-bound, b=bound))
            init_bank(b, partial(nn.init.uniform_, a=-bound, b=bound))

    def macs_per_row(self) -> int:
        d, h, o = self.in_features, self.hidden_features, self.out_features
        return d * h + h * h + h * o

    def own_macs(self, shapes) -> int:
        """Multiply-adds of one call (see repro.models.flops): every row through all three layers."""
        (x, *_), _ = shapes
        return math.prod(x[:-1]) * self.macs_per_row()

    def views(self) -> ExpertViews:
        """Every layer's weights and biases unbound into E per-expert tensors, for one loop over experts."""
        return [w.unbind(0) for w in self.weights], [b.unbind(0) for b in self.biases]

    def forward(self, x: torch.Tensor, expert: int | None = None, views: ExpertViews | None = None) -> torch.Tensor:
        """(N, D) with an expert index -> (N, O); (E, C, D) -> (E, C, O)."""
        last = len(self.weights) - 1
        if x.dim() != 3:
            if expert is None:
                raise ValueError("ExpertBank: an (N, D) input needs the index of the expert it runs")
            weights, biases = views or self.views()
            layers = [(w[expert], b[expert]) for w, b in zip(weights, biases)]  # the expert's (out, in), (out,)
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if x.dim() == 3:
                x = torch.bmm(x, w.transpose(1, 2)) + b.unsqueeze(1)  # (E, C, in) @ (E, in, out) -> (E, C, out)
            else:
                x = F.linear(x, *layers[i])  # (N, in) -> (N, out)
            if i < last:
                x = self.act(x)
                if self.drop_at == "each_hidden" or i == last - 1:
                    x = self.dropout(x)
        return x

    def grad_norms(self) -> torch.Tensor:
        """Gradient magnitude of each expert's parameters, (E,); zero where no gradient exists."""
        sq = torch.zeros(self.num_experts, device=self.weights[0].device)
        for p in [*self.weights, *self.biases]:
            if p.grad is not None:  # one pass per tensor, no squared copy of the (E, out, in) gradient
                sq = sq + torch.linalg.vector_norm(p.grad.detach().flatten(1), dim=1).square()
        return sq.sqrt()
