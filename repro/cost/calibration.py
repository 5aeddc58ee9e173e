"""How fast the device that would run a profile trains: a reference, scaled or read from a calibration file.

Three sources, each labelled wherever a figure is shown (`Throughput.origin`, the From column):
- this host's CPU: the CPU reference (repro.cost.cpu_reference) times this CPU's speed factor against its
  machine where one is kept (`Speed`), never a rate of its own: a single FLOP rate cannot price small runs,
  whose cost is per-step overhead;
- a GPU: the calibration file `repro bench gpu` wrote on the GPU host, when one is given; else the
  shipped reference of that GPU (repro.cost.gpu_reference: the newest measurement of each GPU measured),
  or the newest reference with its rates scaled by bf16 peak FLOP/s to a GPU none was measured on (its
  input path then unmeasured: the host's cores, not the GPU's peak, set that rate); both price a run's
  fixed costs (data preparation, compilation) beside its epochs. A malformed file is ignored with a
  warning naming the file and the key;
- where the shipped GPU reference cannot be read, data-sheet figures: the device's peak dense bf16
  FLOP/s times one efficiency, from NVIDIA's ResNet-50 v1.5 PyTorch recipe on one A100-80GB
  with AMP: 2,470 training images/s (DeepLearningExamples, PyTorch/Classification/ConvNets/
  resnet50v1.5, "Training performance: NVIDIA DGX A100"). At 4.09 GMAC per forward pass,
  3x for training and 2 FLOP per multiply-add that is 6.06e13 FLOP/s of the A100's 3.12e14: 0.19.
  Every optimiser step also pays a fixed launch overhead (an assumption: a few hundred kernels at
  ~10 us each).

The speed factor is what `repro bench speed` (repro.bench.speed) measures: the median ratio of a few reference runs'
CPU seconds here over there. A measurement is quiet when the load average (1 minute, the higher of before and
after) is at most the cores and the repetitions of a run at most MAX_SPREAD apart. Only a quiet one is kept
(speed.json in the cache, by CPU model and cores), and for MAX_AGE_DAYS: a machine measured while busy looks slow,
and one busy run must not price every later estimate. Without a kept measurement the reference's figures stand
unscaled; the From column says which (docs/cost-model.md).
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from repro.core.cache import read_json, write_json
from repro.core.settings import DEFAULT_CACHE
from repro.cost import cpu_reference, gpu_reference
from repro.cost.gpu_reference import GpuCalibration, InputRate, backbone_key, model_key

RESNET50_A100_IMAGES_PER_S = 2470.0  # NVIDIA DeepLearningExamples, 1x A100-80GB, AMP
RESNET50_FORWARD_MACS = 4.09e9  # at 224 px
A100_PEAK_BF16_FLOPS = 312e12
GPU_EFFICIENCY = RESNET50_A100_IMAGES_PER_S * 3 * RESNET50_FORWARD_MACS * 2 / A100_PEAK_BF16_FLOPS  # ~0.19
GPU_STEP_OVERHEAD_S = 0.003  # assumption, not measured: launch-bound optimiser step of a small model
CPU_STEP_OVERHEAD_S = 0.004  # optimiser, Python and dispatch per step on a CPU
# Training multiply-adds per second per core where the shipped CPU reference (repro.cost.cpu_reference) cannot be
# read: a guess, labelled as one.
CPU_REFERENCE_MACS_PER_CORE = 4e9

# Peak dense bf16 (fp16 for V100, which has no bf16) tensor-core FLOP/s, from the vendors' data sheets.
REFERENCE_GPUS: dict[str, float] = {
    "A100": 312e12,
    "H100": 989e12,
    "H200": 989e12,
    "L40S": 362e12,
    "L4": 121e12,
    "A10": 125e12,
    "V100": 125e12,
}
DEFAULT_REFERENCE_GPU = "A100"
MAX_SPREAD = 0.20  # a speed measurement's repetitions of one run at most this far apart, or it is not kept
MAX_AGE_DAYS = 7
FILE_NAME = "speed.json"  # the kept speed factors, in the cache folder


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Speed:
    """One measurement of this CPU against the reference machine."""

    factor: float  # CPU seconds here / there for the same runs: 1.3 is 30% slower than the reference
    spread: float  # the largest relative disagreement between repetitions of one run
    load: float  # 1-minute load average, the higher of before and after
    cores: int  # the cores this process may use
    runs: int  # reference runs trained
    measured: str  # ISO 8601 UTC
    machine: str  # repro.results.timings.machine_key

    @property
    def quiet(self) -> bool:
        return self.load <= self.cores and self.spread <= MAX_SPREAD

    def why_not_kept(self) -> str:
        """'' for a quiet measurement, else what made it busy."""
        reasons = [f"load average {self.load:.1f} above {self.cores} cores"] if self.load > self.cores else []
        if self.spread > MAX_SPREAD:
            reasons.append(f"repetitions {self.spread:.0%} apart (bound {MAX_SPREAD:.0%})")
        return " and ".join(reasons)

    @property
    def label(self) -> str:
        """The From column's word for figures scaled by it."""
        return f"CPU reference x{self.factor:.2f}"

    def describe(self) -> str:
        return (
            f"speed factor {self.factor:.2f} (this CPU's seconds / the reference machine's, {self.runs} runs, "
            f"spread {self.spread:.0%}, load {self.load:.1f} on {self.cores} cores, {self.measured[:16]} UTC)"
        )


def this_machine() -> str:
    """This machine's key: its CPU model, cores and OS (repro.results.timings)."""
    from repro.results.timings import machine, machine_key

    return machine_key(machine())


def speed_path(cache: Path = DEFAULT_CACHE) -> Path:
    """Where the speed factors are kept: in the cache folder `cache`, one per machine."""
    return Path(cache) / FILE_NAME


def kept_speed(now: dt.datetime | None = None, cache: Path = DEFAULT_CACHE) -> Speed | None:
    """This machine's kept measurement in the cache folder `cache`, or None: none kept, older than MAX_AGE_DAYS,
    or damaged (with a warning naming the file and the key)."""
    path = speed_path(cache)
    doc = read_json(path)
    if doc is None:
        return None
    entry = doc.get(this_machine()) if isinstance(doc, dict) else None
    if entry is None:
        return None
    try:
        speed = Speed(**entry)
        measured = dt.datetime.fromisoformat(speed.measured)
        if not (speed.factor > 0 and speed.quiet):
            raise ValueError("expected a positive factor measured on a quiet machine")
    except (TypeError, ValueError) as exc:
        print(
            f"warning: ignoring the speed measurement in {path}, key {this_machine()!r} ({exc}); "
            "`repro bench speed` measures it again",
            file=sys.stderr,
        )
        return None
    age = (now or dt.datetime.now(dt.timezone.utc)) - measured
    return speed if age <= dt.timedelta(days=MAX_AGE_DAYS) else None


def keep(speed: Speed, cache: Path = DEFAULT_CACHE) -> bool:
    """Keep a quiet measurement for this machine in the cache folder `cache`; a busy one is not kept. Whether it was."""
    if not speed.quiet:
        return False
    path = speed_path(cache)
    doc = read_json(path)
    doc = doc if isinstance(doc, dict) else {}
    doc[speed.machine] = asdict(speed)
    write_json(path, doc)
    return True


@dataclass(frozen=True)
class Throughput:
    """A device's training speed: multiply-adds per second and a fixed cost per optimiser step."""

    device: str  # "cpu", or a GPU's name
    kind: str  # "cpu" or "gpu"
    macs_per_s: float  # training multiply-adds (3x the forward pass's) per second
    step_overhead_s: float
    source: str  # where the figures come from, shown beside every estimate
    images_per_s: dict[str, float] = field(default_factory=dict)  # per manifest id, from a calibration file
    run_seconds: dict[str, float] = field(default_factory=dict)  # per config hash, from the CPU reference
    # Fitted to run records only (repro.cost.fit); zero or one otherwise:
    run_overhead_s: float = 0.0  # per run, outside its epochs (building the model and its data)
    step_param_s: float = 0.0  # per trainable parameter and step (optimiser and gradient memory)
    checkpoint_param_s: float = 0.0  # per parameter a checkpoint holds, per checkpoint (one an epoch but the last)
    cpu_share: float = 1.0  # a run's CPU seconds per second of its wall time on a quiet machine
    parallel: int = 1  # runs at once the figures hold for (a CPU fitted to runs trained N at a time)
    fitted: bool = False
    label: str = ""  # the From column's words for it (docs/cost-model.md); its basis where empty
    # A GPU's fixed costs per run, from a calibration file (repro.cost.gpu_reference):
    compile_s: dict[str, float] = field(default_factory=dict)  # per backbone (gpu_reference.backbone_key)
    data_s_per_value: float = 0.0  # host seconds per value (C x H x W) of a run's in-memory images
    # Where a calibration file's rates came from (repro.cost.tables shows them):
    rate_checks: dict[str, str] = field(default_factory=dict)  # manifest id -> the check behind images_per_s
    model_images_per_s: dict[str, float] = field(default_factory=dict)  # per gpu_reference.model_key
    model_checks: dict[str, str] = field(default_factory=dict)  # model_key -> its check
    inputs: dict[str, InputRate] = field(default_factory=dict)  # per streamed dataset; empty: unmeasured
    measured_in: str = ""  # the file or measurement folder of the rates

    def model_rate(self, dataset: str, backbone: dict[str, Any], head: dict[str, Any]) -> float | None:
        """Images/s measured for this very model (dataset, backbone and head), or None."""
        return self.model_images_per_s.get(model_key(dataset, backbone, head)) if self.model_images_per_s else None

    def compile_seconds(self, backbone: dict[str, Any]) -> float:
        """Compiling `backbone` once (a GPU from a calibration file); 0 where the figures have no compile times."""
        if not self.compile_s:
            return 0.0
        return self.compile_s.get(backbone_key(backbone), statistics.median(self.compile_s.values()))

    @property
    def basis(self) -> str:
        """What every figure computed from this device is: "fitted" (to run records), "measured" (this CPU's
        benchmark, a GPU calibration file) or "reference" (a data sheet and an assumed efficiency)."""
        return "fitted" if self.fitted else "reference" if self.source.startswith("reference") else "measured"

    @property
    def origin(self) -> str:
        """What the From column says of figures computed from it: "fitted", "CPU reference x1.12", ..."""
        return "fitted" if self.fitted else self.label or self.basis


def cpu_throughput(speed: Speed | None = None) -> Throughput:
    """This CPU: the CPU reference's run model and runs (repro.cost.cpu_reference) times `speed`'s factor
    (this CPU's seconds over the reference machine's; unscaled without one); a per-core guess,
    labelled as one, where the reference cannot be read. Torch-free."""
    ref = cpu_reference.load()
    factor = speed.factor if speed is not None else 1.0
    if ref is None:
        guess = CPU_REFERENCE_MACS_PER_CORE * cores() / factor, CPU_STEP_OVERHEAD_S * factor
        why = f"{CPU_REFERENCE_MACS_PER_CORE / 1e9:.0f} GMAC/s per core x {cores()} (a 2-core x86-64 CI machine)"
        return Throughput("cpu", "cpu", *guess, f"reference, not measured: {why}", label="CPU guess")
    unscaled = "; not scaled: no speed factor kept (`repro bench speed`)"
    scaled = f"; x {speed.describe()}" if speed is not None else unscaled
    return Throughput(
        "cpu",
        "cpu",
        ref.macs_per_s / factor,
        ref.step_overhead_s * factor,
        ref.source + scaled,
        run_seconds={r.hash: r.cpu_s * factor for r in ref.runs},
        run_overhead_s=ref.run_overhead_s * factor,
        cpu_share=ref.cpu_share,
        parallel=cores(),
        label=speed.label if speed is not None else "CPU reference",
    )


def local_gpu_name(visible_gpus: str | None = None) -> str | None:
    """The first NVIDIA GPU's model name from the driver's /proc files (no torch), or None; `visible_gpus`: this
    process's CUDA_VISIBLE_DEVICES (repro.core.settings.Launch), "" when it may use none."""
    root = Path("/proc/driver/nvidia/gpus")
    if visible_gpus == "" or not root.is_dir():
        return None
    for info in sorted(root.glob("*/information")):
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("Model:"):
                return line.split(":", 1)[1].strip()
    return None


def _peak_key(name: str) -> str | None:
    """The peak table's key a GPU's name contains ("NVIDIA A100-SXM4-80GB" -> "A100"), the longest first."""
    return next((k for k in sorted(REFERENCE_GPUS, key=len, reverse=True) if k.lower() in name.lower()), None)


def reference_gpu(name: str | None = None) -> Throughput:
    """The data-sheet figures for the GPU `name` (a table key or a driver name containing one)."""
    wanted = name or DEFAULT_REFERENCE_GPU
    key = _peak_key(wanted) or DEFAULT_REFERENCE_GPU
    peak = REFERENCE_GPUS[key]
    note = "" if _peak_key(wanted) else f" ({wanted} is not in the table: {key}'s figures)"
    return Throughput(
        key,
        "gpu",
        peak / 2 * GPU_EFFICIENCY,
        GPU_STEP_OVERHEAD_S,
        f"reference, not measured: {key} at {peak / 1e12:.0f} TFLOP/s bf16 peak x {GPU_EFFICIENCY:.2f} "
        f"efficiency (NVIDIA ResNet-50 v1.5 on A100), {GPU_STEP_OVERHEAD_S * 1e3:.0f} ms a step{note}",
        label=f"{key} data sheet",
    )


def from_calibration(
    cal: GpuCalibration, label: str, source: str, scale: float = 1.0, data_s_per_value: float | None = None
) -> Throughput:
    """A GPU priced by a calibration's figures, its rates times `scale` (another GPU's peak over the measured one's;
    the input paths' rates, set by the host's cores, only where unscaled)."""
    data = cal.data_s_per_value if cal.data_s_per_value is not None else data_s_per_value or 0.0
    return Throughput(
        cal.device,
        "gpu",
        cal.macs_per_s * scale,
        GPU_STEP_OVERHEAD_S,
        source,
        {m: r * scale for m, r in cal.images_per_s.items()},
        label=label,
        compile_s=dict(cal.compile_s),
        data_s_per_value=data,
        rate_checks=dict(cal.checks),
        model_images_per_s={k: r * scale for k, r in cal.model_images_per_s.items()},
        model_checks=dict(cal.model_checks),
        inputs=dict(cal.inputs) if scale == 1.0 else {},
        measured_in=cal.measured_in or str(cal.path),
    )


def gpu_throughput(
    calibration: str | Path | None = None, gpu: str | None = None, visible_gpus: str | None = None
) -> Throughput:
    """The GPU a profile would run on: the calibration file when one is given (`calibration`: the command line
    passes --calibration, else $REPRO_GPU_CALIBRATION); else the shipped GPU reference (repro.cost.gpu_reference),
    its rates scaled by peak FLOP/s to `gpu` or this host's GPU (of `visible_gpus`) where that is another;
    data-sheet figures where the reference cannot be read."""
    references = gpu_reference.load_all()
    wanted = gpu or local_gpu_name(visible_gpus)
    own = _peak_key(wanted) if wanted else None
    shipped = next(
        (r for r in references if own is not None and _peak_key(r.device) == own), references[0] if references else None
    )  # that GPU's own measurement, else the newest
    if calibration:
        try:
            mine = gpu_reference.read(Path(calibration))
        except gpu_reference.CalibrationProblem as exc:
            print(f"warning: ignoring the GPU calibration ({exc}); using the reference figures", file=sys.stderr)
        else:
            lends = shipped if mine.data_s_per_value is None else None  # the data preparation it borrows, if any
            borrowed = f"; data preparation: the shipped {lends.device} reference's" if lends is not None else ""
            return from_calibration(
                mine,
                "calibration file",
                f"measured: {calibration} ({mine.device}, {len(mine.images_per_s)} manifests){borrowed}",
                data_s_per_value=shipped.data_s_per_value if shipped else None,
            )
    if shipped is None:
        return reference_gpu(wanted)
    here, there = _peak_key(wanted or shipped.device), _peak_key(shipped.device)
    when = shipped.started[:10]
    source = (
        f"reference, not measured here: `repro bench gpu` on one {shipped.device}, {when} "
        f"({len(shipped.images_per_s)} manifests; {shipped.measured_in}, in repro/cost/gpu_reference.json)"
    )
    if here is None or there is None or here == there:
        note = f"; {wanted} is not in the peak table: the {there}'s figures" if here is None and wanted else ""
        return from_calibration(shipped, f"{there} ref. {when}", source + note)
    peak, measured = REFERENCE_GPUS[here], REFERENCE_GPUS[there]
    scale = peak / measured
    return from_calibration(
        shipped,
        f"{there} ref. x{scale:.2f} ({here})",
        f"{source}, its rates x {scale:.2f} for the {here} (bf16 peak {peak / 1e12:.0f} "
        f"over {measured / 1e12:.0f} TFLOP/s)",
        scale,
    )
