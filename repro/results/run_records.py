"""A run record read on its own: its schema, its digest, and whether it is whole and unedited. Torch-free.

A record (<results>/runs/<hash>.json, written by repro.execution.records) must hold the keys, shapes and
value ranges the tables read from it (repro.results.measurements.RunSummary) and carry the digest it was
written with: sha256 of its canonical JSON without the digest, so a hand edit to any value is detected.
Values are checked before the digest, so a record whose numbers are impossible says which number.

Two questions use these checks. `repro run` asks whether a file is the record of the run it plans
(repro.execution.record_checks.record_problem: these checks, plus the planned config and hash). A reader
of a results folder (repro.results.frames, `repro export`, `repro compare`) has no plan: it asks whether a
file is a record at all, named by its own hash (`own_problem`); `read_records` reads a folder's.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.core import jsonfile
from repro.core.fsutil import jsonable
from repro.results.measurements import RUNS_FOLDER

RECORD_SCHEMA = 2  # 2: records carry a digest
REQUIRED_KEYS = ("schema", "config", "config_hash", "seed", "metrics", "history", "provenance", "digest")
UNIT_METRICS = ("accuracy", "final_accuracy", "peak_accuracy")  # fractions in [0, 1]
UNIT_HISTORY = ("test_accuracy", "train_accuracy")


class LeftAlone(Exception):
    """A run's record or checkpoint that is not damage and is not used here: it cannot be read, or a newer version
    wrote it. Never set aside; its run is skipped, and the message (one line) names the file and why."""

    @classmethod
    def unreadable(cls, path: Path, cause: OSError | str) -> LeftAlone:
        error = cause if isinstance(cause, str) else cause.strerror or cause
        return cls(f"cannot read {path}: {error}; it is left as it is and its run is skipped")


def newer_schema(record: Any) -> bool:
    schema = record.get("schema") if isinstance(record, dict) else None
    return isinstance(schema, int) and not isinstance(schema, bool) and schema > RECORD_SCHEMA


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _seconds(value: Any) -> bool:
    return _number(value) and value >= 0


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _counts(value: Any) -> bool:
    return isinstance(value, list) and all(_count(v) for v in value)


def _text(value: Any) -> bool:
    return isinstance(value, str)


# Where present, each field a command reads has this type (the dotted path's last key; dicts only on the way), so
# that no reader (`repro run`, `repro status`, the report, the frames) needs a check of its own.
FIELD_TYPES: tuple[tuple[str, Any, str], ...] = (
    ("wall_seconds", _seconds, "a number of seconds, 0 or more"),
    ("cpu_seconds", _seconds, "a number of seconds, 0 or more"),
    ("train_seconds", _seconds, "a number of seconds, 0 or more"),
    ("resumed_from_epoch", _count, "an epoch, 0 or more"),
    ("label", _text, "text"),
    ("data", _text, "text"),
    ("weights", _text, "text"),
    ("metrics.protocol", _text, "text"),
    ("provenance.device", _text, "text"),
    ("provenance.device_type", _text, "text"),
    ("provenance.executor", lambda v: isinstance(v, dict), "an object"),
    ("provenance.executor.host", _text, "text"),
    ("provenance.executor.name", _text, "text"),
    ("provenance.reproducibility", lambda v: isinstance(v, dict), "an object"),
    ("provenance.reproducibility.threads", lambda v: _count(v) and v >= 1, "a whole number of threads"),
    ("provenance.reproducibility.deterministic", lambda v: isinstance(v, bool), "true or false"),
    ("routing.expert_usage", _counts, "a list of counts"),
    (
        "routing.test_usage_by_class",
        lambda v: isinstance(v, list) and all(map(_counts, v)),
        "a list of lists of counts (classes x experts)",
    ),
    ("routing.routing_entropy", _number, "a number"),
)


def _field(record: dict[str, Any], path: str) -> tuple[bool, Any]:
    """(present, value) of a dotted path through nested objects."""
    value: Any = record
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return False, None
        value = value[key]
    return True, value


def _canonical(record: dict[str, Any]) -> str | None:
    """The record's JSON without `digest`, sorted, no spaces; None where it is not plain JSON data (NaN, NumPy)."""
    body = {k: v for k, v in record.items() if k != "digest"}
    try:
        return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def record_digest(record: dict[str, Any]) -> str:
    """sha256 of the record's canonical JSON (sorted keys, no spaces, NaN as null), without `digest`. A record read
    from JSON is plain data already and is dumped as it is; jsonable (in Python: most of a reused verify-all's
    record checks) only makes the others plain."""
    text = _canonical(record) or _canonical(jsonable(record))
    if text is None:  # a value neither JSON nor jsonable knows (an object, a set): once an AttributeError on None
        raise TypeError("a run record holds a value JSON cannot hold, so it has no canonical form to digest")
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def fraction_problem(value: Any, where: str, low_open: bool = False) -> str | None:
    """Why `value` is not a finite number in [0, 1] ((0, 1] with low_open), or None."""
    allowed = "a number in (0, 1]" if low_open else "a number in [0, 1]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{where} is {json.dumps(value)[:40]}, expected {allowed}"
    if not math.isfinite(value) or value < 0 or value > 1 or (low_open and value == 0):
        return f"{where} is {value}, expected {allowed}"
    return None


def shape_problem(record: Any) -> str | None:
    """Why parsed JSON is not a run record of this schema (an object with every required key), or None."""
    if not isinstance(record, dict):
        return f"it is a JSON {type(record).__name__}, expected an object"
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        return f"missing keys {missing}"
    if record["schema"] != RECORD_SCHEMA:
        return f"schema {record['schema']!r} is not {RECORD_SCHEMA}"
    return None


def content_problem(record: dict[str, Any], epochs: int) -> str | None:
    """Why a record of the right shape (shape_problem) does not hold a finished run of `epochs` epochs with
    possible values and its own digest, or None."""
    metrics, history = record["metrics"], record["history"]
    if not isinstance(metrics, dict) or not metrics:
        return f"metrics is {json.dumps(metrics)[:40]}, expected an object with {', '.join(UNIT_METRICS)}"
    for name in UNIT_METRICS:
        if name not in metrics:
            return f"metrics.{name} is missing"
        if problem := fraction_problem(metrics[name], f"metrics.{name}"):
            return problem
    if "chance" in metrics and (problem := fraction_problem(metrics["chance"], "metrics.chance", low_open=True)):
        return problem
    if not isinstance(history, list) or len(history) != epochs:
        size = f"a list of {len(history)}" if isinstance(history, list) else json.dumps(history)[:40]
        return f"history is {size}, expected a list of {epochs} epochs"
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            return f"history[{i}] is {json.dumps(entry)[:40]}, expected an object"
        for name in UNIT_HISTORY:
            if problem := fraction_problem(entry.get(name), f"history[{i}].{name}"):
                return problem
        if entry.get("tau") is not None and not _number(entry["tau"]):
            return f"history[{i}].tau is {json.dumps(entry['tau'])[:40]}, expected a number or null"
    peak = metrics.get("peak_epoch")
    if isinstance(peak, bool) or not isinstance(peak, int) or not 1 <= peak <= epochs:
        return f"metrics.peak_epoch is {json.dumps(peak)}, expected an epoch in 1..{epochs}"
    for name in ("provenance", "routing"):
        if name in record and not isinstance(record[name], dict):
            return f"{name} is {json.dumps(record[name])[:40]}, expected an object"
    for path, valid, expected in FIELD_TYPES:
        present, value = _field(record, path)
        if present and not valid(value):
            return f"{path} is {json.dumps(value)[:40]}, expected {expected}"
    if record["digest"] != record_digest(record):
        return "its digest does not match its content (edited after it was written)"
    return None


def record_threads(record: dict[str, Any]) -> int | None:
    """The intra-op threads a record says it trained on: its run facts (provenance.reproducibility), else, in a
    record written before those, the count its CPU device label names; None when it names none (a GPU's)."""
    provenance = record.get("provenance")
    if not isinstance(provenance, dict):
        return None
    facts = provenance.get("reproducibility")
    if isinstance(facts, dict) and isinstance(facts.get("threads"), int):
        return facts["threads"]
    found = re.search(r", (\d+) intra-op thread", str(provenance.get("device", "")))
    return int(found[1]) if found and provenance.get("device_type", "cpu") == "cpu" else None


def own_problem(record: Any, name: str) -> str | None:
    """Why `record` (parsed JSON, filed as <name>.json) is not a usable record of the run its own config names,
    or None: the shape, its hash against its file name, its seed and thread count against its own config, then
    its content at its config's epochs. What the plan would add (the config is the one planned today) is
    repro.execution.record_checks.record_problem's."""
    if problem := shape_problem(record):
        return problem
    config = record["config"]
    if not isinstance(config, dict):
        return f"config is {json.dumps(config)[:40]}, expected an object"
    if record["config_hash"] != name:
        return f"its config_hash {str(record['config_hash'])[:20]!r} is not its file name's {name!r}"
    trained, asked = record_threads(record), config.get("threads")
    if trained is not None and isinstance(asked, int) and trained != asked:
        return f"it was trained on {trained} intra-op thread(s) and its config names {asked}"
    if record["seed"] != config.get("seed"):
        return f"seed {record['seed']!r} is not the config's {config.get('seed')!r}"
    epochs = config.get("epochs")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        return f"config.epochs is {json.dumps(epochs)[:40]}, expected a whole number of epochs >= 1"
    return content_problem(record, epochs)


def parse_record(path: Path) -> tuple[Any, str | None]:
    """(the parsed JSON at `path`, None), (None, why it cannot be read or parsed), or (None, None): no file.
    Bounded (repro.core.jsonfile): a huge, deeply nested or special file (a FIFO) is a reason, never a hang."""
    try:
        return jsonfile.load(path, jsonfile.RECORD_MAX_BYTES), None
    except FileNotFoundError:
        return None, None
    except jsonfile.JsonUnreadable as exc:
        return None, exc.reason


@dataclass
class FolderRecords:
    """The run records of one results folder: the usable ones by hash, and the others with why."""

    folder: Path
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    unusable: dict[Path, str] = field(default_factory=dict)  # file -> why it is set aside


def record_files(results_dir: Path) -> list[Path]:
    """The record files of <results>/runs/, in name order: <hash>.json, not failures or Slurm markers."""
    folder = Path(results_dir) / RUNS_FOLDER
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.json") if "." not in p.stem)


def read_records(results_dir: Path) -> FolderRecords:
    """Every record of a results folder, read only: an unusable one (repro.execution.files would move it aside
    and redo its run) is left where it is, and listed with why."""
    out = FolderRecords(Path(results_dir) / RUNS_FOLDER)
    for path in record_files(results_dir):
        record, problem = parse_record(path)
        if problem is None and record is None:  # removed since it was listed
            continue
        problem = problem or own_problem(record, path.stem)
        if problem is None:
            out.records[path.stem] = record
        else:
            out.unusable[path] = problem
    return out
