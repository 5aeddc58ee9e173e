"""Is a run record or checkpoint usable? Each check returns why not (a sentence), or None.

A record must hold the keys, the shapes and the value ranges the tables read from it
(repro.results.RunSummary), and every other field a command reads has the type in FIELD_TYPES
(`repro status`: the executor and the seconds; the report: the seconds, the device, the routing
counts), so that no reader needs a check of its own. It must belong to the run it is filed under
(config and hash), and
carry the digest it was written with: sha256 of its canonical JSON without the digest,
so a hand edit to any value is detected. Values are checked before the digest, so a
record whose numbers are impossible says which number; a plausible edit says "digest".
A record without a digest is refused: no record at a current config hash
(TRAINING_VERSION 3) was written before digests, so a missing one means an edit.
A config key added to RunConfig later reads as its default where an older record lacks it
(repro.recipes.LATER_DEFAULTS); a record must have trained on the thread count its run
names (its run facts say so; an older one's CPU device label does).

This module decides what a usable record is for every command: `repro run` sets an unusable one
aside and redoes the run, `repro status` counts it pending, the report's compute section skips it.
Only content that is wrong is damage. A file that cannot be read (no permission, an I/O error) and a
record a newer version wrote (a higher `schema`) raise LeftAlone instead: the file stays where it is,
and its run is neither reused nor trained again here, with one line naming the file.
Torch-free: the checkpoint check takes the state torch.load returned.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from repro.fsutil import jsonable
from repro.recipes import LATER_DEFAULTS, RunConfig

RECORD_SCHEMA = 2  # 2: records carry a digest
REQUIRED_KEYS = ("schema", "config", "config_hash", "seed", "metrics", "history", "provenance", "digest")
CHECKPOINT_KEYS = ("model", "optimizer", "scheduler", "rng", "history", "epoch", "elapsed")
UNIT_METRICS = ("accuracy", "final_accuracy", "peak_accuracy")  # fractions in [0, 1]
UNIT_HISTORY = ("test_accuracy", "train_accuracy")


class LeftAlone(Exception):
    """A run's record or checkpoint that is not damage and is not used here: it cannot be read, or a newer version
    wrote it. Never set aside; its run is skipped, and the message (one line) names the file and why."""

    @classmethod
    def unreadable(cls, path: Path, cause: OSError) -> LeftAlone:
        return cls(f"cannot read {path}: {cause.strerror or cause}; it is left as it is and its run is skipped")


def newer_schema(record: Any) -> bool:
    schema = record.get("schema") if isinstance(record, dict) else None
    return isinstance(schema, int) and not isinstance(schema, bool) and schema > RECORD_SCHEMA


def record_digest(record: dict[str, Any]) -> str:
    """sha256 of the record's canonical JSON (sorted keys, no spaces, NaN as null), without `digest`."""
    body = {k: v for k, v in jsonable(record).items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


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


# Where present, each field a command reads has this type (the dotted path's last key; dicts only on the way).
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
    ("routing.test_usage_by_class", lambda v: isinstance(v, list) and all(map(_counts, v)),
     "a list of lists of counts (classes x experts)"),
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


def _fraction(value: Any, where: str, low_open: bool = False) -> str | None:
    """Why `value` is not a finite number in [0, 1] ((0, 1] with low_open), or None."""
    allowed = "a number in (0, 1]" if low_open else "a number in [0, 1]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{where} is {json.dumps(value)[:40]}, expected {allowed}"
    if not math.isfinite(value) or value < 0 or value > 1 or (low_open and value == 0):
        return f"{where} is {value}, expected {allowed}"
    return None


def record_problem(record: Any, config: dict[str, Any], config_hash: str, epochs: int) -> str | None:
    """Why `record` (parsed JSON) is not the finished record of the run (config, hash, epochs), or None."""
    if not isinstance(record, dict):
        return f"it is a JSON {type(record).__name__}, expected an object"
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        return f"missing keys {missing}"
    if record["schema"] != RECORD_SCHEMA:
        return f"schema {record['schema']!r} is not {RECORD_SCHEMA}"
    stored = {**LATER_DEFAULTS, **record["config"]} if isinstance(record["config"], dict) else record["config"]
    if record["config_hash"] != config_hash or stored != config:
        return "its config differs from the run's (another run's record under this name)"
    trained, asked = record_threads(record), config.get("threads", LATER_DEFAULTS["threads"])
    if trained is not None and trained != asked:
        return (f"it was trained on {trained} intra-op thread(s) and this run trains on {asked} "
                "(a record of another thread count, from before thread counts named a run)")
    if record["seed"] != config.get("seed"):
        return f"seed {record['seed']!r} is not the config's {config.get('seed')!r}"
    metrics, history = record["metrics"], record["history"]
    if not isinstance(metrics, dict) or not metrics:
        return f"metrics is {json.dumps(metrics)[:40]}, expected an object with {', '.join(UNIT_METRICS)}"
    for name in UNIT_METRICS:
        if name not in metrics:
            return f"metrics.{name} is missing"
        if problem := _fraction(metrics[name], f"metrics.{name}"):
            return problem
    if "chance" in metrics and (problem := _fraction(metrics["chance"], "metrics.chance", low_open=True)):
        return problem
    if not isinstance(history, list) or len(history) != epochs:
        size = f"a list of {len(history)}" if isinstance(history, list) else json.dumps(history)[:40]
        return f"history is {size}, expected a list of {epochs} epochs"
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            return f"history[{i}] is {json.dumps(entry)[:40]}, expected an object"
        for name in UNIT_HISTORY:
            if problem := _fraction(entry.get(name), f"history[{i}].{name}"):
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


def read_record(path: Path, cfg: RunConfig) -> tuple[dict[str, Any] | None, str | None]:
    """(the usable record of `cfg` at `path`, None), (None, why it is unusable), or (None, None) when there is none.
    Raises LeftAlone when the file cannot be read or a newer version wrote it. Reads only:
    repro.execution.files.load_record sets an unusable record aside."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # no permission, an I/O error: the content may be fine
        raise LeftAlone.unreadable(path, exc) from None
    try:
        record = json.loads(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"not valid JSON ({exc})"
    if newer_schema(record):
        raise LeftAlone(f"{path} was written by a newer version (record schema {record['schema']}; this one reads "
                        f"{RECORD_SCHEMA}): not reused, and left as it is; its run is skipped")
    problem = record_problem(record, jsonable(cfg.to_dict()), cfg.hash, cfg.epochs)
    return (record, None) if problem is None else (None, problem)


def checkpoint_problem(state: Any, config_hash: str, epochs: int) -> str | None:
    """Why `state` (what torch.load returned) cannot resume the run, or None."""
    if not isinstance(state, dict):
        return f"it holds a {type(state).__name__}, expected a dict of training state"
    missing = [k for k in CHECKPOINT_KEYS if k not in state]
    if missing:
        return f"missing keys {missing}"
    if state.get("config_hash", config_hash) != config_hash:  # untagged: written before checkpoints named their run
        return f"it belongs to run {state['config_hash']}, not {config_hash}"
    epoch = state["epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 1 <= epoch <= epochs:
        return f"epoch is {epoch!r}, expected an epoch in 1..{epochs}"
    if not isinstance(state["history"], list) or len(state["history"]) != epoch:
        return f"its history does not hold its {epoch} epochs"
    if not isinstance(state["model"], dict):
        return "model is not a state dict"
    return None
