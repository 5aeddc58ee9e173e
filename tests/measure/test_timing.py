"""The timing harness: operator counts (golden and against E), timing statistics, the compile fallback."""

import torch

from repro.measure.timing import compiled_or_eager, count_ops, cpu_threads, time_call
from repro.measure.latency import LatencySettings, head_call
from repro.models import HEADS

CPU = torch.device("cpu")


def _ops(name: str, batch: int = 256, **params):
    torch.manual_seed(0)
    head = HEADS.get(name).builder(32, 10, **params).eval()
    return count_ops(head_call(head, 32, batch, CPU), CPU)


def test_dense_head_golden_operator_count():
    # three addmm and two relu; views (t) and evaluation-mode dropout launch nothing
    assert _ops("dense", hidden=(16, 8)).by_name == {"addmm": 3, "relu": 2}
    assert _ops("dense", hidden=()).ops == 1
    assert _ops("dense").host_syncs == 0


def test_loop_operator_calls_grow_with_experts_batched_do_not():
    loop = {e: _ops("sparse_moe", num_experts=e, expert_hidden=16, dispatch="loop") for e in (2, 4, 8, 16)}
    batched = {e: _ops("sparse_moe", num_experts=e, expert_hidden=16, dispatch="batched") for e in (2, 4, 8, 16)}
    steps = [(loop[b].ops - loop[a].ops) / (b - a) for a, b in ((2, 4), (4, 8), (8, 16))]
    assert steps[0] == steps[1] == steps[2] >= 4  # a fixed operator sequence per expert
    assert {e: c.host_syncs for e, c in loop.items()} == {2: 2, 4: 4, 8: 8, 16: 16}  # one nonzero per expert
    assert len({c.ops for c in batched.values()}) == 1 and all(c.host_syncs == 0 for c in batched.values())
    assert loop[8].by_name["addmm"] == 3 * 8 and batched[8].by_name["bmm"] == 3


def test_time_call_statistics_are_ordered_and_respect_the_repetition_bounds():
    calls = []
    s = LatencySettings(warmup=2, min_reps=4, max_reps=6, budget_s=0.0)
    t = time_call(lambda: calls.append(sum(range(1000 * (len(calls) % 3 + 1)))), CPU, s)
    assert t.reps == 4 and len(calls) == 2 + 4
    assert t.min_ms <= t.p25_ms <= t.median_ms <= t.p75_ms
    many = time_call(lambda: None, CPU, LatencySettings(warmup=0, min_reps=1, max_reps=7, budget_s=60.0))
    assert many.reps == 7


def test_compiled_or_eager_falls_back_to_the_module():
    head = HEADS.get("dense").builder(4, 2, hidden=()).eval()

    def fails_when_compiled(m):
        if m is not head:
            raise RuntimeError("backend unavailable\nsecond line")

    module, why = compiled_or_eager(head, fails_when_compiled)
    assert module is head and why == "RuntimeError: backend unavailable second line"
    module, why = compiled_or_eager(head, lambda m: None)
    assert module is not head and why == ""


def test_cpu_threads_pins_and_restores_and_leaves_other_devices_alone(two_threads):
    before = torch.get_num_threads()
    with cpu_threads(CPU, 1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with cpu_threads(CPU, 0), cpu_threads(torch.device("cuda"), 1):  # 0: keep torch's setting; not a CPU: untouched
        assert torch.get_num_threads() == before
