"""Is a run record or checkpoint usable? Each check returns why not (a sentence), or None.

A record must hold the keys, the shapes and the value ranges the tables read from it
(repro.results.measurements.RunSummary), belong to the run it is filed under (config and hash), and
carry the digest it was written with: sha256 of its canonical JSON without the digest,
so a hand edit to any value is detected. Values are checked before the digest, so a
record whose numbers are impossible says which number; a plausible edit says "digest".
A record without a digest is refused: no record at a current config hash
(TRAINING_VERSION 3) was written before digests, so a missing one means an edit.
A config key added to RunConfig later reads as its default where an older record lacks it
(repro.plan.run_config.LATER_DEFAULTS); a record must have trained on the thread count its run
names (its run facts say so; an older one's CPU device label does).

The record's own checks (shape, values, digest) are repro.results.run_records', which a reader of a results
folder without a plan applies too; this module adds the planned run's config and hash. It decides what a
usable record is for every command that plans runs: `repro run` sets an unusable one
aside and redoes the run, `repro status` counts it pending, the report's compute section skips it.
Torch-free: the checkpoint check takes the state torch.load returned.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any

from repro.core import jsonfile
from repro.core.fsutil import jsonable
from repro.plan.run_config import LATER_DEFAULTS, RunConfig
from repro.results.run_records import (  # noqa: F401  (RECORD_SCHEMA, record_digest, LeftAlone: the writer's too)
    RECORD_SCHEMA,
    LeftAlone,
    content_problem,
    newer_schema,
    record_digest,
    record_threads,
    shape_problem,
)

CHECKPOINT_KEYS = ("model", "optimizer", "scheduler", "rng", "history", "epoch", "elapsed")


def record_problem(record: Any, config: dict[str, Any], config_hash: str, epochs: int) -> str | None:
    """Why `record` (parsed JSON) is not the finished record of the run (config, hash, epochs), or None."""
    if problem := shape_problem(record):
        return problem
    stored = {**LATER_DEFAULTS, **record["config"]} if isinstance(record["config"], dict) else record["config"]
    if record["config_hash"] != config_hash or stored != config:
        return "its config differs from the run's (another run's record under this name)"
    trained, asked = record_threads(record), config.get("threads", LATER_DEFAULTS["threads"])
    if trained is not None and trained != asked:
        return (
            f"it was trained on {trained} intra-op thread(s) and this run trains on {asked} "
            "(a record of another thread count, from before thread counts named a run)"
        )
    if record["seed"] != config.get("seed"):
        return f"seed {record['seed']!r} is not the config's {config.get('seed')!r}"
    return content_problem(record, epochs)


def read_record(path: Path, cfg: RunConfig) -> tuple[dict[str, Any] | None, str | None]:
    """(the usable record of `cfg` at `path`, None), (None, why it is unusable), or (None, None) when there is none.
    Raises LeftAlone when the file cannot be opened or a newer version wrote it: neither is damage. Content too
    large or too deep, and a file that is not a regular one (a FIFO), are unusable. Reads only:
    repro.execution.files.load_record sets an unusable record aside."""
    try:
        record = jsonfile.load(path, jsonfile.RECORD_MAX_BYTES)
    except FileNotFoundError:
        return None, None
    except jsonfile.JsonUnreadable as exc:
        if not exc.damaged:  # no permission, an I/O error: the content may be fine
            raise LeftAlone.unreadable(path, exc.strerror) from None
        return None, exc.reason
    if newer_schema(record):
        raise LeftAlone(
            f"{path} was written by a newer version (record schema {record['schema']}; this one reads "
            f"{RECORD_SCHEMA}): not reused, and left as it is; its run is skipped"
        )
    problem = record_problem(record, jsonable(cfg.to_dict()), cfg.hash, cfg.epochs)
    return (record, None) if problem is None else (None, problem)


def special_file_problem(path: Path) -> str | None:
    """Why the file at `path` is not a regular one (a FIFO, a folder), or None; OSError when it cannot be looked at."""
    mode = path.stat().st_mode
    return None if stat.S_ISREG(mode) else f"it is {'a FIFO' if stat.S_ISFIFO(mode) else 'not a regular file'}"


# torch.load(weights_only=True) refusing a global: its message is a paragraph; the global is what matters.
_REFUSED_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def load_error(exc: BaseException) -> str:
    """A checkpoint's load failure in one short line: the global a forged one names (refused without running
    it, as torch's weights_only loader does), else the error's first line."""
    text = str(exc)
    if "Weights only load failed" in text and (found := _REFUSED_GLOBAL.search(text)):
        return f"it names {found[1]}, which a checkpoint never holds; refused without running it"
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first[:160]}"


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
