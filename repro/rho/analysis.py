"""One model's rho under each placement asked for, every count checked three ways (repro.models.flops).

    head_only  the paper's sparse MoE head in place of the classifier (E, h, k)
    as_built   a registry backbone that already routes (resnet18_moeconv): rho as it is built
    routed     the layers that layer patterns name, as MoE banks (E, k)
    target     the fewest layers, deepest first, whose routing reaches the target rho

Each result is counted on the network built with that placement (count_flops: analytic =
fvcore = torch/2 for every module), and a target placement's rho as predicted from per-layer
costs must equal its count, so the search and the counter cannot drift apart unnoticed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from repro.core.devices import cpu_threads
from repro.models.flops import FlopReport, count_flops
from repro.rho.inputs import Pattern
from repro.rho.networks import Network, dense_model, head_only_model, probe, record_calls
from repro.rho.placement import Layer, check_memory, match_layers, routable_layers, route, subtree_macs
from repro.rho.paper_settings import Reference, Zone
from repro.rho.target import Candidate, minimal_placement

Kind = Literal["head_only", "as_built", "routed", "target"]


@dataclass(frozen=True)
class Result:
    kind: Kind
    rho: float
    routed_macs: int
    total_macs: int
    experts: int | None  # None: as built
    top_k: int | None
    zone: Zone
    modules_checked: int
    problems: tuple[str, ...]
    hidden: int | None = None  # the head's expert width h
    layers: tuple[str, ...] = ()  # routed layers (routed, target)
    target: float | None = None
    reached: bool | None = None  # target: whether any placement reaches it

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class Analysis:
    network: Network
    dense_macs: int | None = None  # the network as given (counted when a placement needs it)
    results: list[Result] = field(default_factory=list)
    layers: list[Layer] = field(default_factory=list)  # routable layers (when asked for or searched)

    @property
    def problems(self) -> list[str]:
        return [p for r in self.results for p in r.problems]

    def as_dict(self) -> dict:
        t = self.network
        return {
            "model": t.spec.name,
            "source": t.spec.source,
            "family": t.spec.family,
            "input_shape": list(t.input_shape),
            "classes": t.classes,
            "dataset": t.setting.dataset,
            "setting_row": t.setting.source_row,
            "backbone_params": t.setting.backbone_params,
            "dense_macs": self.dense_macs,
            "results": [r.as_dict() for r in self.results],
            "layers": [layer.__dict__ for layer in self.layers],
            "ok": not self.problems,
        }


@dataclass(frozen=True)
class Request:
    head: dict  # num_experts, expert_hidden, top_k
    route_experts: int
    route_top_k: int
    patterns: tuple[Pattern, ...] = ()
    target: float | None = None
    list_layers: bool = False

    @property
    def needs_layers(self) -> bool:
        return bool(self.patterns) or self.target is not None or self.list_layers


def _result(
    kind: Kind, report: FlopReport, reference: Reference, experts: int | None, top_k: int | None, **extra
) -> Result:
    return Result(
        kind,
        report.rho,
        report.routed,
        report.total,
        experts,
        top_k,
        reference.zone(report.rho),
        len(report.modules),
        tuple(f"{kind}: {p}" for p in report.problems),
        **extra,
    )


def _count(model, network: Network) -> FlopReport:
    return count_flops(model, network.input_shape)


def analyse(network: Network, request: Request, reference: Reference) -> Analysis:
    """Count the head-only MoE and every placement the request asks for; refusals (input size, patterns) come
    before any count."""
    with cpu_threads("cpu", 1):  # batch-1 passes: more threads only contend on a shared host
        seen = probe(network)  # an input the network cannot take is refused here, naming its minimum
        out = Analysis(network)
        plan = _plan(out, request) if request.needs_layers or network.spec.source == "registry" else None
        h = request.head
        report = _count(head_only_model(network, request.head, seen), network)
        out.results.append(
            _result("head_only", report, reference, h["num_experts"], h["top_k"], hidden=h["expert_hidden"])
        )
        if plan is not None:
            _placements(out, plan, request, reference)
    return out


@dataclass(frozen=True)
class _Plan:
    total: int  # T: the network as given
    already: int  # R0: what it routes as built
    named: list[str]  # the layers the patterns name


def _plan(out: Analysis, request: Request) -> _Plan:
    """The network as given, costed layer by layer from one forward pass; the patterns matched (or refused)."""
    dense = dense_model(out.network)
    calls = record_calls(dense, out.network.input_shape)
    out.dense_macs = subtree_macs(dense, calls)
    already = sum(subtree_macs(dense, calls, n) for n in dense.routed_module_names())
    named = match_layers(dense, calls, list(request.patterns), out.network.spec.name) if request.patterns else []
    check_memory(dense, named, request.route_experts)
    if request.needs_layers:
        out.layers = routable_layers(dense, calls, request.route_experts, request.route_top_k)
    return _Plan(out.dense_macs, already, named)


def _placements(out: Analysis, plan: _Plan, request: Request, reference: Reference) -> None:
    network, e, k = out.network, request.route_experts, request.route_top_k
    if plan.already:  # the backbone routes as built
        out.results.append(_result("as_built", _count(dense_model(network), network), reference, None, None))
    if plan.named:
        routed = route(dense_model(network), plan.named, e, k)
        out.results.append(_result("routed", _count(routed, network), reference, e, k, layers=tuple(plan.named)))
    if request.target is not None:
        pool = [layer for layer in out.layers if not plan.named or layer.name in plan.named]
        placement = minimal_placement(
            [Candidate(x.name, x.order, x.dense, x.routed) for x in pool], plan.total, plan.already, request.target
        )
        report = _count(route(dense_model(network), list(placement.layers), e, k), network)
        problems = []
        if abs(report.rho - placement.rho) > 1e-12:
            problems.append(f"predicted rho {placement.rho:.6%} but counted {report.rho:.6%}")
        result = _result(
            "target", report, reference, e, k, layers=placement.layers, target=request.target, reached=placement.reached
        )
        out.results.append(replace(result, problems=result.problems + tuple(problems)))
