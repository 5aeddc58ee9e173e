"""The fewest layers whose routing reaches a target rho, deepest first (pure Python, exact).

Routing a set S of layers turns each layer's dense multiply-adds d_i into its bank's r_i
(router included), so with T the network's total and R0 what it already routes,

    rho(S) = (R0 + sum_S r_i) / (T + sum_S (r_i - d_i)).

rho(S) >= t  <=>  sum_S w_i >= t T - R0,  with  w_i = (1 - t) r_i + t d_i  > 0,

a sum of per-layer weights: the fewest layers are the n with the largest w_i. Among the
placements of that size that reach t, the deepest is chosen (compared deepest layer first):
walking from the deepest layer up, a layer is taken when the layers shallower than it can
still complete the placement. With t = p/q exactly (the float as given), q w_i and
q (t T - R0) are integers, so no rounding decides a comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Candidate:
    name: str
    order: int  # larger is deeper
    dense: int  # d_i
    routed: int  # r_i


@dataclass(frozen=True)
class Placement:
    layers: tuple[str, ...]  # shallowest first
    rho: float  # as the costs predict it; the caller counts the built network to check it
    reached: bool  # False: even routing every candidate stays below the target (layers: all of them)


def rho_of(chosen: list[Candidate], total: int, routed: int) -> Fraction:
    return Fraction(routed + sum(c.routed for c in chosen), total + sum(c.routed - c.dense for c in chosen))


def _placement(chosen: list[Candidate], total: int, routed: int, reached: bool) -> Placement:
    chosen = sorted(chosen, key=lambda c: c.order)
    return Placement(tuple(c.name for c in chosen), float(rho_of(chosen, total, routed)), reached)


def minimal_placement(candidates: list[Candidate], total: int, routed: int, target: float) -> Placement:
    """The fewest candidates reaching `target`, deepest first among equals; `total`, `routed`: T and R0."""
    t = Fraction(target)
    p, q = t.numerator, t.denominator
    need = p * total - q * routed  # q (t T - R0)
    weight = {c.name: (q - p) * c.routed + p * c.dense for c in candidates}  # q w_i
    if need <= 0:
        return _placement([], total, routed, True)
    by_weight = sorted(candidates, key=lambda c: weight[c.name], reverse=True)
    n, acc = 0, 0
    while n < len(by_weight) and acc < need:
        acc += weight[by_weight[n].name]
        n += 1
    if acc < need:
        return _placement(candidates, total, routed, False)
    deepest_first = sorted(candidates, key=lambda c: c.order, reverse=True)
    chosen: list[Candidate] = []
    for i, c in enumerate(deepest_first):
        slots = n - len(chosen) - 1
        if slots < 0:
            break
        rest = sorted((weight[x.name] for x in deepest_first[i + 1 :]), reverse=True)[:slots]
        if weight[c.name] + sum(rest) >= need - sum(weight[x.name] for x in chosen):
            chosen.append(c)
    return _placement(chosen, total, routed, True)
