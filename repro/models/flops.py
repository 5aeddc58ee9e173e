"""FLOP accounting: analytical formulas checked against fvcore and torch, and rho.

Convention (the paper's Section 4.1 "FLOPs are computed analytically"): a
multiply-add counts as one FLOP, as fvcore counts. torch's FlopCounterMode counts
two per multiply-add, so its numbers are halved before comparison. Only
convolutions and matrix products count in the primary convention; a second
convention adds normalisation, activation and pooling (one per element,
two for an affine BatchNorm) to show how sensitive rho is.

Counts are per sample: one image at the paper's resolution, in evaluation mode,
so an MoE counts the experts a sample actually executes (Section 3.1: rho =
FLOPs_routed / FLOPs_total).

The three counters check one traced batch-1 forward. A head whose per-sample cost is not
that dispatch names its own figure, `expected_macs(batch)`, and the report moves the head
to it (`FlopReport.mean_shift`): ReLU routing at its mean experts a sample, and a
batch-axis head (`batch_axis`: Expert Choice, Soft MoE, whose experts run on rows chosen
or mixed across the batch) per image in a batch of `batch`, the size it trains with.

The second convention's element counts: repro.models.flop_elementwise; fvcore's and torch's
counters, and the ops fvcore is told perform no multiply-add: repro.models.flop_counters.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from repro.core.devices import cpu_threads
from repro.models.base import positive_int
from repro.models.classifier import Classifier
from repro.models.flop_counters import fvcore_counts, own_unsupported, torch_counts
from repro.models.flop_elementwise import ExtraOps
from repro.models.zero_banks import built_for_counting

# ---------------------------------------------------------------------------
# Analytical formulas, written from layer shapes. Each gives the multiply-adds a
# module performs itself (not in its children) for one recorded call.
Shapes = tuple[list[torch.Size], torch.Size]  # (input shapes, output shape)


@runtime_checkable
class CountsOwnMacs(Protocol):
    """A module of this package that computes outside its children (a router's cosine term, a kernel mixture):
    it carries its own formula."""

    def own_macs(self, shapes: Shapes) -> int: ...


@runtime_checkable
class CountedBuffers(Protocol):
    """A module whose count reads one of its buffers (a ReLU-routed head's mean experts a sample)."""

    def reset_counted_buffers(self) -> None: ...


def plain_values(module: nn.Module) -> nn.Module:
    """Give a model built on the meta device (then `to_empty`) plain values: parameters 0, floating buffers 1
    (running variances of 1: no division by zero), others 0. A count depends on shapes, never on weights; a
    module whose count reads a buffer (a ReLU-routed head's mean experts a sample) sets it again itself
    (`reset_counted_buffers`)."""
    with torch.no_grad():
        for p in module.parameters():
            p.zero_()
        for b in module.buffers():
            b.fill_(1 if b.is_floating_point() else 0)
    for m in module.modules():
        if isinstance(m, CountedBuffers):
            m.reset_counted_buffers()
    return module


def conv2d_macs(m: nn.Conv2d, shapes: Shapes) -> int:
    _, out = shapes
    return math.prod(out) * (m.in_channels // m.groups) * math.prod(m.kernel_size)


def linear_macs(m: nn.Linear, shapes: Shapes) -> int:
    _, out = shapes
    return math.prod(out) * m.in_features  # (N, out) rows, each in_features multiply-adds


# Each formula takes a module of its key's class; modules of this package carry their own (CountsOwnMacs).
OWN_MACS: dict[type[nn.Module], Callable[[Any, Shapes], int]] = {
    nn.Conv2d: conv2d_macs,
    nn.Linear: linear_macs,
}


# ---------------------------------------------------------------------------
@dataclass
class ModuleCount:
    name: str  # module path; "" is the whole model
    kind: str
    analytic: int  # multiply-adds
    fvcore: int  # multiply-adds
    torch: int  # FLOPs, two per multiply-add
    path: str = ""  # the exact path counted, for a module that has several (MoEConv2d: repro.models.moe_conv_paths)

    @property
    def agrees(self) -> bool:
        return self.analytic == self.fvcore and 2 * self.analytic == self.torch


@dataclass
class FlopReport:
    """Per-sample counts of one model; MACs throughout (multiply-add = 1).

    input_shape: the (C, H, W) counted. modules: each module's count three ways (analytic, fvcore, torch), by
    name. routed_modules: the modules whose compute is routed (FLOPs_routed). total: the model's MACs an image;
    backbone: the backbone's; head: the head's (at its expected_macs, see mean_shift); routed: the routed modules'.
    total_all_ops: total with the second convention's element ops (normalisation, activation, pooling) added;
    routed_all_ops: routed, likewise. problems: where the three counters disagree, each naming the module and
    what to add; empty when they agree (ok). mean_shift: MACs added to the traced count to report the head at its
    expected_macs. batch: the batch a batch-axis head's per-image figure is at; None: no such head.
    rho: routed / total, the paper's rho; rho_all_ops: the same under the second convention; head_share:
    head / total."""

    input_shape: tuple[int, ...]
    modules: list[ModuleCount]
    routed_modules: list[str]
    total: int
    backbone: int
    head: int
    routed: int
    total_all_ops: int
    routed_all_ops: int
    problems: list[str] = field(default_factory=list)
    mean_shift: int = 0  # MACs added to the traced count to report the head at its expected_macs
    batch: int | None = None  # the batch a batch-axis head's per-image figure is at; None: no such head

    @property
    def rho(self) -> float:
        return self.routed / self.total

    @property
    def rho_all_ops(self) -> float:
        return self.routed_all_ops / self.total_all_ops

    @property
    def head_share(self) -> float:
        return self.head / self.total

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict:
        return {
            "total_macs": self.total,
            "backbone_macs": self.backbone,
            "head_macs": self.head,
            "routed_macs": self.routed,
            "rho": self.rho,
            "head_share": self.head_share,
            "total_all_ops": self.total_all_ops,
            "routed_all_ops": self.routed_all_ops,
            "rho_all_ops": self.rho_all_ops,
            "routed_modules": self.routed_modules,
            "checked_modules": len(self.modules),
            "problems": self.problems,
            "per_image_batch": self.batch,
        }


def _record_shapes(
    model: nn.Module, x: torch.Tensor, also: contextlib.AbstractContextManager | None = None
) -> tuple[dict[str, list[Shapes]], dict[str, int]]:
    """Each module's call shapes, and the second convention's element counts it issued itself; `also` (torch's
    counter) observes the same forward pass."""
    calls: dict[str, list[Shapes]] = defaultdict(list)
    extra = ExtraOps()
    handles = []
    for name, module in model.named_modules():

        def enter(mod, inputs, name=name):
            extra.stack.append(name)

        def leave(mod, inputs, output, name=name):
            extra.stack.pop()
            ins = [i.shape for i in inputs if isinstance(i, torch.Tensor)]
            calls[name].append((ins, output.shape if isinstance(output, torch.Tensor) else torch.Size()))

        handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave)]
    try:
        with torch.no_grad(), extra, also or contextlib.nullcontext():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return calls, dict(extra.counts)


def own_macs_of(module: nn.Module, calls: list[Shapes]) -> int:
    """A module's multiply-adds outside its children over its calls: its own formula (CountsOwnMacs), else the
    rule of the nearest class in its MRO that OWN_MACS has, else 0."""
    if isinstance(module, CountsOwnMacs):
        return sum(module.own_macs(c) for c in calls)
    for cls in type(module).__mro__:
        if cls in OWN_MACS:
            return sum(OWN_MACS[cls](module, c) for c in calls)
    return 0


def _formula(module: nn.Module) -> str:
    """Where the analytic count of `module` comes from, for a disagreement's message."""
    kind = type(module).__name__
    if isinstance(module, CountsOwnMacs):
        return f"its formula is {kind}.own_macs"
    rule = next((cls for cls in type(module).__mro__ if cls in OWN_MACS), None)
    if rule is not None:
        return f"its formula is OWN_MACS[{rule.__name__}] (repro.models.flops)"
    return (
        f"{kind} has no formula of its own (counted 0): a module that computes outside its children carries "
        "own_macs(shapes), repro.models.flops.CountsOwnMacs"
    )


def _rollup(own: dict[str, int]) -> dict[str, int]:
    """Totals per module path: each module's own count added to all its ancestors."""
    total: dict[str, int] = defaultdict(int)
    for name, n in own.items():
        total[name] += n
        parts = name.split(".") if name else []
        for i in range(len(parts)):
            total[".".join(parts[:i])] += n
    return total


@contextlib.contextmanager
def _in_eval_mode(model: nn.Module):
    """The model in evaluation mode while it is counted, each module's own mode given back after: counting a model
    in the middle of its training leaves it training (its dropout, capacity and schedules as they were)."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, training in modes:
            m.training = training


def count_flops(model: Classifier, input_shape: tuple[int, ...], batch: int = 1) -> FlopReport:
    """Count one sample's FLOPs three ways and check they agree module by module, in evaluation mode (the model's
    modes are given back after); a batch-axis head is then reported per image in a batch of `batch`. Inside
    counting(), a module with several exact paths runs its fewest-multiply-add one (repro.models.zero_banks):
    counts are the machine's own business nowhere.

    model: a Classifier(backbone, head); input_shape: one image's (C, H, W), no batch axis; batch: the batch the
    model trains with (Expert Choice's and Soft MoE's cost per image depends on it). Returns a FlopReport: total,
    backbone, head and routed multiply-adds per image, rho, each module's three counts, and `problems`."""
    _require_classifier(model)
    _require_shapes(input_shape, batch)
    # batch-1 passes: more threads only spin against each other
    with cpu_threads("cpu", 1), built_for_counting(), _in_eval_mode(model):
        return _count_flops(model, input_shape, batch)


def _require_classifier(model: nn.Module) -> None:
    """rho and the head's share read the model's two parts: another model is refused, saying how to wrap it."""
    if not isinstance(model, Classifier):
        raise TypeError(
            f"FLOPs are counted on a Classifier (a backbone and a head), got {type(model).__name__}: wrap yours as "
            "repro.models.classifier.Classifier(backbone, head), the backbone's output the head's input"
        )


def _require_shapes(input_shape: object, batch: object) -> None:
    """A (H, W) or a batched shape failed in the backbone's first layer, naming neither; batch 0 divided by zero."""
    problems = []
    if not (isinstance(input_shape, (tuple, list, torch.Size)) and len(input_shape) == 3):
        problems.append(f"input_shape must be one image's (C, H, W), positive ints, got {input_shape!r}")
    elif not all(positive_int(n) for n in input_shape):
        problems.append(f"input_shape must be one image's (C, H, W), positive ints, got {tuple(input_shape)!r}")
    if not positive_int(batch):
        problems.append(f"batch must be a positive int (the batch the model trains with), got {batch!r}")
    if problems:
        raise ValueError("count_flops: " + "; ".join(problems))


def _analytic(
    model: Classifier, x: torch.Tensor, also: contextlib.AbstractContextManager | None = None
) -> tuple[dict, dict[str, int], dict[str, int]]:
    """(each module's calls, its analytic MACs rolled up, the same with the second convention's ops)."""
    calls, extra_own = _record_shapes(model, x, also)
    modules = dict(model.named_modules())
    own = {n: own_macs_of(modules[n], c) for n, c in calls.items()}
    extra = {n: extra_own.get(n, 0) for n in calls}
    return calls, _rollup(own), _rollup({n: own[n] + extra[n] for n in own})


def expected_head_macs(head: nn.Module, batch: int) -> int | None:
    """The MACs a head is reported at per image where its traced batch-1 count is not that figure, else None: a
    head whose experts per sample depend on the data (ReLU routing) at its mean, a batch-axis head at an image of a
    batch of `batch`, not a batch of one (`expected_macs`)."""
    expected = getattr(head, "expected_macs", None)
    return expected(batch) if expected is not None else None


def _report(
    model: Classifier,
    input_shape: tuple[int, ...],
    analytic: dict[str, int],
    analytic_all: dict[str, int],
    rows: list[ModuleCount],
    problems: list[str],
    batch: int,
) -> FlopReport:
    routed_names = model.routed_module_names()
    # The three counters checked the executed batch-1 dispatch itself; the head is reported at its own figure
    expected = expected_head_macs(model.head, batch)
    shift = expected - analytic.get("head", 0) if expected is not None else 0
    routed_shift = shift if "head" in routed_names else 0
    return FlopReport(
        input_shape=tuple(input_shape),
        modules=rows,
        routed_modules=routed_names,
        total=analytic[""] + shift,
        backbone=analytic.get("backbone", 0),
        head=analytic.get("head", 0) + shift,
        routed=sum(analytic.get(n, 0) for n in routed_names) + routed_shift,
        total_all_ops=analytic_all[""] + shift,
        routed_all_ops=sum(analytic_all.get(n, 0) for n in routed_names) + routed_shift,
        mean_shift=shift,
        batch=batch if getattr(model.head, "batch_axis", False) else None,
        problems=problems,
    )


def count_analytic(model: Classifier, input_shape: tuple[int, ...], batch: int = 1) -> FlopReport:
    """The analytic column alone (no fvcore, no torch counter): the same totals count_flops reports, from one
    forward pass. For models counted only to compare with ones count_flops checked (the readings table)."""
    _require_classifier(model)
    with cpu_threads("cpu", 1), built_for_counting(), _in_eval_mode(model):
        _, analytic, analytic_all = _analytic(model, torch.randn(1, *input_shape))
        return _report(model, input_shape, analytic, analytic_all, [], [], batch)


def _count_flops(model: Classifier, input_shape: tuple[int, ...], batch: int) -> FlopReport:
    x = torch.randn(1, *input_shape)
    # The analytic column and torch's counter observe one forward pass (each counts it its own way: module
    # shapes and formulas, aten ops); fvcore traces its own.
    counter = FlopCounterMode(display=False)
    calls, analytic, analytic_all = _analytic(model, x, counter)
    modules = dict(model.named_modules())
    fv, unsupported = fvcore_counts(model, x)
    tc = torch_counts(model, counter)

    problems: list[str] = []
    rows: list[ModuleCount] = []
    for name, module in model.named_modules():
        if name not in calls:  # containers such as ModuleList are never called themselves
            continue
        a, f, t = analytic.get(name, 0), fv.get(name, 0), tc.get(name, 0)
        if a == f == t == 0:
            continue
        ins, ran = calls[name][-1][0], getattr(module, "paths_ran", {})  # the counted sample's call
        count = ModuleCount(name, type(module).__name__, a, f, t, ran.get(tuple(ins[0]), "") if ins and ran else "")
        rows.append(count)
    disagree = [r.name for r in rows if not r.agrees]
    for r in rows:
        if not r.agrees:
            # The innermost module that disagrees is the one whose formula to look at; its ancestors only add it up.
            inner = not any(o != r.name and (r.name == "" or o.startswith(r.name + ".")) for o in disagree)
            problems.append(
                f"module '{r.name or '<model>'}' ({r.kind}): analytic {r.analytic:,} vs fvcore {r.fvcore:,} vs "
                f"torch/2 {r.torch / 2:,.1f} MACs" + (f"; {_formula(modules[r.name])}" if inner else "")
            )
    for name, ops in own_unsupported(model, unsupported).items():
        kind = type(modules[name]).__name__
        for op, n in sorted(ops.items()):
            problems.append(
                f"module '{name or '<model>'}' ({kind}): fvcore cannot count op {op} ({n} call(s)); an op that "
                "performs no multiply-add is listed in repro.models.flop_counters.NON_MAC_OPS"
            )
    problems = sorted(set(problems))
    return _report(model, input_shape, analytic, analytic_all, rows, problems, batch)
