"""A GPU's figures, as the cost model reads them from a `repro bench gpu` file, and the one shipped: an H200's.

`gpu_reference.json` is the file that prices GPU runs when no calibration of the user's own is given: the two
`repro bench gpu` calls of the H200 lease merged, and the data preparation Table 2 took there at full size
(tools/write_gpu_reference.py, from docs/measurements/2026-12-04-h200/; docs/device-check.md). A run on a GPU
costs (repro.cost.estimate):

    data preparation  its in-memory splits' values (training and test images x C x H x W) x seconds per value,
                      once per run: making or loading the images on the host (`data_preparation` in the file;
                      a file without it borrows the shipped one's)
    compilation       once per backbone and process: the warm-up of the file's first check of that backbone
                      (later checks reuse its compiled graphs), less its warm-up steps at the measured rate; a
                      backbone the file did not train: the median over those it did
    epochs            training images and a third of the test images / the manifest's measured images per
                      second (its heaviest row's); a manifest the file did not measure: multiply-adds / the
                      median measured rate

Reading checks the keys it uses and names the file and the key; the schema is repro.bench.gpu_calibration's
(that module is a layer above: the cost model reads the file itself). Torch-free.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

REFERENCE_FILE = Path(__file__).with_name("gpu_reference.json")
SCHEMA = "repro.bench.gpu/1"


@dataclass(frozen=True)
class GpuCalibration:
    path: Path
    device: str  # the GPU's name, as torch gave it
    started: str  # ISO 8601 UTC
    images_per_s: dict[str, float]  # per manifest id
    compile_s: dict[str, float]  # per backbone_key
    macs_per_s: float  # the median training multiply-adds per second over the measured models
    data_s_per_value: float | None  # host seconds per image value (C x H x W) of a run's in-memory splits


def backbone_key(backbone: dict[str, Any]) -> str:
    """A backbone's name and parameters (a run config's `backbone`), as one string."""
    return json.dumps({"name": backbone["name"], "params": backbone.get("params") or {}}, sort_keys=True)


class CalibrationProblem(ValueError):
    """A calibration file the cost model cannot read; the message names the file and the key."""


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str, path: Path) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        expected = {str: "a string", dict: "an object", list: "a list", int: "a whole number"}.get(kind, "a number")
        raise CalibrationProblem(f"{path}: key '{where}{key}': expected {expected}, got {value!r} (schema {SCHEMA}, "
                                 "written by `repro bench gpu`)")
    return value


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
    rates = []
    for i, check in enumerate(_need(doc, "checks", list, "", path)):
        name = _need(check, "name", str, f"checks[{i}].", path)
        if check.get("kind") != "train" or check.get("status") == "skipped":
            continue
        result = _need(check, "result", dict, f"checks[{i}].", path)
        where = f"checks[{i}].result."
        images_per_s = float(_need(result, "images_per_s", (int, float), where, path))
        warmup = float(_need(result, "warmup_seconds", (int, float), where, path))
        batch = _need(result, "batch_size", int, where, path)
        backbone = _need(result, "backbone", dict, where, path)
        _need(backbone, "name", str, where + "backbone.", path)
        if not images_per_s > 0:
            raise CalibrationProblem(f"{path}: key '{where}images_per_s': expected a positive number, got {images_per_s}")
        trains[name] = result
        rates.append(float(_need(result, "train_macs_per_s", (int, float), where, path)))
        # the first check of a backbone compiled it; later ones reuse its graphs (docs/device-check.md)
        compile_s.setdefault(backbone_key(backbone), max(0.0, warmup - warmup_steps * batch / images_per_s))
    images_per_s = {}
    for manifest_id, entry in _need(doc, "manifests", dict, "", path).items():
        check = _need(entry, "check", str, f"manifests.{manifest_id}.", path)
        if check in trains:
            images_per_s[manifest_id] = float(trains[check]["images_per_s"])
    if not rates:
        raise CalibrationProblem(f"{path}: key 'checks': no \"train\" check ran; nothing to calibrate from")
    data = doc.get("data_preparation")
    data_s = float(_need(data, "seconds_per_value", (int, float), "data_preparation.", path)) if data is not None else None
    return GpuCalibration(path, device, str(doc.get("started", "")), images_per_s, compile_s,
                          statistics.median(rates), data_s)


def read(path: str | Path) -> GpuCalibration:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CalibrationProblem(f"{path}: not a readable JSON file ({exc})") from None
    return parse(doc, path)


@lru_cache(maxsize=None)
def load(path: Path = REFERENCE_FILE) -> GpuCalibration | None:
    """The shipped reference, or None (with a warning naming the file and the key) when it cannot be read."""
    try:
        return read(path)
    except CalibrationProblem as exc:
        print(f"warning: ignoring the GPU reference ({exc}); GPU figures fall back to data-sheet peaks",
              file=sys.stderr)
        return None


def build(bench_docs: list[dict[str, Any]], timings: dict[str, Any], configs: dict[str, Any]) -> dict[str, Any]:
    """The shipped reference (tools/write_gpu_reference.py): `repro bench gpu` documents of one GPU merged (a check
    a later call ran replaces one an earlier call skipped), and the seconds per image value that the runs of a
    timings.json (repro.results.timings) spent preparing their data, `configs` giving each run's config by hash."""
    from repro.data.sizes import run_split_sizes
    from repro.data.specs import get_dataset

    merged = {k: v for k, v in bench_docs[0].items() if k != "checks"}
    checks: dict[str, dict[str, Any]] = {}
    for doc in bench_docs:
        for check in doc["checks"]:
            if check["name"] not in checks or checks[check["name"]]["status"] == "skipped":
                checks[check["name"]] = check
        merged["manifests"] = {**merged["manifests"], **doc["manifests"]}
    merged.update(checks=list(checks.values()), wall_s=sum(d["wall_s"] for d in bench_docs),
                  started=min(d["started"] for d in bench_docs))
    seconds = values = 0.0
    runs, commands = 0, []
    for name, command in timings["commands"].items():
        for run in command["runs"]:
            cfg = configs.get(run["hash"])
            part = run["parts"].get("data preparation")
            if cfg is None or part is None:
                continue
            sizes = run_split_sizes(cfg.dataset, cfg.data, cfg.train_samples, cfg.test_samples)
            seconds += part["wall_s"]
            values += (sizes.train + sizes.test) * get_dataset(cfg.dataset).channels * cfg.image_size ** 2
            runs += 1
        commands.append(f"`repro {name} --profile {command['profile']}`, {command['started']}")
    if not runs:
        raise ValueError("no run of the timings has a config among those given and a data preparation part")
    merged["data_preparation"] = {"seconds_per_value": seconds / values, "runs": runs, "measured": "; ".join(commands)}
    merged["note"] = ("written by tools/write_gpu_reference.py from docs/measurements/; "
                      "checked by tests/cost/test_gpu_reference.py")
    return merged
