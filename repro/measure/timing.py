"""The one timing harness: ms per call, operator calls per call, thread pinning, compile-or-eager.

Timing runs warm-up calls, then repetitions until a count and a time budget are
met, and keeps the median and quartiles. On CUDA each call is bracketed by CUDA
events after a synchronisation; on a CPU by time.perf_counter on a fixed number
of intra-op threads (`cpu_threads`; on a shared machine a second thread waits
for descheduled peers and times noise).

Operator calls are device-independent: the non-view aten operators one call
executes (counted below autograd with a TorchDispatchMode), of which host
synchronisations (nonzero, item) are counted apart. On CUDA the profiler's
kernel launches are added.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Protocol, cast

import torch

from repro.core.devices import cpu_threads  # noqa: F401  (re-exported: the harness's thread pinning)
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

HOST_SYNC_OPS = {"nonzero", "_local_scalar_dense", "item", "masked_select", "unique", "_unique2"}
LAUNCH_EVENTS = {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"}


class Repetitions(Protocol):
    """How long `time_call` measures (repro.measure.latency.LatencySettings is one); read, never set."""

    @property
    def warmup(self) -> int: ...
    @property
    def min_reps(self) -> int: ...
    @property
    def max_reps(self) -> int: ...
    @property
    def budget_s(self) -> float: ...  # repetitions stop past this time, once min_reps are done


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- timing
@dataclass(frozen=True)
class Timing:
    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    reps: int


def time_call(fn: Callable[[], Any], device: torch.device, s: Repetitions) -> Timing:
    """Milliseconds per call of fn: warm-up, then repetitions; median and quartiles."""
    for _ in range(s.warmup):
        fn()
    synchronize(device)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < s.max_reps and (len(times) < s.min_reps or time.perf_counter() - start < s.budget_s):
        if device.type == "cuda":
            synchronize(device)
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
    q1, q2, q3 = statistics.quantiles(times, n=4, method="inclusive") if len(times) > 1 else times * 3
    return Timing(q2, q1, q3, min(times), len(times))


# --------------------------------------------------------------------------- operator counts
class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view:  # views (t, select, expand, detach) launch nothing
            self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


@dataclass(frozen=True)
class OpCount:
    ops: int  # non-view aten operators executed
    host_syncs: int  # among them, those that read device values on the host
    by_name: dict[str, int]
    kernel_launches: int | None = None  # CUDA only


def count_ops(fn: Callable[[], Any], device: torch.device) -> OpCount:
    with torch.no_grad(), _OpCounter() as counter:
        fn()
    launches = None
    if device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            synchronize(device)
        launches = sum(e.name in LAUNCH_EVENTS for e in prof.events())
    ops = dict(counter.ops.most_common())
    return OpCount(sum(ops.values()), sum(n for k, n in ops.items() if k in HOST_SYNC_OPS), ops, launches)


# --------------------------------------------------------------------------- compilation
def error_line(exc: BaseException) -> str:
    """'Type: first two non-empty lines' of an exception (dynamo puts the cause second)."""
    lines = [line for line in str(exc).splitlines() if line.strip()][:2]
    return f"{type(exc).__name__}: {' '.join(lines)}"


def compiled_or_eager(module: nn.Module, call: Callable[[nn.Module], Any]) -> tuple[nn.Module, str]:
    """torch.compile(module) if one call through it succeeds; else the module and why not."""
    compiled = cast(nn.Module, torch.compile(module))  # an OptimizedModule, typed as any callable
    try:
        call(compiled)
    except Exception as exc:  # a compiler failure times the eager module instead
        return module, error_line(exc)
    return compiled, ""
