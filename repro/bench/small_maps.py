"""`repro bench small-maps`: training steps with torch's convolution and with the small-map paths
(repro.models.small_maps), on backbones the functional profile trains at 8-16 px.

Each model is built once; a copy takes the other path, from the same weights, on the same batch. Rounds
alternate between the paths so machine noise falls on both; each reports its median. Before timing, one
forward and backward on each path (the same dropout masks) gives the largest difference of the outputs and
of the gradients, relative to the largest value: the two paths compute one function, so it is float rounding.
"""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from repro.measure.timing import cpu_threads
from repro.models import Component, build_model
from repro.models.small_maps import path, to_channels_last, use_small_maps

DENSE = Component("dense", {"hidden": [1024, 256]})


@dataclass(frozen=True)
class Case:
    label: str
    dataset: str
    image_size: int  # the functional profile's, for this dataset
    backbone: Component


CASES = (
    Case("ResNet-18 (Table 4; the digit pretraining)", "imagenet", 16, Component("resnet18")),
    Case("ResNet-18, MoEConv2d k = 2 (Table 5)", "imagenet", 16, Component("resnet18_moeconv", {"top_k": 2})),
    Case("CIFAR depthwise, 3 blocks (Table 2's dw2)", "cifar100", 8, Component("cifar_depthwise_3block")),
)


@dataclass(frozen=True)
class SmallMapsBench:
    case: Case
    layers: int  # convolution modules (nn.Conv2d, MoEConv2d) called in a forward
    small: int  # of which on a map smaller than the kernel: a small-map path
    conv_ms: list[float]  # ms a training step, per round
    small_ms: list[float]
    output_diff: float  # max |difference| / max |value|
    grad_diff: float

    @property
    def speedup(self) -> float:
        return statistics.median(self.conv_ms) / statistics.median(self.small_ms)


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / a.abs().max().clamp_min(1e-30)).item()


def _small_layers(model: torch.nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """(convolution modules called, those that took a small-map path) in one forward of `x`."""
    from repro.models.moe_conv import MoEConv2d

    ways = []

    def seen(m, inputs, _out) -> None:
        ways.append(path(tuple(inputs[0].shape[-2:]), m.kernel_size, m.stride, m.padding, m.dilation, m.groups))

    hooks = [m.register_forward_hook(seen) for m in model.modules() if isinstance(m, (torch.nn.Conv2d, MoEConv2d))]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return len(ways), sum(way != "conv" for way in ways)


def _differences(
    conv: torch.nn.Module, small: torch.nn.Module, x: torch.Tensor, y: torch.Tensor
) -> tuple[float, float]:
    outs, grads = [], []
    for model in (conv, small):
        model.zero_grad(set_to_none=True)
        torch.manual_seed(0)  # the same dropout masks on both paths
        out = model(x)
        F.cross_entropy(out, y).backward()
        outs.append(out.detach())
        grads.append([p.grad for p in model.parameters() if p.grad is not None])
    return _relative(*outs), max(_relative(a, b) for a, b in zip(*grads))


def bench_case(case: Case, batch: int, steps: int, rounds: int, seed: int = 0) -> SmallMapsBench:
    from repro.data.specs import get_dataset

    spec = get_dataset(case.dataset)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, spec.channels, case.image_size, case.image_size, generator=g)
    x = x.contiguous(memory_format=torch.channels_last)  # as runs feed it
    y = torch.randint(spec.num_classes, (batch,), generator=g)
    torch.manual_seed(seed)
    conv = to_channels_last(build_model(case.dataset, case.backbone, DENSE, image_size=case.image_size))
    small = copy.deepcopy(conv)
    use_small_maps(small)
    layers, on_small = _small_layers(small, x)
    output_diff, grad_diff = _differences(conv, small, x, y)
    paths = {"conv": conv, "small": small}
    opts = {name: torch.optim.Adam(m.parameters(), lr=1e-3, fused=True) for name, m in paths.items()}
    ms: dict[str, list[float]] = {name: [] for name in paths}
    for name in paths:  # warm-up: allocator, oneDNN's kernels
        _step(paths[name], opts[name], x, y)
    names = list(paths)
    for r in range(rounds):
        for name in names[r % 2 :] + names[: r % 2]:  # alternate who goes first
            start = time.perf_counter()
            for _ in range(steps):
                _step(paths[name], opts[name], x, y)
            ms[name].append(1000 * (time.perf_counter() - start) / steps)
    return SmallMapsBench(case, layers, on_small, ms["conv"], ms["small"], output_diff, grad_diff)


def bench_small_maps(
    batch: int = 128, steps: int = 3, rounds: int = 3, threads: int = 1, cases: tuple[Case, ...] = CASES
) -> list[SmallMapsBench]:
    with cpu_threads(torch.device("cpu"), threads):
        return [bench_case(case, batch, steps, rounds) for case in cases]
