"""The input path ImageNet runs take on a GPU by default: the one `repro bench gpu` measured fastest there.

`input_paths.json` beside this file maps a GPU's name, as torch gives it, to the run path its input_path check
chose (repro.bench.input_paths) and what that check measured. tools/write_gpu_reference.py writes it from the
newest measurement of each GPU under docs/measurements/, and tests/cost/test_gpu_reference.py holds it to that
build. A GPU with no measurement takes repro.data.imagenet.choose_path's rule. Which path ran is in each run's
record (its "input"); it is not part of the run's hash. Torch-free.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.core.package_data import shipped

FILE = shipped("repro.data", "input_paths.json")
RUN_PATHS = ("pil", "decode_cpu", "decode_cuda")  # repro.data.imagenet.PATHS


class InputChoiceError(ValueError):
    """An input_paths.json that does not say what it should; the message names the file and the key."""


def read_choices(path: Path = FILE) -> dict[str, dict[str, Any]]:
    """{GPU name: {"path", "measured" (the measurement file), "ratio" (end to end over model-only)}}."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputChoiceError(f"{path}: not a readable JSON file ({exc})") from None
    gpus = doc.get("gpus") if isinstance(doc, dict) else None
    if not isinstance(gpus, dict):
        raise InputChoiceError(f"{path}: key 'gpus': expected an object of GPU names, got {gpus!r}")
    for name, entry in gpus.items():
        if not isinstance(entry, dict) or entry.get("path") not in RUN_PATHS:
            raise InputChoiceError(
                f"{path}: key 'gpus.{name}.path': expected one of {', '.join(RUN_PATHS)}, "
                f"got {entry.get('path') if isinstance(entry, dict) else entry!r}"
            )
    return gpus


def measured_path(gpu_name: str, path: Path = FILE) -> str | None:
    """The input path measured fastest on the GPU `gpu_name`, or None where none was measured."""
    entry = read_choices(path).get(gpu_name)
    return entry["path"] if entry else None
