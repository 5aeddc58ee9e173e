"""Models built to be counted, not trained: their expert banks hold zeros instead of random values.

The same context marks a forward pass that is counted (repro.models.flops enters it): a layer with
several exact paths then runs its fewest-multiply-add one (MoEConv2d, repro.models.moe_conv_choice), so
a count never depends on what this machine runs fastest.

A FLOP count, a parameter count or a layer's shapes depend on which experts a sample runs, never
on what those experts hold: routers, gates and the backbone decide the dispatch, and they keep
their own initialisation (a ReLU-routed head still opens gates per input). Drawing random values
for the banks was most of the FLOP check's cost (docs/performance.md), and no count reads them.

    with built_for_counting():
        model = build_model(...)   # every ExpertBank and MoEConv2d bank filled with zeros
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

import torch

_COUNTING: ContextVar[bool] = ContextVar("built_for_counting", default=False)


@contextmanager
def built_for_counting() -> Iterator[None]:
    """Inside: expert banks built here hold zeros (see the module docstring)."""
    token = _COUNTING.set(True)
    try:
        yield
    finally:
        _COUNTING.reset(token)


def counting() -> bool:
    """Whether a model is being built, or run, to be counted."""
    return _COUNTING.get()


def init_bank(tensor: torch.Tensor, init: Callable[[torch.Tensor], object]) -> None:
    """Give an expert bank its initial values: `init`, or zeros for a model built to be counted."""
    if counting():
        with torch.no_grad():
            tensor.zero_()
    else:
        init(tensor)
