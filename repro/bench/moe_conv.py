"""`repro bench moe-conv`: MoEConv2d's training step on each exact path against its dense convolution.

One routed layer (repro.models.moe_conv) of Table 5's shape by default: B 64, 256 -> 256 channels, 3x3,
14 x 14, k = 2 of 8, in training mode, its input channels-last as runs feed it. A step is the forward and
the backward to the input, the banks and the router. Each path of repro.models.moe_conv_paths runs as a
copy of one layer (the same weights, the same batch), then the layer as training builds it (the path that
measured time chooses, repro.models.moe_conv_choice), beside nn.Conv2d of the same shape. Rounds
alternate who goes first so machine noise falls on all; a path's ratio is the median over rounds of its
time over the dense convolution's in the same round. With `compiled`, torch.compile's kernels of the
paths of static shapes join them (their compilation is not timed).

Before timing, every path's output and gradients are compared with the same layer's in float64: the largest
difference relative to the largest value, float rounding only. The router's gradient is the largest: a sum
over the batch of terms that cancel through the softmax.
"""

from __future__ import annotations

import copy
import os
import statistics
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from repro.models.moe_conv import MoEConv2d
from repro.models.moe_conv_paths import PATHS

TOLERANCE = 1e-3  # float32's rounding stays below this, relative to the largest value (the router's up to 2.4e-4)
GOAL = 2.5  # the layer as training builds it, over its dense convolution (issue 46)


@dataclass(frozen=True)
class Shape:
    batch: int = 64
    channels: int = 256
    size: int = 14
    experts: int = 8
    top_k: int = 2

    def describe(self) -> str:
        return (
            f"B {self.batch}, {self.channels} channels, {self.size} x {self.size}, 3x3, "
            f"k = {self.top_k} of {self.experts}"
        )


@dataclass(frozen=True)
class Row:
    path: str  # a path's name, "dense", "compiled <path>" or "chosen"
    ms: list[float]  # a step, per round
    ratios: list[float]  # over the dense convolution's step in the same round
    macs: int  # forward multiply-adds of the batch (the path's count)
    diff: float  # largest relative difference of output and gradients from float64's

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


@dataclass(frozen=True)
class MoEConvBench:
    shape: Shape
    threads: int
    layout: str
    rows: list[Row]  # dense first, the chosen path last
    chosen: str  # the path measured time chose
    tolerance: float
    skipped: dict[str, str] = field(default_factory=dict)  # formulation -> why it did not run
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after

    @property
    def disagreeing(self) -> list[Row]:
        return [r for r in self.rows if r.diff > self.tolerance]


def _layer(shape: Shape, seed: int) -> tuple[nn.Conv2d, MoEConv2d]:
    torch.manual_seed(seed)
    conv = nn.Conv2d(shape.channels, shape.channels, 3, padding=1, bias=False)
    return conv, MoEConv2d.from_conv(conv, shape.experts, shape.top_k, noise=0.1).train()


def _step(module: nn.Module, x: torch.Tensor, grads: dict[bool, torch.Tensor]) -> list[torch.Tensor]:
    """Forward, then the gradients of the input and every parameter (returned, not accumulated). The output's
    gradient comes in the output's memory format, as the layer after it (a BatchNorm) gives it: `grads`, by
    whether the output is channels-last."""
    y = module(x)
    inputs = [x, *(p for p in module.parameters() if p.requires_grad)]
    grad = grads[y.dim() == 4 and y.is_contiguous(memory_format=torch.channels_last) and not y.is_contiguous()]
    return [y.detach(), *torch.autograd.grad(y, inputs, grad)]


def _relative(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(((u - v.double()).abs().max() / u.abs().max().clamp_min(1e-30)).item() for u, v in zip(a, b))


def bench_moe_conv(
    shape: Shape = Shape(),
    threads: int = 2,
    rounds: int = 5,
    steps: int = 2,
    channels_last: bool = True,
    compiled: tuple[str, ...] = (),
    seed: int = 0,
) -> MoEConvBench:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _bench(shape, threads, rounds, steps, channels_last, compiled, seed)
    finally:
        torch.set_num_threads(before)


def _bench(
    shape: Shape, threads: int, rounds: int, steps: int, channels_last: bool, compiled: tuple[str, ...], seed: int
) -> MoEConvBench:
    load = os.getloadavg()[0]
    conv, layer = _layer(shape, seed)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape.batch, shape.channels, shape.size, shape.size, generator=g)
    grad = torch.randn(x.shape, generator=g)
    if channels_last:  # as the training engine runs: inputs and dense weights channels-last
        x, grad = (t.contiguous(memory_format=torch.channels_last) for t in (x, grad))
        conv = conv.to(memory_format=torch.channels_last)
    x.requires_grad_()
    grads = {True: grad.contiguous(memory_format=torch.channels_last), False: grad.contiguous()}
    modules: dict[str, nn.Module] = {"dense": conv}
    for name in PATHS:
        path_layer = copy.deepcopy(layer)
        path_layer.path_rule = name
        modules[name] = path_layer
    skipped: dict[str, str] = {}
    for name in compiled:
        module = copy.deepcopy(layer)
        module.path_rule = name
        try:
            optimized = torch.compile(module)
            assert isinstance(optimized, nn.Module)  # a module compiles to one (torch's stubs: any callable)
            modules[f"compiled {name}"] = optimized
            _step(optimized, x, grads)  # compiles here, untimed
        except Exception as exc:  # inductor needs a C++ compiler on a CPU: say why, bench the rest
            modules.pop(f"compiled {name}", None)
            skipped[f"compiled {name}"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    layer.path_rule = "measured"  # the layer as training builds it (repro.train.engine.Engine.moe_conv)
    exact = copy.deepcopy(layer).double()
    exact.path_rule = "fewest-macs"
    reference = _step(exact, x.detach().double().requires_grad_(), {k: v.double() for k, v in grads.items()})
    _step(layer, x, grads)  # the first call measures the candidates, untimed
    pick = layer.paths_ran[tuple(x.shape)]
    modules["chosen"] = layer
    diffs = {name: 0.0 if name == "dense" else _relative(reference, _step(m, x, grads)) for name, m in modules.items()}
    del exact, reference

    ms: dict[str, list[float]] = {name: [] for name in modules}
    names = list(modules)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            for _ in range(steps):
                _step(modules[name], x, grads)
            ms[name].append(1000 * (time.perf_counter() - start) / steps)
    batch, positions = shape.batch, shape.size * shape.size
    dense_macs = batch * shape.channels * positions * shape.channels * 9
    rows = []
    for name in names:
        path = pick if name == "chosen" else name.removeprefix("compiled ")
        macs = dense_macs if name == "dense" else PATHS[path].macs(layer, batch, positions)
        rows.append(Row(name, ms[name], [a / d for a, d in zip(ms[name], ms["dense"])], macs, diffs[name]))
    return MoEConvBench(
        shape,
        threads,
        "channels-last" if channels_last else "contiguous",
        rows,
        pick,
        TOLERANCE,
        skipped,
        (load, os.getloadavg()[0]),
    )
