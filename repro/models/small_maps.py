"""Convolutions on maps smaller than their kernel, by paths a CPU runs faster: the same function.

The functional profile trains at 8-16 px, where the last stages of a backbone run on 1x1 and 2x2
maps. oneDNN, torch's CPU convolution, is slow there: the backward of ResNet-18's 3x3 512-channel
convolution on a 1x1 map takes several times its forward, and a depthwise 3x3 convolution on a 2x2 map
longer than on a 4x4 one (docs/measurements.md). Two rewrites, each exact (zero padding is the same
zeros; only the summation order, so float rounding, differs), remove those cases:

- **a 1x1 output** reads, at its one position, the kernel taps that land inside the input; every other
  tap multiplies padding. So the convolution is one matrix product,
      conv2d(x, W, b) = linear(x[:, :, rows, cols].flatten(1), W[:, :, taps_h, taps_w].flatten(1), b),
  per group for a grouped one; the taps outside get a zero gradient on both paths.
- **a grouped convolution on an input smaller than its kernel** (a depthwise 3x3 on 2x2) is padded
  explicitly first and then convolved without padding, which oneDNN runs on its ordinary path.

`repro bench small-maps` measures the speed-up of a training step (docs/measurements.md has the figures).

Used by the training engine only (repro.train.engine.Engine.small_maps, and the digit pretraining): FLOP counts
and latency keep torch's convolution, which is what the paper's models are. Legend: N batch, G groups,
Ci/Co input/output channels, kh x kw kernel, T the taps inside the input.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.utils import _pair


def _inside(size: int, kernel: int, padding: int, dilation: int) -> range:
    """The kernel taps of output position 0 that land inside an input of `size` (the others read padding)."""
    inside = [i for i in range(kernel) if 0 <= i * dilation - padding < size]
    return range(inside[0], inside[-1] + 1) if inside else range(0)


def output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def taps(
    x: torch.Tensor, weight: torch.Tensor, padding: tuple[int, int], dilation: tuple[int, int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """For a convolution with a 1x1 output: (the input pixels it reads (N, Ci, th, tw), the kernel taps that read
    them (..., th, tw)), a kernel as large as the input, so their product summed is the output. `weight` may
    carry leading axes (MoEConv2d's experts); a dimension already whole is not sliced (no gradient copy)."""
    (ph, pw), (dh, dw) = padding, dilation
    (h, w), (kh, kw) = x.shape[-2:], weight.shape[-2:]
    taps_h, taps_w = _inside(h, kh, ph, dh), _inside(w, kw, pw, dw)
    if (len(taps_h), len(taps_w)) != (h, w):
        rows = slice(taps_h.start * dh - ph, (taps_h.stop - 1) * dh - ph + 1, dh)
        cols = slice(taps_w.start * dw - pw, (taps_w.stop - 1) * dw - pw + 1, dw)
        x = x[:, :, rows, cols]
    if (len(taps_h), len(taps_w)) != (kh, kw):  # one gather over the flat kernel: one zero-filled gradient, not two
        flat = torch.tensor([i * kw + j for i in taps_h for j in taps_w], device=weight.device)
        weight = weight.flatten(-2).index_select(-1, flat).unflatten(-1, (len(taps_h), len(taps_w)))
    return x, weight


def _one_position(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
) -> torch.Tensor:
    """The convolution of a 1x1 output as a matrix product over the taps inside the input (some are)."""
    xs, ws = taps(x, weight, padding, dilation)
    n, co = x.shape[0], weight.shape[0]
    xs = xs.reshape(n, groups, -1)  # (N, G, Ci/G*T): group g reads channels g*Ci/G ...
    ws = ws.reshape(groups, co // groups, -1)  # (G, Co/G, Ci/G*T)
    if groups == 1:
        return F.linear(xs[:, 0], ws[0], bias)[:, :, None, None]  # (N, Co, 1, 1)
    if weight.shape[1] == 1 and ws.shape[-1] <= 16:  # depthwise, few taps: products and sums beat G tiny matmuls
        y = (xs[:, :, None] * ws).sum(-1)  # (N, G, 1, T) * (G, Co/G, T) -> (N, G, Co/G)
    else:
        y = torch.einsum("ngk,gok->ngo", xs, ws)  # (N, G, Co/G)
    y = y.reshape(n, co)
    if bias is not None:
        y = y + bias
    return y[:, :, None, None]


def path(size: tuple[int, int], kernel, stride, padding, dilation, groups: int) -> str:
    """Which way conv2d runs a convolution of an input map of `size` (H, W): "matmul" (a 1x1 output),
    "padded" (a grouped convolution on an input smaller than its kernel) or "conv" (torch's, as it is)."""
    if isinstance(padding, str):
        return "conv"
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    (h, w) = size
    if (output_size(h, kh, sh, ph, dh), output_size(w, kw, sw, pw, dw)) == (1, 1):
        if _inside(h, kh, ph, dh) and _inside(w, kw, pw, dw):  # else the output is the bias alone
            return "matmul"
    elif groups > 1 and (ph or pw) and (h < dh * (kh - 1) + 1 or w < dw * (kw - 1) + 1):
        return "padded"
    return "conv"


def conv2d(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> torch.Tensor:
    """F.conv2d with zero padding, by the faster exact path where the map is smaller than the kernel."""
    way = (
        path((x.shape[-2], x.shape[-1]), tuple(weight.shape[-2:]), stride, padding, dilation, groups)
        if x.dim() == 4
        else "conv"
    )
    if way == "matmul":
        return _one_position(x, weight, bias, _pair(padding), _pair(dilation), groups)
    if way == "padded":
        ph, pw = _pair(padding)
        return F.conv2d(F.pad(x, (pw, pw, ph, ph)), weight, bias, stride, 0, dilation, groups)
    return F.conv2d(x, weight, bias, stride, padding, dilation, groups)


class SmallMapConv2d(nn.Conv2d):
    """nn.Conv2d whose calls on small maps take conv2d's paths above; the same parameters, state_dict and
    module path, so checkpoints and pretrained weights load into either."""

    def _conv_forward(self, input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        if self.padding_mode != "zeros":
            return super()._conv_forward(input, weight, bias)
        return conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)


@runtime_checkable
class SmallMapsSwitch(Protocol):
    """A module that runs its convolutions itself and takes conv2d's paths when `small_maps` is on (MoEConv2d)."""

    small_maps: bool


def use_small_maps(model: nn.Module) -> int:
    """Give every convolution of `model` conv2d's paths, in place: each plain nn.Conv2d becomes a SmallMapConv2d,
    and each MoEConv2d runs its banks' convolutions through conv2d. Returns how many modules changed (subclasses
    of nn.Conv2d other than SmallMapConv2d keep their own forward)."""
    changed = 0
    for module in model.modules():
        if type(module) is nn.Conv2d:
            module.__class__ = SmallMapConv2d
            changed += 1
        elif isinstance(module, SmallMapsSwitch) and not module.small_maps:
            module.small_maps = True
            changed += 1
    return changed


def to_channels_last(model: nn.Module) -> nn.Module:
    """Every nn.Conv2d's weights channels-last, in place (4-d weights only; MoEConv2d's banks stay as they are)."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            module.to(memory_format=torch.channels_last)
    return model
