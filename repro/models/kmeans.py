"""Seeded k-means in torch, and the reservoir of features it is fitted on (CLEAR- and TGR-style routers).

Shapes: N rows, D features, E clusters (one per expert).

    init      E distinct rows drawn by a torch.Generator seeded with `seed` (no global RNG touched)
    assign    z_n = argmin_e ||x_n - c_e||^2                      (N,)
    update    c_e = mean of the rows with z_n = e; an empty cluster keeps its centre
    stop      after `iters` Lloyd steps or when no assignment changes

Deterministic: the same rows and seed give the same centres, on any device.
"""

from __future__ import annotations

import torch


def nearest(x: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """Index of the closest centre: x (N, D), centres (E, D) -> (N,) long."""
    d2 = (x * x).sum(1, keepdim=True) - 2 * x @ centres.t() + (centres * centres).sum(1)  # (N, E)
    return d2.argmin(1)


@torch.no_grad()
def kmeans(x: torch.Tensor, num_clusters: int, iters: int = 25, seed: int = 0) -> torch.Tensor:
    """Lloyd's k-means from seeded random rows: x (N, D) -> centres (E, D)."""
    n = x.shape[0]
    if n < num_clusters:
        raise ValueError(f"k-means needs at least {num_clusters} rows, got {n}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = x.float()
    centres = x[torch.randperm(n, generator=gen)[:num_clusters].to(x.device)].clone()  # (E, D)
    labels = None
    for _ in range(iters):
        new = nearest(x, centres)  # (N,)
        if labels is not None and torch.equal(new, labels):
            break
        labels = new
        one_hot = torch.zeros(n, num_clusters, device=x.device).scatter_(1, labels[:, None], 1.0)  # (N, E)
        counts = one_hot.sum(0)  # (E,)
        sums = one_hot.t() @ x  # (E, D)
        centres = torch.where(counts[:, None] > 0, sums / counts.clamp_min(1)[:, None], centres)
    return centres


class Reservoir:
    """The last `capacity` feature rows seen in training forwards (detached, kept on their device)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.rows: list[torch.Tensor] = []
        self.count = 0

    def add(self, x: torch.Tensor) -> None:
        self.rows.append(x.detach())
        self.count += x.shape[0]
        while self.rows and self.count - self.rows[0].shape[0] >= self.capacity:
            self.count -= self.rows.pop(0).shape[0]

    def take(self) -> torch.Tensor | None:
        """All kept rows (N, D), emptying the reservoir; None when nothing was kept."""
        if not self.rows:
            return None
        x = torch.cat(self.rows)[-self.capacity :]
        self.rows, self.count = [], 0
        return x
