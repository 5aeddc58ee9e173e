"""FLOP accounting's second convention (repro.models.flops): normalisation, activation and pooling, one FLOP per
element (two for an affine BatchNorm), to show how sensitive rho is.

Counted per function call, so that a forward calling one (MobileNet-V2 pools with
F.adaptive_avg_pool2d) counts as a module wrapping it (nn.AdaptiveAvgPool2d) does;
each call belongs to the innermost module running when it is made.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable

from torch.overrides import TorchFunctionMode


def _input_elements(args: tuple, kwargs: dict) -> int:
    return args[0].numel()


def _batch_norm(args: tuple, kwargs: dict) -> int:
    weight = args[3] if len(args) > 3 else kwargs.get("weight")
    return args[0].numel() * (2 if weight is not None else 1)  # normalise, then scale and shift when affine


EXTRA_FUNCTIONS: dict[str, Callable[[tuple, dict], int]] = {
    "batch_norm": _batch_norm,
    "relu": _input_elements,
    "hardtanh": _input_elements,  # ReLU6
    "max_pool2d": _input_elements,
    "avg_pool2d": _input_elements,
    "adaptive_avg_pool2d": _input_elements,
}


class ExtraOps(TorchFunctionMode):
    """Element counts of EXTRA_FUNCTIONS calls, by the module path that issued them."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.counts: dict[str, int] = defaultdict(int)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = EXTRA_FUNCTIONS.get(getattr(func, "__name__", ""))
        if rule is not None and self.stack:
            self.counts[self.stack[-1]] += rule(args, kwargs)
        return func(*args, **kwargs)
