"""The file `repro bench gpu` writes, and `read_calibration`, which reads every check back. Torch-free.

The cost model, a layer below, reads the keys it prices with itself (repro.cost.gpu_reference), and ships one
such file measured on an H200 as its GPU reference.

Schema "repro.bench.gpu/1" (JSON object; every key always present, null where it does not apply):

    schema       "repro.bench.gpu/1"
    dry_run      true: toy sizes on whatever device ran it; its figures calibrate nothing
    device       {"type": "cuda" | "cpu", "name": str, "label": str (repro.core.devices.device_label),
                  "memory_bytes": int | null, "capability": "9.0" | null}
    torch        torch.__version__;  cuda: torch.version.cuda (null on a CPU build)
    git_commit   the code that ran (repro.results.provenance.git_commit)
    started      ISO 8601 UTC;  wall_s: seconds for the whole check
    settings     repro.bench.gpu.GpuSettings as a dict: {"steps", "warmup_steps", "chunk_steps",
                  "model_budget_s", "budget_s", "batch_cap" (null at full size), "image_cap" (null
                  at full size), "child_timeout_s", "precision": "bf16"}
    manifests    {manifest id: {"row": row id, "check": name of its "train" check, "train_macs": float}}:
                 each manifest with accuracy rows, its heaviest row (most training multiply-adds);
                 row and train_macs are null where its rows could not be counted (that check failed)
    checks       [{"name": str,
                   "kind": "train" | "dense_twin" | "input_path" | "kill_resume" | "expert_choice_bf16",
                   "status": "passed" | "failed" | "skipped", "error": str ("" when passed),
                   "seconds": float, "result": {...}}], in the order they ran

A "train" check's result: {"manifests": [ids], "dataset", "backbone", "head" (Component keys),
"batch_size", "image_size", "precision", "channels_last", "compiled", "compile_error", "dispatch",
"forward_macs" (per image at image_size), "flop_counter" (which count gave it), "steps", "timed_seconds",
"warmup_seconds",
"images_per_s", "train_macs_per_s" (3 x forward_macs x images/s), "peak_memory_bytes" (CUDA:
torch.cuda.max_memory_allocated, compilation included; null on a CPU), "final_loss"}. A check whose
compilation failed trains eagerly, as a run then does: it is "failed" with the compiler's error, and
its images/s are the eager ones. A check that raised has "result": {} and the exception, with
the file and line it came from, as its error; a check never reached says so in its error.

A "dense_twin" result (repro.bench.dense_twin): a "train" result of the twin row, and "row" (manifest.row),
"routed_check", "routed_images_per_s", "ratio" (routed / twin images/s, null where the routed check measured
none), "goal" and "judged" (false off CUDA and on a dry run). An "input_path" result: see
repro.bench.input_paths.

An "expert_choice_bf16" result: {"dataset", "head", "batch", "features" (D), "output_dtype",
"agreement_with_fp32" (share of samples within 5% of the fp32 output; passes at >= 0.9),
"max_rel_diff", "loss", "grad_norm"}. A "kill_resume" result: see repro.bench.kill_resume.

Reading: `read_calibration(path)` validates the keys above (CalibrationError names the file and
the key) and gives `images_per_s(manifest)`, `peak_memory_bytes(manifest)` and
`train_macs_per_s()`, the median achieved training multiply-adds per second. A dry-run file (`dry_run`
true) is for tests, not calibration.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SCHEMA = "repro.bench.gpu/1"
KINDS = ("train", "dense_twin", "input_path", "kill_resume", "expert_choice_bf16")
STATUSES = ("passed", "failed", "skipped")
TOP_KEYS = (
    "schema",
    "dry_run",
    "device",
    "torch",
    "cuda",
    "git_commit",
    "started",
    "wall_s",
    "settings",
    "manifests",
    "checks",
)
CHECK_KEYS = ("name", "kind", "status", "error", "seconds", "result")

Status = Literal["passed", "failed", "skipped"]


class CalibrationError(ValueError):
    """A calibration file that does not follow the schema; the message names the file and the key."""


class CheckFailed(AssertionError):
    """What a check found wrong (an `expect` that did not hold); recorded as the check's error."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


@dataclass
class Check:
    name: str
    kind: str
    status: Status = "skipped"
    error: str = ""
    seconds: float = 0.0
    result: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CHECK_KEYS}


@dataclass(frozen=True)
class Calibration:
    """A `repro bench gpu` file, read back (`read_calibration`)."""

    path: Path
    dry_run: bool
    device_type: str
    device_name: str
    torch_version: str
    checks: tuple[Check, ...]
    manifests: dict[str, dict[str, Any]]
    raw: dict[str, Any]

    def check(self, name: str) -> Check:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"{self.path}: no check named {name!r}; checks: {', '.join(c.name for c in self.checks)}")

    def _train(self, manifest_id: str) -> Check | None:
        entry = self.manifests.get(manifest_id)
        return self.check(entry["check"]) if entry else None

    def images_per_s(self, manifest_id: str) -> float | None:
        """Training images/s of the manifest's heaviest model, or None where it was not measured."""
        c = self._train(manifest_id)
        return c.result.get("images_per_s") if c else None

    def peak_memory_bytes(self, manifest_id: str) -> int | None:
        c = self._train(manifest_id)
        return c.result.get("peak_memory_bytes") if c else None

    def train_macs_per_s(self) -> float | None:
        """Median training multiply-adds per second over the measured models: the device's throughput
        as the cost model counts it (3 x forward MACs per training image)."""
        rates = [
            c.result["train_macs_per_s"] for c in self.checks if c.kind == "train" and c.result.get("train_macs_per_s")
        ]
        return statistics.median(rates) if rates else None

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "failed"]


def _require(d: Any, keys: tuple[str, ...], where: str, path: Path) -> None:
    if not isinstance(d, dict):
        raise CalibrationError(f"{path}: {where} should be a JSON object, got {type(d).__name__}")
    missing = [k for k in keys if k not in d]
    if missing:
        raise CalibrationError(
            f"{path}: {where} lacks {', '.join(missing)} (schema {SCHEMA}, repro.bench.gpu_calibration)"
        )


def read_calibration(path: str | Path) -> Calibration:
    """The checks and figures of a `repro bench gpu` file; CalibrationError naming the file and key."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationError(f"{path}: not a readable JSON file ({exc})") from None
    _require(data, TOP_KEYS, "the top level", path)
    if data["schema"] != SCHEMA:
        raise CalibrationError(f"{path}: schema is {data['schema']!r}, expected {SCHEMA!r}")
    _require(data["device"], ("type", "name", "label", "memory_bytes", "capability"), "'device'", path)
    checks = []
    for i, c in enumerate(data["checks"]):
        _require(c, CHECK_KEYS, f"checks[{i}]", path)
        if c["kind"] not in KINDS or c["status"] not in STATUSES:
            raise CalibrationError(
                f"{path}: checks[{i}] ({c['name']}) has kind {c['kind']!r} and status "
                f"{c['status']!r}; expected kind in {KINDS} and status in {STATUSES}"
            )
        checks.append(Check(**{k: c[k] for k in CHECK_KEYS}))
    names = {c.name for c in checks}
    for manifest_id, entry in data["manifests"].items():
        _require(entry, ("row", "check", "train_macs"), f"manifests.{manifest_id}", path)
        if entry["check"] not in names:
            raise CalibrationError(
                f"{path}: manifests.{manifest_id}.check names {entry['check']!r}, which is not among the checks"
            )
    return Calibration(
        path,
        bool(data["dry_run"]),
        data["device"]["type"],
        data["device"]["name"],
        data["torch"],
        tuple(checks),
        data["manifests"],
        data,
    )
