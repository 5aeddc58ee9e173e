"""The two counters FLOP accounting checks its analytic count against (repro.models.flops): fvcore's, told which
ops perform no multiply-add (NON_MAC_OPS), and torch's FlopCounterMode, which counts two FLOPs per multiply-add.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# fvcore ops that are neither convolution nor matrix product: zero in the primary
# convention, declared here so that any op not listed is reported, never ignored.
NON_MAC_OPS = [
    "aten::add",
    "aten::add_",
    "aten::mul",
    "aten::mul_",
    "aten::div",
    "aten::sub",
    "aten::rsub",
    "aten::max_pool2d",
    "aten::avg_pool2d",
    "aten::adaptive_avg_pool2d",
    "aten::batch_norm",
    "aten::hardtanh",
    "aten::hardtanh_",
    "aten::relu",
    "aten::relu_",
    "aten::softmax",
    "aten::log_softmax",
    "aten::topk",
    "aten::sort",
    "aten::argsort",
    "aten::argmax",
    "aten::mean",
    "aten::sum",
    "aten::norm",
    "aten::linalg_vector_norm",
    "aten::clamp_min",
    "aten::clamp",
    "aten::expand_as",
    "aten::index_add_",
    "aten::index_add",
    "aten::scatter",
    "aten::scatter_",
    "aten::scatter_add_",
    "aten::ones_like",
    "aten::numel",
    "aten::exp",
    "aten::log",
    "aten::neg",
    "aten::sigmoid",
    "aten::where",
    "aten::index_select",
    "aten::masked_select",
    "aten::cumsum",
    "aten::lt",
    "aten::le",
    "aten::ne",
    "aten::sqrt",
    "aten::pow",
    "aten::abs",
    "aten::repeat",
    "aten::new_ones",
    "aten::fill_",
    "aten::zero_",
    "aten::bincount",
    "aten::one_hot",
    "aten::logical_and",
    "aten::logical_not",
    "aten::any",
    "aten::all",
    "aten::min",
    "aten::amax",
    "aten::detach_",
    "aten::unflatten",
    "aten::scalar_tensor",
    "aten::item",
    "aten::dim",
    "aten::ceil",
    "aten::alias",
    "aten::lift_fresh",
    "aten::dropout_",
    "aten::feature_dropout",
    "aten::_set_item",
    "aten::new_tensor",
    "aten::tensor",
    "aten::masked_fill_",
    "aten::index_put",
    "aten::nonzero_numpy",
    "aten::scatter_add",
    "aten::clamp_max",
    # ReLU routing and NormSiLU (repro.models.relu_routed): comparisons, fills, normalisation, SiLU
    "aten::gt",
    "aten::full_like",
    "aten::layer_norm",
    "aten::silu",
    "aten::silu_",
    # torchvision CNNs counted by `repro rho`: ConvNeXt's GELU, MobileNet-V3's hard swish and hard sigmoid
    "aten::gelu",
    "aten::hardswish",
    "aten::hardswish_",
    "aten::hardsigmoid",
    "aten::hardsigmoid_",
]


def _zero(inputs, outputs) -> int:
    return 0


def fvcore_counts(model: nn.Module, x: torch.Tensor) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """fvcore's MACs by module path, from a trace of its own, and the ops it could not count under each path."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch deprecates the jit tracing fvcore relies on
        from fvcore.nn import FlopCountAnalysis

    fa = FlopCountAnalysis(model, x)
    fa.set_op_handle(**{op: _zero for op in NON_MAC_OPS})
    fa.unsupported_ops_warnings(False).uncalled_modules_warnings(False).tracer_warnings("none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_module = {k: int(v) for k, v in fa.by_module().items()}
        unsupported = {name: dict(fa.unsupported_ops(name)) for name, _ in model.named_modules()}
    return by_module, unsupported


def torch_counts(model: nn.Module, counter: FlopCounterMode) -> dict[str, int]:
    """torch's counts by module path, from a counter that observed one forward pass of `model`."""
    root = type(model).__name__
    out: dict[str, int] = {}
    for name, ops in counter.get_flop_counts().items():
        if name == "Global":
            continue
        key = "" if name == root else name[len(root) + 1 :]
        out[key] = int(sum(ops.values()))
    return out


def own_unsupported(model: nn.Module, unsupported: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Unsupported ops attributed to the innermost module that issues them."""
    own = {}
    for name, module in model.named_modules():
        ops = dict(unsupported.get(name, {}))
        for child, _ in module.named_children():
            for op, n in unsupported.get(f"{name}.{child}" if name else child, {}).items():
                ops[op] = ops.get(op, 0) - n
        ops = {op: n for op, n in ops.items() if n > 0}
        if ops:
            own[name] = ops
    return own
