"""How much memory a run needs before it trains, and whether the device has it.

A manifest row within the allowed ranges can still ask for more than a machine holds (num_experts = 256 with
expert_hidden = 16384 is 2.2 G head parameters: 35 GB with their gradients and Adam's two moments), and a run
that dies allocating, or is left to the OOM killer, tells nothing. So every distinct model of a table is
estimated before any run starts (repro.measure.accuracy), from its counts at the run's batch:

    state        parameters, their gradients and the optimiser's state (Adam: two moments; SGD: momentum),
                 float32, with the buffers
    activations  what the forward pass of one batch saves for the backward pass (torch's saved-tensor hooks),
                 on the meta device, so that no weight or activation is made; a head whose routing needs
                 values (a data-dependent shape) is passed over a 2-sample batch on the CPU instead, scaled
                 to the batch

and refused (MemoryRefused, one line naming the estimate and the limit) when state + activations exceed the
device's memory: on a CPU what the system and its cgroup leave available, on CUDA the device's memory. The
estimate is float32 throughout, so a bf16 run's activations are counted at twice their size; the dataset a
loader holds in memory is not counted. Estimates are cached (repro.core.cache) by model, batch and optimiser.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from repro.core.cache import cache_dir, read_json, write_json
from repro.core.settings import DEFAULT_CACHE
from repro.plan.run_config import RunConfig

FLOAT_BYTES = 4
SAMPLE_BATCH = 2  # the CPU pass's batch, where the meta device cannot run the forward (BatchNorm needs 2)
OPTIMIZER_STATES = {"adam": 2, "sgd": 1}  # tensors the optimiser keeps per parameter


class MemoryRefused(RuntimeError):
    """A run that would not fit the device's memory: refused before any run of its table starts."""


@dataclass(frozen=True)
class MemoryEstimate:
    parameters: int  # count, every parameter of the model
    state_bytes: int  # parameters, gradients, optimiser state and buffers
    activation_bytes: int | None  # saved for backward by one batch's forward pass; None: not counted (no need)
    batch_size: int

    @property
    def total_bytes(self) -> int:
        return self.state_bytes + (self.activation_bytes or 0)

    def text(self) -> str:
        state = (
            f"{gigabytes(self.state_bytes)} for {self.parameters / 1e9:.2f} G parameters with gradients and "
            "optimiser state"
        )
        if self.activation_bytes is None:
            return f"at least {gigabytes(self.state_bytes)} ({state}, before any activation)"
        return (
            f"about {gigabytes(self.total_bytes)} ({state}, {gigabytes(self.activation_bytes)} of activations "
            f"at batch {self.batch_size})"
        )


def gigabytes(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def estimate(cfg: RunConfig, room: int | None = None, cache: Path = DEFAULT_CACHE) -> MemoryEstimate:
    """The memory `cfg` needs to train (kept in the cache folder `cache` by its model, batch, resolution and
    optimiser). With `room`, a model whose state alone exceeds it is not passed over a batch (activation_bytes
    None): the CPU pass would allocate its weights."""
    key = json.dumps(
        {
            "dataset": cfg.dataset,
            "backbone": cfg.backbone,
            "head": cfg.head,
            "batch": cfg.batch_size,
            "image_size": cfg.image_size,
            "optimizer": cfg.optimizer,
        },
        sort_keys=True,
    )
    path = cache_dir(cache, "memory") / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("key") == key:
        return MemoryEstimate(**cached["estimate"])
    found = _measure(cfg, room)
    if found.activation_bytes is not None:
        write_json(path, {"key": key, "estimate": asdict(found)})
    return found


def _measure(cfg: RunConfig, room: int | None = None) -> MemoryEstimate:
    import torch

    from repro.data.specs import get_dataset
    from repro.models import Component, build_model

    def model(device: str):
        with torch.device(device):
            return build_model(
                cfg.dataset, Component(**cfg.backbone), Component(**cfg.head), image_size=cfg.image_size
            ).train()

    spec = get_dataset(cfg.dataset)
    net = model("meta")
    parameters = sum(p.numel() for p in net.parameters())
    trained = sum(p.numel() for p in net.parameters() if p.requires_grad)
    states = 1 + OPTIMIZER_STATES.get(cfg.optimizer, 2)  # gradient + optimiser tensors, per trained parameter
    state = FLOAT_BYTES * (parameters + states * trained) + sum(b.numel() * b.element_size() for b in net.buffers())
    if room is not None and state > room:
        return MemoryEstimate(parameters, state, None, cfg.batch_size)
    shape = (spec.channels, cfg.image_size, cfg.image_size)
    try:
        activations = _saved_bytes(net, torch.empty(cfg.batch_size, *shape, device="meta"))
    except (NotImplementedError, RuntimeError):  # routing that needs values: nonzero, .item(), a copy out
        sample = _saved_bytes(model("cpu"), torch.randn(SAMPLE_BATCH, *shape))
        activations = sample * cfg.batch_size // SAMPLE_BATCH
    return MemoryEstimate(parameters, state, activations, cfg.batch_size)


def _saved_bytes(net, x) -> int:
    """Bytes of the distinct tensors one forward pass of `net` on `x` saves for its backward pass, without the
    parameters (counted in the state) that a layer saves too."""
    import torch

    def storage(t) -> int:  # one key per storage, and a meta tensor's own identity (it has no storage address)
        return id(t._base if t._base is not None else t) if t.device.type == "meta" else t.untyped_storage().data_ptr()

    weights = {storage(p) for p in net.parameters()}
    saved: dict[int, int] = {}
    kept = []  # held until counted, so that no id is reused by another tensor

    def pack(t):
        kept.append(t)
        key = storage(t)
        if key not in weights:
            size = t.numel() * t.element_size() if t.device.type == "meta" else t.untyped_storage().nbytes()
            saved[key] = max(saved.get(key, 0), size)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        net(x)
    return sum(saved.values())


def device_memory(device: str) -> tuple[int, str]:
    """(bytes a run may use, what they are) on `device`: 'cuda...' its GPU's memory, else the CPU's available
    memory (MemAvailable, within the cgroup's limit where one is set)."""
    if device.startswith("cuda"):
        import torch

        props = torch.cuda.get_device_properties(torch.device(device))
        return props.total_memory, f"the GPU ({props.name}) has {gigabytes(props.total_memory)}"
    available = _meminfo_available()
    limit = _cgroup_room()
    if limit is not None and limit < available:
        return limit, f"this container's memory limit leaves {gigabytes(limit)}"
    return available, f"this machine has {gigabytes(available)} available"


def _meminfo_available() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _cgroup_room() -> int | None:
    """What cgroup v2's memory.max leaves beyond memory.current for this process's group; None without a limit."""
    try:
        group = Path("/proc/self/cgroup").read_text().split("::", 1)[1].strip()
        folder = Path("/sys/fs/cgroup") / group.lstrip("/")
        limit = (folder / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((folder / "memory.current").read_text()))
    except (OSError, ValueError, IndexError):
        return None


def memory_problem(
    cfg: RunConfig, label: str, device: str, limit: tuple[int, str] | None = None, cache: Path = DEFAULT_CACHE
) -> str | None:
    """One line when the run `label` would not fit `device`'s memory (`limit`: (bytes, what), else measured)."""
    room, where = limit if limit is not None else device_memory(device)
    found = estimate(cfg, room, cache)
    if found.total_bytes <= room:
        return None
    return (
        f"{label} needs {found.text()} to train, and {where}; make the row smaller (num_experts, "
        "expert_hidden, the batch) or train it on a device with more memory"
    )
