"""MoEConv2d's exact paths: the formulations of one layer's forward, each computing the same function.

Legend (repro.models.moe_conv's): B batch, E experts, K top-k, G groups, Ci/Co input/output channels,
kh x kw kernel, W = Co*Ci/G*kh*kw weights of one bank, P = H'*W' output positions, g (B, K) the gates of
the selected experts i (B, K), and the gate matrix M (B, E): g scattered to i, zero elsewhere. The layer is

    y_b = sum_j g_bj conv(x_b, W_{i_bj}) + sum_j g_bj c_{i_bj}                     (W_e bank, c_e bias of e)
        = conv(x_b, sum_j g_bj W_{i_bj}) + ...                                      (a convolution is linear in W)

and each path below evaluates one side of that identity; only the summation order, so the rounding, differs.

    mixed       the K selected banks gathered and mixed per sample, (B, 1, K) @ (B, K, W), then one grouped
                convolution over the batch (groups = B*G). The fewest multiply-adds wherever mixing is cheaper
                than K convolutions: K*W + P*W a sample.
    gate-mm     all E banks mixed by the gate matrix, (B, E) @ (E, W): E*W + P*W a sample, the zeros of M
                included, but one dense matrix product in place of a gather of K*B banks.
    unfolded    gate-mm's per-sample kernels times the unfolded input (im2col as a strided view, copied
                once): one batched matmul (B*G, Co/G, Ci/G*kh*kw) @ (B*G, Ci/G*kh*kw, P).
    per-expert  each expert's convolution over the samples that selected it, a loop over E: K*P*W a sample.
    sorted      the same convolutions over the B*K (sample, slot) pairs gathered once, sorted by expert:
                one gather, E convolutions on contiguous slices, one gated scatter back.

`mixed`, `gate-mm` and `unfolded` have the same shapes whatever the routing (a compiled graph never
recompiles for them); `per-expert` and `sorted` run batches of data-dependent size. Which path runs is
repro.models.moe_conv_choice's rule; each path's `macs` is what repro.models.flops counts when it ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import torch
import torch.nn.functional as F

from repro.models import small_maps

if TYPE_CHECKING:
    from repro.models.moe_conv import MoEConv2d


def gate_matrix(g: torch.Tensor, top_i: torch.Tensor, experts: int) -> torch.Tensor:
    """M (B, E): the gates at the selected experts, zero elsewhere; a padded capacity slot (gate 0) adds 0."""
    return torch.zeros(g.shape[0], experts, dtype=g.dtype, device=g.device).scatter_add(-1, top_i, g)


def _grouped_conv(m: MoEConv2d, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """Per-sample kernels w (B, W) and biases (B, Co) as one convolution with groups = B*G."""
    b = x.shape[0]
    y = m._conv(
        x.reshape(1, b * m.in_channels, *x.shape[2:]),  # (1, B*Ci, H, W)
        w.reshape(b * m.out_channels, *m.weight.shape[2:]),  # (B*Co, Ci/G, kh, kw)
        None if bias is None else bias.reshape(-1),  # (B*Co,)
        stride=m.stride,
        padding=m.padding,
        dilation=m.dilation,
        groups=b * m.groups,
    )  # (1, B*Co, H', W')
    return y.reshape(b, m.out_channels, *y.shape[2:])


def mixed(m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
    b = x.shape[0]
    banks = m.weight.flatten(1).index_select(0, top_i.flatten()).view(b, m.top_k, -1)  # (B, K, W)
    w = torch.bmm(g.unsqueeze(1), banks)  # (B, 1, K) @ (B, K, W) -> (B, 1, W)
    bias = None
    if m.bias is not None:  # (B, 1, K) @ (B, K, Co) -> (B, 1, Co)
        bias = torch.bmm(g.unsqueeze(1), m.bias.index_select(0, top_i.flatten()).view(b, m.top_k, -1))
    return _grouped_conv(m, x, w, bias)


def _gate_mm_kernels(m: MoEConv2d, g: torch.Tensor, top_i: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    gm = gate_matrix(g, top_i, m.num_experts).to(m.weight.dtype)  # (B, E)
    w = gm @ m.weight.flatten(1)  # (B, E) @ (E, W) -> (B, W)
    return w, None if m.bias is None else gm @ m.bias  # (B, E) @ (E, Co) -> (B, Co)


def gate_mm(m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
    return _grouped_conv(m, x, *_gate_mm_kernels(m, g, top_i))


def unfold(x: torch.Tensor, kernel, stride, padding, dilation) -> torch.Tensor:
    """im2col: (B, Ci, H, W) -> (B, Ci, kh, kw, H', W'), a strided view of the zero-padded input."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    x = F.pad(x, (pw, pw, ph, ph))
    cols = x.unfold(2, dh * (kh - 1) + 1, sh).unfold(3, dw * (kw - 1) + 1, sw)  # (B, Ci, H', W', span_h, span_w)
    return cols[..., ::dh, ::dw].permute(0, 1, 4, 5, 2, 3)


def unfolded(m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
    b, groups = x.shape[0], m.groups
    w, bias = _gate_mm_kernels(m, g, top_i)
    cols = unfold(x, m.kernel_size, m.stride, m.padding, m.dilation)  # (B, Ci, kh, kw, H', W')
    size = cols.shape[-2:]
    cols = cols.reshape(b, groups, -1, size[0] * size[1])  # (B, G, Ci/G*kh*kw, P): the one copy
    y = torch.matmul(w.view(b, groups, m.out_channels // groups, -1), cols)  # (B, G, Co/G, P)
    y = y.view(b, m.out_channels, *size)
    return y if bias is None else y + bias[:, :, None, None]


def per_expert(m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
    """Each sample through its K banks. A 1x1 output on the small-map path passes the taps inside the input
    (small_maps.taps), once for all experts: the banks' convolutions are then unpadded, as large as their input."""
    gates = gate_matrix(g, top_i, m.num_experts)
    weight: torch.Tensor = m.weight
    conv: dict[str, int | tuple[int, int]] = dict(stride=m.stride, padding=m.padding, dilation=m.dilation)
    size = output_size(m, x)
    out = x.new_zeros(x.shape[0], m.out_channels, *size)  # (B, Co, H', W')
    if (
        m.small_maps
        and small_maps.path((x.shape[2], x.shape[3]), m.kernel_size, m.stride, m.padding, m.dilation, m.groups)
        == "matmul"
    ):
        x, weight = small_maps.taps(x, m.weight, m.padding, m.dilation)
        conv = dict(stride=1, padding=0, dilation=1)
    banks = weight.unbind(0)  # one gradient stack, not a full-size zero gradient per expert (ExpertBank.views)
    biases = m.bias.unbind(0) if m.bias is not None else [None] * m.num_experts
    for e in range(m.num_experts):
        rows = (top_i == e).any(-1).nonzero().flatten()  # samples that selected expert e
        if rows.numel():
            y = m._conv(x[rows], banks[e], biases[e], groups=m.groups, **conv)
            y = gates[rows, e, None, None, None] * y  # float32 under CUDA autocast, whose softmax is float32
            out = out.index_add(0, rows, y.to(out.dtype))
    return out


def sorted_experts(m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor) -> torch.Tensor:
    order = top_i.flatten().argsort(stable=True)  # (B*K,) the (sample, slot) pairs by expert
    counts = torch.bincount(top_i.flatten(), minlength=m.num_experts).tolist()  # one host sync a layer
    rows = order // m.top_k  # (B*K,) their samples
    xs = x.index_select(0, rows)  # (B*K, Ci, H, W) grouped by expert
    banks, biases = m.weight.unbind(0), m.bias.unbind(0) if m.bias is not None else [None] * m.num_experts
    ys = [
        m._conv(part, banks[e], biases[e], m.stride, m.padding, m.dilation, m.groups)
        for e, part in enumerate(xs.split(counts))
        if counts[e]
    ]
    y = torch.cat(ys) * g.flatten().index_select(0, order)[:, None, None, None]  # (B*K, Co, H', W') gated
    out = x.new_zeros(x.shape[0], *y.shape[1:])
    return out.index_add(0, rows, y.to(out.dtype))


def output_size(m: MoEConv2d, x: torch.Tensor) -> list[int]:
    """[H', W'] of the layer's output on x."""
    return [
        small_maps.output_size(n, k, s, p, d)
        for n, k, s, p, d in zip(x.shape[2:], m.kernel_size, m.stride, m.padding, m.dilation)
    ]


# Multiply-adds of one call on each path (repro.models.flops' analytic column), from the call's shapes.
def _macs(mixing: Callable[[MoEConv2d], int], convolutions: Callable[[MoEConv2d], int]):
    def macs(m: MoEConv2d, batch: int, positions: int) -> int:
        fan_in = m.in_channels // m.groups * math.prod(m.kernel_size)
        conv = batch * m.out_channels * positions * fan_in  # one convolution of the batch
        biases = batch * mixing(m) * m.out_channels if m.bias is not None else 0  # (B, ., .) @ (., Co)
        return batch * mixing(m) * m.out_channels * fan_in + biases + convolutions(m) * conv

    return macs


# Elements of the tensors one forward call builds beyond its input and output, from the call's shapes (x the
# input's, P output positions): what repro.models.moe_conv_choice bounds before it times a path.
def _kernels(m: MoEConv2d, x: tuple[int, ...], positions: int) -> int:
    return x[0] * m.weight[0].numel()  # the per-sample kernels (B, W)


def _routed_copies(m: MoEConv2d, x: tuple[int, ...], positions: int) -> int:
    return m.top_k * (math.prod(x) + x[0] * m.out_channels * positions)  # B*K inputs gathered, B*K outputs


def _memory_mixed(m, x, positions):
    return (m.top_k + 1) * _kernels(m, x, positions)  # the K banks gathered per sample, then mixed


def _memory_unfolded(m, x, positions):  # the kernels and the im2col copy (B, Ci*kh*kw, P)
    return _kernels(m, x, positions) + x[0] * m.in_channels * math.prod(m.kernel_size) * positions


@dataclass(frozen=True)
class ConvPath:
    name: str
    run: Callable[[MoEConv2d, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]  # (m, x, g, top_i) -> y
    macs: Callable[[MoEConv2d, int, int], int]  # (m, batch, positions) -> multiply-adds
    memory: Callable[[MoEConv2d, tuple[int, ...], int], int]  # (m, input shape, positions) -> working elements
    static_shapes: bool  # every tensor's shape is known from x's alone (no recompilation under torch.compile)


_K, _E, _ONE, _NONE = (lambda m: m.top_k), (lambda m: m.num_experts), (lambda m: 1), (lambda m: 0)
PATHS: dict[str, ConvPath] = {
    p.name: p
    for p in (
        ConvPath("mixed", mixed, _macs(_K, _ONE), _memory_mixed, True),
        ConvPath("gate-mm", gate_mm, _macs(_E, _ONE), _kernels, True),
        ConvPath("unfolded", unfolded, _macs(_E, _ONE), _memory_unfolded, True),
        ConvPath("per-expert", per_expert, _macs(_NONE, _K), _routed_copies, False),
        ConvPath("sorted", sorted_experts, _macs(_NONE, _K), _routed_copies, False),
    )
}
