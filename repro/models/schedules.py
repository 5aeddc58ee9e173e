"""Routing schedules (Sections 3.2 and 4.1): temperature tau(t) and the top-k warm-up.

t is the training step and T its last value. The engine steps the schedules once
per epoch: epoch e (0-based) of N is t = e, T = N - 1, so the first epoch trains at
tau(0) and the last at tau(T). With N = 1 the single epoch is t = 0.

    linear   tau(t) = tau_max - (tau_max - tau_min) t / T                    (Section 3.2)
    sigmoid  s(x) = sigmoid(kappa (1/2 - x)), x = t / T
             centred  tau(t) = tau_min + (tau_max - tau_min) s(t/T)
             exact    tau(t) = tau_min + (tau_max - tau_min) (s(t/T) - s(1)) / (s(0) - s(1))

The sigmoid equation is not in the text we have, only "sigma is the logistic
function and kappa = 7.0 the sharpness", and that the schedule anneals "from
tau_max to tau_min". The centred form equals the linear schedule's midpoint at
t = T/2 but its end points are tau_min + (tau_max - tau_min) sigmoid(-+kappa/2),
2.9% of the range inside [tau_min, tau_max] for kappa = 7: it ends at 0.156 for
tau_min = 0.13, and at 0.078 for 0.05, where the linear schedule it is compared
with ends at 0.05. The exact form (the default, the reading "sigmoid-form" in
repro/spec/readings.toml) rescales the same curve so that it starts at tau_max and
ends at tau_min; its midpoint is unchanged.

k warm-up (Section 4.1, CIFAR: "5-epoch warmup (k = 8 -> 1)"): k falls linearly
from k_start at epoch 0 towards k_end, rounded half up, and is k_end from epoch
`warmup_epochs` on. For 8 -> 1 over 5 epochs: 8, 7, 5, 4, 2, then 1 ("linear", the
default). The text does not say how k falls: "hold" keeps k_start for the warm-up's
epochs, then k_end: 8, 8, 8, 8, 8, then 1 (the reading "k-warmup-form").

The engine steps tau once per epoch. Whether the paper's tau steps per epoch or per
training step is not stated (the reading "tau-step"): per step, the schedule's t / T
runs over every step of the (paper-timeline) run, `step_progress`.
"""

from __future__ import annotations

import math
from typing import Literal


def progress(epoch: int, num_epochs: int) -> float:
    """t / T for epoch `epoch` (0-based) of `num_epochs`; 0 when there is one epoch."""
    if not 0 <= epoch < num_epochs:
        raise ValueError(f"epoch {epoch} outside 0..{num_epochs - 1}")
    return epoch / (num_epochs - 1) if num_epochs > 1 else 0.0


def linear_tau(frac: float, tau_max: float, tau_min: float) -> float:
    """tau at t / T = frac (Section 3.2)."""
    return tau_max - (tau_max - tau_min) * frac


def _s(frac: float, kappa: float) -> float:
    return 1.0 / (1.0 + math.exp(-kappa * (0.5 - frac)))


def sigmoid_tau(
    frac: float, tau_max: float, tau_min: float, kappa: float = 7.0, form: Literal["exact", "centred"] = "exact"
) -> float:
    """tau at t / T = frac; kappa the sharpness (Section 3.2); form: see the module docstring."""
    share = _s(frac, kappa)
    if form == "exact":
        share = (share - _s(1.0, kappa)) / (_s(0.0, kappa) - _s(1.0, kappa))
    elif form != "centred":
        raise ValueError(f"unknown sigmoid form '{form}'")
    return tau_min + (tau_max - tau_min) * share


def temperature(
    frac: float,
    tau_max: float,
    tau_min: float,
    schedule: Literal["linear", "sigmoid"],
    kappa: float = 7.0,
    form: Literal["exact", "centred"] = "exact",
) -> float:
    if schedule == "linear":
        return linear_tau(frac, tau_max, tau_min)
    if schedule == "sigmoid":
        return sigmoid_tau(frac, tau_max, tau_min, kappa, form)
    raise ValueError(f"unknown temperature schedule '{schedule}'")


def step_progress(epoch: int, num_epochs: int, step: int, steps: int) -> float:
    """t / T at step `step` (0-based) of `steps` in epoch `epoch` of `num_epochs`: 0 at the first step, 1 at
    the last."""
    if not (0 <= epoch < num_epochs and 0 <= step < steps):
        raise ValueError(f"step {step} of {steps} in epoch {epoch} of {num_epochs} is outside the run")
    total = num_epochs * steps
    return (epoch * steps + step) / (total - 1) if total > 1 else 0.0


def warmup_k(
    epoch: int, k_end: int, k_start: int, warmup_epochs: int, form: Literal["linear", "hold"] = "linear"
) -> int:
    """Top-k for `epoch` under a k_start -> k_end warm-up of `warmup_epochs` (Section 4.1): linear, or held."""
    if warmup_epochs <= 0 or epoch >= warmup_epochs:
        return k_end
    if form == "hold":
        return k_start
    if form != "linear":
        raise ValueError(f"unknown k warm-up form '{form}'")
    return math.floor(k_start - (k_start - k_end) * epoch / warmup_epochs + 0.5)
