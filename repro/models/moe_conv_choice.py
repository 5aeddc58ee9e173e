"""Which of MoEConv2d's exact paths (repro.models.moe_conv_paths) runs: by rule, or by measured time.

A layer's rule (MoEConv2d.path_rule; repro.models.moe_conv.use_paths sets a whole model's):

    fewest-macs  the path of fewest multiply-adds: `mixed` where mixing K banks a sample costs less than K
                 convolutions (K*W + P*W < K*P*W), else `per-expert`. The default, what every FLOP count counts,
                 and what deterministic mode runs.
    measured     as cudnn.benchmark chooses convolution algorithms: on the first call of each key (the layer's
                 shape; the input's shape, memory format and dtype; autocast; the device and its threads; with
                 a backward or without) every candidate path runs that call's input, forward and, where
                 gradients are on, backward, and the fastest is kept (the fewest-macs path unless another
                 takes less than MARGIN of its time: no switch for noise): in this process, and in a choice file
                 when one is given (repro.core.cache), so a resumed run and a run's other processes take the
                 same path. The training engine's rule (repro.train.engine.Engine.moe_conv).
    <a path>     that path always (the benches and the tests).

Three cases take fewest-macs whatever the rule, without timing: a forward inside counting()
(repro.models.zero_banks: FLOP counts stay machine-independent), PyTorch's deterministic mode
(repro.runtime.numerics: a run's rounding then depends on nothing measured), and a layer without a backward
whose input has a single sample (nothing to gain, and a count's batch). Under torch.compile only the paths
of static shapes are candidates (the others recompile per routing), and the choice itself runs eagerly.

Only paths of bounded working memory are timed: a path whose tensors beyond the call's input and output
(ConvPath.memory) exceed MEMORY times the fewest-multiply-add path's, or the input and output's if more, is
not a candidate. On small maps the kernel-mixing paths build per-sample kernels (B, W) that outgrow the
activations hundreds of times: at batch 256 and 512 channels, 2.4 GB a copy, and timing them with their
gradients held more memory than the training it chose for. Under torch.compile the static path of least
memory stays a candidate when none is within the bound.

The paths compute one function, so the choice changes float rounding only: like cuDNN's algorithm, it is
not part of a run's config or hash. Timing uses no random numbers and leaves parameters' .grad untouched.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from repro.models.moe_conv_paths import PATHS, output_size
from repro.models.zero_banks import counting

if TYPE_CHECKING:
    from repro.models.moe_conv import MoEConv2d

RULES = ("fewest-macs", "measured", *PATHS)
ROUNDS = 4  # timed calls of each candidate after one untimed (allocator, oneDNN's primitives), interleaved
DROP = 4.0  # a candidate this many times slower than the fastest in the first round is not timed again
MARGIN = 0.95  # another path replaces the fewest-multiply-add one only where it takes less than this of its time
MEMORY = 16  # a candidate's working memory, at most this many times the reference (module docstring); im2col's
# copy of a 3x3 convolution's input alone is 9 inputs

_chosen: dict[str, str] = {}  # key -> path, this process's choices
_files: dict[Path, dict] = {}  # choice file -> its entries, read once


def choice_file(cache: Path) -> Path:
    """Where the training engine keeps measured choices in the cache folder `cache`, for every process of its runs."""
    from repro.core.cache import cache_dir

    return cache_dir(cache, "moe-conv") / "choices.json"


def fewest_macs(m: MoEConv2d, positions: int) -> str:
    return "mixed" if m.mixes_kernels(positions) else "per-expert"


def key(m: MoEConv2d, x: torch.Tensor, backward: bool) -> str:
    """What a measured choice holds for: the layer, the input and the machine, in one line."""
    autocast = torch.get_autocast_dtype(x.device.type) if torch.is_autocast_enabled(x.device.type) else None
    device = torch.cuda.get_device_name(x.device) if x.is_cuda else torch.backends.cpu.get_cpu_capability()
    layout = "channels-last" if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) else "contiguous"
    return (
        f"{m.in_channels}>{m.out_channels} k{m.kernel_size} s{m.stride} p{m.padding} d{m.dilation} "
        f"g{m.groups} bias{m.bias is not None} E{m.num_experts} K{m.top_k} small{m.small_maps} | "
        f"x{tuple(x.shape)} {layout} {x.dtype} autocast {autocast} | {x.device.type} {device} "
        f"threads {torch.get_num_threads()} torch {torch.__version__} | {'train' if backward else 'forward'}"
    )


def choose(
    m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor, positions: int, compiling: bool = False
) -> str:
    """The path this call runs (see the module docstring)."""
    fewest, rule = fewest_macs(m, positions), m.path_rule
    if rule == "fewest-macs":  # first: nothing here for torch.compile to trace
        return fewest
    if counting() or torch.are_deterministic_algorithms_enabled():
        return fewest
    if rule != "measured":
        return rule
    backward = torch.is_grad_enabled() and (x.requires_grad or m.weight.requires_grad)
    if not backward and x.shape[0] == 1:
        return fewest
    return _measured(m, x, g, top_i, backward, compiling, fewest)


@torch.compiler.disable  # timing runs eagerly, between a compiled graph's parts
def _measured(
    m: MoEConv2d, x: torch.Tensor, g: torch.Tensor, top_i: torch.Tensor, backward: bool, compiling: bool, fewest: str
) -> str:
    k = key(m, x, backward) + (" | compiled" if compiling else "")
    if k in _chosen:
        return _chosen[k]
    entries = _entries(m.path_file)
    if isinstance(entries.get(k), dict) and entries[k].get("path") in candidates(compiling):
        _chosen[k] = entries[k]["path"]
        return _chosen[k]
    times = measure(m, x, g, top_i, backward, within_memory(m, x, fewest, candidates(compiling)))
    fastest = min(times, key=times.__getitem__)
    _chosen[k] = fastest if fewest not in times or times[fastest] < MARGIN * times[fewest] else fewest
    if m.path_file is not None:
        _save(m.path_file, k, {"path": _chosen[k], "ms": {n: round(1000 * t, 3) for n, t in times.items()}})
    return _chosen[k]


def candidates(compiling: bool = False) -> tuple[str, ...]:
    return tuple(n for n, p in PATHS.items() if p.static_shapes or not compiling)


def within_memory(m: MoEConv2d, x: torch.Tensor, fewest: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The candidates `names` whose working memory on x is within MEMORY times the reference (module docstring);
    the one of least memory where none is."""
    shape, positions = tuple(x.shape), math.prod(output_size(m, x))
    memory = {n: PATHS[n].memory(m, shape, positions) for n in (*names, fewest)}
    bound = MEMORY * max(memory[fewest], x.numel() + shape[0] * m.out_channels * positions)
    return tuple(n for n in names if memory[n] <= bound) or (min(names, key=memory.__getitem__),)


def measure(
    m: MoEConv2d,
    x: torch.Tensor,
    g: torch.Tensor,
    top_i: torch.Tensor,
    backward: bool,
    names: tuple[str, ...],
    rounds: int = ROUNDS,
) -> dict[str, float]:
    """Seconds of each path's call on this input (forward, then backward where asked), the least of `rounds`;
    a path far slower than the fastest after the first round keeps that time."""
    params = [p for p in (m.weight, m.bias) if p is not None and p.requires_grad]
    x, g = x.detach().requires_grad_(backward), g.detach().requires_grad_(backward)

    def once(name: str) -> float:
        if x.is_cuda:
            torch.cuda.synchronize(x.device)
        start = time.perf_counter()
        with torch.set_grad_enabled(backward):
            y = PATHS[name].run(m, x, g, top_i)
            if backward:  # gradients returned, not accumulated into .grad
                torch.autograd.grad(y, [x, g, *params], torch.ones_like(y), allow_unused=True)
        if x.is_cuda:
            torch.cuda.synchronize(x.device)
        return time.perf_counter() - start

    for name in names:
        once(name)
    best = {name: once(name) for name in names}
    alive = [n for n in names if best[n] <= DROP * min(best.values())]
    for r in range(1, rounds):
        for name in alive[r % len(alive) :] + alive[: r % len(alive)]:  # each round starts elsewhere
            best[name] = min(best[name], once(name))
    return best


def chosen() -> dict[str, str]:
    """This process's measured choices so far, by key."""
    return dict(_chosen)


def forget() -> None:
    """Drop this process's choices and read choice files afresh (the tests)."""
    _chosen.clear()
    _files.clear()


def _entries(path: Path | None) -> dict:
    if path is None:
        return {}
    if path not in _files:
        from repro.core.cache import read_json

        found = read_json(path)
        _files[path] = found if isinstance(found, dict) else {}
    return _files[path]


def _save(path: Path, k: str, entry: dict) -> None:
    """Add one choice to the file: read again first, so choices other processes wrote meanwhile are kept."""
    from repro.core.cache import read_json, write_json

    found = read_json(path)
    entries = found if isinstance(found, dict) else {}
    entries[k] = entry
    _files[path] = entries
    write_json(path, entries)
