"""--target: the fewest layers reaching a rho, deepest first, against a brute-force search over every subset."""

import itertools
import random
from fractions import Fraction

import pytest

from repro.rho.target import Candidate, minimal_placement, rho_of


def brute_force(candidates, total, routed, target):
    """Every subset, smallest first; among the smallest that reach the target, the deepest (deepest layer first)."""
    for n in range(len(candidates) + 1):
        feasible = [
            s for s in itertools.combinations(candidates, n) if rho_of(list(s), total, routed) >= Fraction(target)
        ]
        if feasible:
            best = max(feasible, key=lambda s: sorted((c.order for c in s), reverse=True))
            return tuple(c.name for c in sorted(best, key=lambda c: c.order))
    return None


def test_golden_case_by_hand():
    # T = 1000; routing a layer turns d into r = d + 10 (router and mixing).
    layers = [
        Candidate("a", 0, 100, 110),
        Candidate("b", 1, 300, 310),
        Candidate("c", 2, 100, 110),
        Candidate("d", 3, 100, 110),
    ]
    # 10%: one 100-MAC layer gives 110 / 1010 = 10.9%; the deepest such is d.
    assert minimal_placement(layers, 1000, 0, 0.10).layers == ("d",)
    # 25%: only b reaches it alone: 310 / 1010 = 30.7%.
    assert minimal_placement(layers, 1000, 0, 0.25).layers == ("b",)
    # 35%: two layers; b with the deepest other, d: 420 / 1020 = 41.2%.
    p = minimal_placement(layers, 1000, 0, 0.35)
    assert p.layers == ("b", "d") and p.reached and p.rho == pytest.approx(420 / 1020)
    # 70%: all four give 640 / 1040 = 61.5%: not reached, every layer reported.
    p = minimal_placement(layers, 1000, 0, 0.70)
    assert not p.reached and p.layers == ("a", "b", "c", "d") and p.rho == pytest.approx(640 / 1040)
    # Already routed enough as built: no layer needed.
    assert minimal_placement(layers, 1000, 200, 0.10).layers == ()


def test_a_boundary_met_exactly_counts_as_reached():
    layers = [Candidate("a", 0, 90, 100), Candidate("b", 1, 40, 50)]
    assert minimal_placement(layers, 1000, 0, 0.1).layers == ("a", "b")  # 100 / 1010 < 10%: needs b too
    assert minimal_placement([Candidate("a", 0, 100, 100)], 1000, 0, 0.1).layers == ("a",)  # 100 / 1000 = 10% exactly


@pytest.mark.parametrize("seed", range(40))
def test_agrees_with_brute_force_on_random_networks(seed):
    rng = random.Random(seed)
    candidates = []
    for i in range(rng.randint(1, 9)):
        dense = rng.choice([50, 100, 100, 200, 400, 800])  # equal sizes make ties: the deepest must win
        candidates.append(Candidate(f"l{i}", i, dense, dense + rng.randint(1, 30)))
    total = sum(c.dense for c in candidates) + rng.randint(0, 3000)
    routed = rng.choice([0, 0, rng.randint(1, 200)])
    target = rng.choice([0.01, 0.07, 0.2, 0.38, 0.6, 0.9])
    placement = minimal_placement(candidates, total, routed, target)
    expected = brute_force(candidates, total, routed, target)
    if expected is None:
        assert not placement.reached and len(placement.layers) == len(candidates)
    else:
        assert placement.reached and placement.layers == expected
        assert placement.rho == pytest.approx(
            float(rho_of([c for c in candidates if c.name in expected], total, routed))
        )
