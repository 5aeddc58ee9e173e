"""Which device a command runs on, and how results name it. Torch is imported inside the functions,
so command-line help and reports can import this module without it.

`resolve_device` turns a --device option into a torch device string, refusing one this machine
lacks; `device_type` and `device_label` are what provenance and the latency tables record.
"""

from __future__ import annotations

import platform
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


class DeviceError(RuntimeError):
    """A --device this machine does not have, or torch does not know."""


def _present(kind: str) -> int:
    """How many devices of a torch device type this machine has (0 when torch has no runtime for it)."""
    import torch

    if kind == "cpu":
        return 1
    runtime = getattr(torch, kind, None)
    if runtime is None or not callable(getattr(runtime, "is_available", None)) or not runtime.is_available():
        return 0
    count = getattr(runtime, "device_count", None)
    return int(count()) if callable(count) else 1


def gpu_driver_present() -> bool:
    """Whether this machine has anything a CUDA or ROCm build of torch could use: an NVIDIA driver or device node,
    or AMD's kernel driver. Without one, 'auto' is the CPU without asking torch, whose import alone is most
    of a command's start-up (a reused `repro verify-all` imports it for nothing else)."""
    return Path("/proc/driver/nvidia").exists() or Path("/dev/kfd").exists() or any(Path("/dev").glob("nvidia*"))


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' if torch sees a GPU, else 'cpu'; any other string torch parses ('cpu', 'cuda',
    'cuda:1', ...) is returned normalised if this machine has that device, else DeviceError naming it."""
    if device == "auto" and not gpu_driver_present():
        return "cpu"
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):  # torch's message lists every device type it was built to know
        hint = " (did you mean 'cuda'?)" if device.strip().lower().startswith("gpu") else ""
        raise DeviceError(
            f"--device {device!r} is not a device torch knows; expected auto, cpu, cuda or cuda:N "
            f"(mps or xpu where torch has them){hint}"
        ) from None
    count = _present(dev.type)
    if count == 0:
        raise DeviceError(
            f"--device {device!r} was asked for, but torch sees no {dev.type} device on this machine; "
            "use --device cpu or auto"
        )
    if dev.index is not None and dev.index >= count:
        raise DeviceError(
            f"--device {device!r} was asked for, but this machine has {count} {dev.type} device(s) "
            f"({dev.type}:0 to {dev.type}:{count - 1})"
        )
    return str(dev)


def device_type(device: Any) -> str:
    """'cuda', 'cpu', ...: the type of a device string or torch.device."""
    return str(device).split(":")[0]


def device_label(device: Any, threads: int | None = None) -> str:
    """How results name the hardware: 'cuda: <GPU name>' or 'cpu: <processor>, N intra-op thread(s)'.

    threads: the intra-op threads the measurement ran on; None or <= 0 means torch's current setting.
    """
    if device_type(device) == "cuda":
        import torch

        if torch.cuda.is_available():
            return f"cuda: {torch.cuda.get_device_name(torch.device(device))}"
    if threads is None or threads <= 0:
        import torch

        threads = torch.get_num_threads()
    n = threads
    return f"cpu: {platform.processor() or platform.machine()}, {n} intra-op thread(s)"


@contextmanager
def cpu_threads(device: Any, threads: int) -> Iterator[None]:
    """Run the block on `threads` CPU intra-op threads; threads <= 0 or a non-CPU device keeps torch's setting.

    The one thread-pinning helper: latency timings, batch preparation and batch-1 FLOP counts all use
    it (on a busy host a split op waits for a descheduled peer thread; docs/measurements.md).
    """
    import torch

    if torch.device(device).type != "cpu" or threads <= 0:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
