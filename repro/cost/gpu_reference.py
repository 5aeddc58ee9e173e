"""A GPU's figures, as the cost model reads them from a `repro bench gpu` file, and the ones shipped.

`gpu_reference.json` holds the files that price GPU runs when no calibration of the user's own is given: for each
GPU the newest measurement folder under docs/measurements/ (<date>-<gpu>/: its `repro bench gpu` files merged,
and the data preparation a table took there at full size), newest first. What a GPU run costs by them is
docs/cost-model.md's "A GPU run" (repro.cost.estimate prices it).

Reading checks the keys it uses and names the file and the key; the schema is repro.bench.gpu_calibration's
(that module is a layer above: the cost model reads the file itself). tools/write_gpu_reference.py writes the
shipped file from docs/measurements/. Torch-free.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from repro.core.package_data import shipped
from repro.cost.cpu_reference import need

REFERENCE_FILE = shipped("repro.cost", "gpu_reference.json")
SCHEMA = "repro.bench.gpu/1"


@dataclass(frozen=True)
class InputRate:
    """The input path an "input_path" check chose for a dataset, and its images/s alone (no model)."""

    path: str
    images_per_s: float
    ratio: float  # its end-to-end rate with the check's model over that model's rate alone
    check: str


@dataclass(frozen=True)
class GpuCalibration:
    path: Path
    device: str  # the GPU's name, as torch gave it
    started: str  # ISO 8601 UTC
    images_per_s: dict[str, float]  # per manifest id
    compile_s: dict[str, float]  # per backbone_key
    macs_per_s: float  # the median training multiply-adds per second over the measured models
    data_s_per_value: float | None  # host seconds per image value (C x H x W) of a run's in-memory splits
    model_images_per_s: dict[str, float] = field(default_factory=dict)  # per model_key
    checks: dict[str, str] = field(default_factory=dict)  # manifest id -> the check that measured its rate
    model_checks: dict[str, str] = field(default_factory=dict)  # model_key -> the check that measured it
    inputs: dict[str, InputRate] = field(default_factory=dict)  # per streamed dataset
    measured_in: str = ""  # the measurement folder a shipped reference was built from


def backbone_key(backbone: dict[str, Any]) -> str:
    """A backbone's name and parameters (a run config's `backbone`), as one string."""
    return json.dumps({"name": backbone["name"], "params": backbone.get("params") or {}}, sort_keys=True)


def model_key(dataset: str, backbone: dict[str, Any], head: dict[str, Any]) -> str:
    """A run's model (its config's dataset, backbone and head), as one string."""
    return json.dumps(
        {"dataset": dataset, "backbone": json.loads(backbone_key(backbone)), "head": json.loads(backbone_key(head))},
        sort_keys=True,
    )


class CalibrationProblem(ValueError):
    """A calibration file the cost model cannot read; the message names the file and the key."""


def _need(obj: Any, key: str, kind: type, where: str, path: Path) -> Any:
    return need(obj, key, kind, where, f"{path}: ", CalibrationProblem)


def parse(doc: Any, path: Path) -> GpuCalibration:
    """The figures a `repro bench gpu` document holds; CalibrationProblem naming the file and the key."""
    if _need(doc, "schema", str, "", path) != SCHEMA:
        raise CalibrationProblem(f"{path}: key 'schema': expected {SCHEMA!r}, got {doc['schema']!r}")
    if doc.get("dry_run") is not False:
        raise CalibrationProblem(f"{path}: key 'dry_run': expected false; a dry run's toy sizes calibrate nothing")
    device = _need(_need(doc, "device", dict, "", path), "name", str, "device.", path)
    warmup_steps = _need(_need(doc, "settings", dict, "", path), "warmup_steps", int, "settings.", path)
    trains: dict[str, dict[str, Any]] = {}
    compile_s: dict[str, float] = {}
    models: dict[str, float] = {}
    model_checks: dict[str, str] = {}
    inputs: dict[str, InputRate] = {}
    rates = []
    for i, check in enumerate(_need(doc, "checks", list, "", path)):
        name = _need(check, "name", str, f"checks[{i}].", path)
        kind = check.get("kind")
        if kind not in ("train", "dense_twin", "input_path") or check.get("status") == "skipped":
            continue
        result = _need(check, "result", dict, f"checks[{i}].", path)
        if not result:  # the check raised: nothing measured
            continue
        where = f"checks[{i}].result."
        if kind == "input_path":
            if (rate := _input_rate(result, name, where, path)) is not None:
                inputs[_need(result, "dataset", str, where, path)] = rate
            continue
        images_per_s = _need(result, "images_per_s", float, where, path)
        warmup = _need(result, "warmup_seconds", float, where, path)
        batch = _need(result, "batch_size", int, where, path)
        backbone = _need(result, "backbone", dict, where, path)
        _need(backbone, "name", str, where + "backbone.", path)
        if not images_per_s > 0:
            raise CalibrationProblem(
                f"{path}: key '{where}images_per_s': expected a positive number, got {images_per_s}"
            )
        trains[name] = result
        rates.append(_need(result, "train_macs_per_s", float, where, path))
        # the first check of a backbone compiled it; later ones reuse its graphs (docs/device-check.md)
        compile_s.setdefault(backbone_key(backbone), max(0.0, warmup - warmup_steps * batch / images_per_s))
        if isinstance(result.get("dataset"), str) and isinstance(result.get("head"), dict):
            key = model_key(result["dataset"], backbone, result["head"])
            models.setdefault(key, images_per_s)
            model_checks.setdefault(key, name)
    images_per_s, checks = {}, {}
    for manifest_id, entry in _need(doc, "manifests", dict, "", path).items():
        check = _need(entry, "check", str, f"manifests.{manifest_id}.", path)
        if check in trains:
            images_per_s[manifest_id] = float(trains[check]["images_per_s"])
            checks[manifest_id] = check
    if not rates:
        raise CalibrationProblem(f"{path}: key 'checks': no \"train\" check ran; nothing to calibrate from")
    data = doc.get("data_preparation")
    data_s = None if data is None else _need(data, "seconds_per_value", float, "data_preparation.", path)
    started, measured_in = str(doc.get("started", "")), str(doc.get("measured_in", ""))
    macs = statistics.median(rates)  # training multiply-adds per second, the median over the measured models
    return GpuCalibration(
        path, device, started, images_per_s, compile_s, macs, data_s, models, checks, model_checks, inputs, measured_in
    )


def _input_rate(result: dict[str, Any], name: str, where: str, path: Path) -> InputRate | None:
    """The chosen path's rate alone, or None where the check chose none."""
    chosen = result.get("chosen")
    if chosen is None:
        return None
    entry = _need(_need(result, "paths", dict, where, path), chosen, dict, where + "paths.", path)
    rate = _need(entry, "data_images_per_s", float, f"{where}paths.{chosen}.", path)
    ratio = _need(entry, "ratio", float, f"{where}paths.{chosen}.", path)
    return InputRate(chosen, rate, ratio, name)


def read(path: str | Path) -> GpuCalibration:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CalibrationProblem(f"{path}: not a readable JSON file ({exc})") from None
    return parse(doc, path)


@lru_cache(maxsize=None)
def load_all(path: Path = REFERENCE_FILE) -> tuple[GpuCalibration, ...]:
    """The shipped references, newest first, or none (with a warning naming the file and the key) when the file
    cannot be read."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        refs = _need(doc, "references", list, "", path)
        if not refs:
            raise CalibrationProblem(f"{path}: key 'references': expected at least one GPU's measurements")
        return tuple(parse(ref, Path(f"{path} references[{i}]")) for i, ref in enumerate(refs))
    except (OSError, ValueError) as exc:  # CalibrationProblem is a ValueError, as JSON's errors are
        print(
            f"warning: ignoring the GPU reference ({exc}); GPU figures fall back to data-sheet peaks", file=sys.stderr
        )
        return ()


def load(path: Path = REFERENCE_FILE) -> GpuCalibration | None:
    """The newest shipped reference, or None when the file cannot be read."""
    refs = load_all(path)
    return refs[0] if refs else None
