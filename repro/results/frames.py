"""A results folder as pandas DataFrames: every run record, every epoch, every verdict. Torch-free.

    runs(folder)        one row per usable run record (<results>/runs/<hash>.json)
    history(folder)     one row per run and epoch
    verdicts(folder)    one row per claim and profile, as each table's results.json stores it, Holm over the profile
    row_seeds(folder)   one row per profile, table, row and seed: the run behind each number of a table's row
    row_stats(frame)    per profile, table and row: seeds, mean and s.d. of accuracy over seeds, chance, rho

Built from the files alone: the records (read and checked by repro.results.run_records; an unusable one is
left out and listed in the frame's attrs["unusable"]) and each table's results.json, which names the runs
behind each row's seeds (details["runs"]). The report's per-row numbers are `row_stats` of `row_seeds` of
one table's result (repro.report.table_rows), so a notebook and the report agree by construction.
Column names and units: docs/results-data.md. pandas is imported when a frame is asked for.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from repro.data.check_result import MD5_VERIFIED
from repro.core import jsonfile
from repro.results.family import holm_adjust
from repro.core.registry import closest
from repro.results.measurements import RUNS_FOLDER, ManifestResult, Verdict, profile_dir, profiles_present
from repro.results.run_records import FolderRecords, read_records, record_threads

if TYPE_CHECKING:
    import pandas as pd

RUN_COLUMNS = (
    "run_hash",
    "profile",
    "table",
    "row",
    "seed",
    "dataset",
    "backbone",
    "head",
    "reading",
    "data",
    "rho",
    "accuracy",
    "final_accuracy",
    "peak_accuracy",
    "peak_epoch",
    "protocol",
    "chance",
    "epochs",
    "device",
    "device_type",
    "threads",
    "deterministic",
    "torch",
    "commit",
    "version",
    "cpu_seconds",
    "wall_seconds",
    "time",
)
HISTORY_COLUMNS = (
    "run_hash",
    "epoch",
    "train_loss",
    "train_accuracy",
    "test_loss",
    "test_accuracy",
    "aux_loss",
    "seconds",
    "routing_entropy",
    "dropped",
    "forced",
    "tau",
    "k",
    "teacher_phase",
    "cluster_warmup",
    "active_mean",
    "sparsity_weight",
)
VERDICT_COLUMNS = (
    "profile",
    "table",
    "claim",
    "scope",
    "section",
    "status",
    "stability",
    "rule",
    "rows",
    "measured",
    "reported",
    "tolerance",
    "p_value",
    "p_holm",
    "seeds_needed",
    "paper_scale",
    "source",
    "statement",
    "evidence",
    "failed",
    "note",
)
ROW_SEED_COLUMNS = (
    "profile",
    "table",
    "row",
    "seed",
    "run_hash",
    "accuracy",
    "final_accuracy",
    "peak_accuracy",
    "chance",
    "rho",
    "reading",
    "device",
    "threads",
    "deterministic",
)
ROW_STAT_COLUMNS = ("profile", "table", "row", "seeds", "accuracy_mean", "accuracy_sd", "chance", "rho")
READING_COLUMNS = (
    "profile",
    "table",
    "claim",
    "kind",
    "reading",
    "alternative",
    "label",
    "status",
    "value",
    "chosen_status",
    "chosen_value",
    "changes",
    "evidence",
)
# Number columns: typed as numbers even where a value is missing (NaN), so that every format keeps their type.
NUMBERS = frozenset(
    {
        "seed",
        "rho",
        "accuracy",
        "final_accuracy",
        "peak_accuracy",
        "peak_epoch",
        "chance",
        "epochs",
        "threads",
        "version",
        "cpu_seconds",
        "wall_seconds",
        *HISTORY_COLUMNS[1:],  # every column of an epoch but the run's hash
        "tolerance",
        "p_value",
        "p_holm",
        "seeds_needed",
        "seeds",
        "accuracy_mean",
        "accuracy_sd",
        "stability",
    }
)
# A frame with no rows still has each column's dtype (bool, int64, float64, text), as a frame with rows has it: a
# column of object dtype used as a mask selected columns, not rows, and left a frame of none.
BOOLS = frozenset({"deterministic", "paper_scale", "changes"})
INTEGERS = frozenset({"seed", "peak_epoch", "epochs", "threads", "version", "epoch", "seeds"})
SEPARATOR = ";"  # joins the uses of a record shared by several rows, and a verdict's rows
DATA_KINDS = {"synthetic": "synthetic", "digits": "stand-in"}  # a run's config.data -> the data column


class FolderError(ValueError):
    """A results folder that cannot be read as one: the message names the folder or file and what is wrong."""


@dataclass(frozen=True)
class Use:
    """A record read by a table's row at one seed (results.json details["runs"])."""

    profile: str
    table: str
    row: str
    seed: int


@dataclass
class Folder:
    """What the frames are built from: the usable records and every table's stored result."""

    path: Path
    records: FolderRecords
    results: list[ManifestResult] = field(default_factory=list)  # by profile, then table
    # Each table's claims under the readings, as its results.json stores them (plain data: the claims layer
    # that decides them sits above this one), by (profile, table).
    readings: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    # Alternative id -> "<reading>/<alternative>" of the readings the manifests that decided the folder were read
    # with (repro.claims.decided_folder: a file of one's own included); the shipped readings' fill in the rest.
    alternatives: dict[str, str] = field(default_factory=dict)

    def uses(self) -> dict[str, list[Use]]:
        """Run hash -> every row (and seed) whose numbers came from it."""
        out: dict[str, list[Use]] = {}
        for result in self.results:
            for row, summaries in sorted((result.measured.details.get("runs") or {}).items()):
                for s in summaries:
                    out.setdefault(s["hash"], []).append(Use(result.profile, result.manifest_id, row, s["seed"]))
        return out


def read_folder(results_dir: str | Path, profile: str | None = None) -> Folder:
    """The records and stored results of a folder (only `profile`'s results, when given). FolderError when the
    folder is missing, is one profile's folder or the run records' folder inside a results folder, or a results.json
    is not one; a warning when `profile` has no results here (the frames are then empty, as for a filter that
    matches nothing), naming the profiles that have."""
    path = Path(results_dir)
    if not path.exists():  # a typo: "not a folder of results" read as a folder of the wrong kind
        raise FolderError(f"{path} does not exist")
    if not path.is_dir():
        raise FolderError(f"{path} is a file, not a results folder")
    _refuse_a_folder_inside(path)
    if profile is not None and profile not in (present := profiles_present(path)):
        warnings.warn(
            f"no results of profile '{profile}' in {path}{closest(profile, present)}: the frame is empty; profiles "
            f"with results: {', '.join(present) or 'none'}",
            stacklevel=4,  # the caller of runs(), verdicts(), ...
        )
    folder = Folder(path, read_records(path))
    for name in [profile] if profile is not None else profiles_present(path):
        for file in sorted(profile_dir(path, name).glob("*/results.json")):
            result, readings = _read_result(file)
            folder.results.append(result)
            folder.readings[(result.profile, result.manifest_id)] = readings
    return folder


def _refuse_a_folder_inside(path: Path) -> None:
    """A results folder holds runs/ and a folder per profile; given one of those instead, every frame came out
    empty with no word of why."""
    if (path / RUNS_FOLDER).is_dir():
        return
    name = path.resolve().name
    above = path.parent if path.name not in ("", "..") else path.resolve().parent  # as given, unless "." or ".."
    if any(path.glob("*/results.json")):
        raise FolderError(
            f"{path} is the folder of profile '{name}' inside a results folder: give the results folder above it, "
            f"{above} (its runs/ holds the run records), and the profile '{name}'"
        )
    if name == RUNS_FOLDER and any(path.glob("*.json")):
        raise FolderError(
            f"{path} is the run records' folder of a results folder: give the results folder above it, {above}"
        )


def _read_result(file: Path) -> tuple[ManifestResult, list[dict[str, Any]]]:
    try:
        data = jsonfile.load(file, jsonfile.RESULT_MAX_BYTES)  # bounded: a FIFO or a nesting bomb is one line
        readings = data.get("readings") or []
        if not isinstance(readings, list) or not all(isinstance(r, dict) for r in readings):
            raise TypeError("readings is not a list of objects")
        return ManifestResult.from_dict(data), readings
    except jsonfile.JsonUnreadable as exc:
        raise FolderError(f"{file} cannot be read: {exc.reason}") from None
    except (OSError, ValueError) as exc:  # ValueError: a value of another shape
        raise FolderError(f"{file} cannot be read: {exc}") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise FolderError(f"{file} is not a table's results.json: {type(exc).__name__} {exc}") from None


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...], folder: Folder | None = None) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(columns))
    for column in NUMBERS.intersection(columns):
        frame[column] = pd.to_numeric(frame[column])
    if frame.empty:
        frame = frame.astype({c: _empty_dtype(c) for c in columns})
    if folder is not None:
        frame.attrs["unusable"] = {str(p): why for p, why in folder.records.unusable.items()}
    return frame


def _empty_dtype(column: str) -> str | type:
    if column in BOOLS:
        return bool
    if column in INTEGERS:
        return "int64"
    return "float64" if column in NUMBERS else str


def _folder(source: str | Path | Folder, profile: str | None) -> Folder:
    return source if isinstance(source, Folder) else read_folder(source, profile)


def _hashes(folder: Folder, profile: str | None) -> list[str]:
    """The records a frame covers: every usable one, or those `profile`'s tables used."""
    if profile is None:
        return sorted(folder.records.records)
    return sorted(
        h
        for h, uses in folder.uses().items()
        if h in folder.records.records and any(u.profile == profile for u in uses)
    )


# --------------------------------------------------------------------------- runs
def runs(results_dir: str | Path | Folder, profile: str | None = None) -> pd.DataFrame:
    """One row per usable run record of the folder (of `profile`'s tables, when given); RUN_COLUMNS."""
    folder = _folder(results_dir, profile)
    uses = folder.uses()
    results = {(r.profile, r.manifest_id): r for r in folder.results}
    rows = [
        _run_row(
            h,
            folder.records.records[h],
            [u for u in uses.get(h, []) if profile in (None, u.profile)],
            results,
            folder.alternatives,
        )
        for h in _hashes(folder, profile)
    ]
    return _frame(rows, RUN_COLUMNS, folder)


def _run_row(
    h: str, record: dict[str, Any], uses: list[Use], results: dict, alternatives: dict[str, str]
) -> dict[str, Any]:
    config, metrics, prov = record["config"], record["metrics"], record["provenance"]
    facts = prov.get("reproducibility") or {}
    tables = [results[(u.profile, u.table)] for u in uses]
    threads = record_threads(record)
    return {
        "run_hash": h,
        "profile": _joined(u.profile for u in uses),
        "table": _joined(u.table for u in uses),
        "row": _joined(u.row for u in uses),
        "seed": record["seed"],
        "dataset": config.get("dataset"),
        "backbone": _name(config.get("backbone")),
        "head": _name(config.get("head")),
        "reading": _joined(dict.fromkeys(r for u in uses if (r := reading_of(u.row, alternatives)))),
        "data": data_kind(record, tables),
        "rho": next((v for u, t in zip(uses, tables) if (v := t.measured.row(u.row, "rho")) is not None), None),
        "accuracy": metrics["accuracy"],
        "final_accuracy": metrics["final_accuracy"],
        "peak_accuracy": metrics["peak_accuracy"],
        "peak_epoch": metrics.get("peak_epoch"),
        "protocol": metrics.get("protocol"),
        "chance": metrics.get("chance"),
        "epochs": len(record["history"]),
        "device": prov.get("device"),
        "device_type": prov.get("device_type"),
        "threads": threads if threads is not None else config.get("threads"),
        "deterministic": facts.get("deterministic", config.get("deterministic")),
        "torch": facts.get("torch"),
        "commit": prov.get("git_commit"),
        "version": config.get("version"),
        "cpu_seconds": record.get("cpu_seconds"),
        "wall_seconds": record.get("wall_seconds"),
        "time": prov.get("time"),
    }


def _joined(values: Iterable[str]) -> str | None:
    values = list(values)
    return SEPARATOR.join(values) if values else None


def _name(component: Any) -> str | None:
    return component.get("name") if isinstance(component, dict) else None


def reading_of(row: str, alternatives: dict[str, str] | None = None) -> str | None:
    """'<reading>/<alternative>' of a row that trains an alternative reading ('<row>__<alternative>'), by
    `alternatives` (Folder.alternatives: the readings the manifests were read with) else repro/spec/readings.toml's;
    None for any other row."""
    if "__" not in row:
        return None
    alternative = row.rsplit("__", 1)[1]
    return (alternatives or {}).get(alternative) or _alternatives().get(alternative, f"?/{alternative}")


@lru_cache(maxsize=1)
def _alternatives() -> dict[str, str]:
    from repro.spec.readings import shipped_readings

    out: dict[str, str] = {}
    for reading in shipped_readings():
        for alt in reading.alternatives:
            out[alt.id] = f"{reading.id}/{alt.id}" if alt.id not in out else f"{out[alt.id]};{reading.id}/{alt.id}"
    return out


def data_kind(record: dict[str, Any], tables: list[ManifestResult]) -> str:
    """synthetic, stand-in (the digit scans), or for the paper's datasets verified, unchecked or unverified: unverified
    when a data check of a table that used the run lists files that fail their checksum, or, with no check stored,
    when the run was allowed such files (--allow-unverified-data); unchecked when its checks compared no published
    checksum (Tiny-ImageNet publishes none, and an ImageNet folder is only checked as torchvision extracts it), so
    that a folder of any images in the right layout is not called verified; verified when every check matched the
    published md5s."""
    config = record["config"]
    kind = DATA_KINDS.get(config.get("data"))
    if kind is not None:
        return kind
    checks = [
        c
        for t in tables
        for c in (t.measured.details.get("data_checks") or {}).get("checks") or []
        if isinstance(c, dict) and c.get("dataset") == config.get("dataset")
    ]
    if checks:
        if any(c.get("unverified") for c in checks):
            return "unverified"
        return "verified" if all(c.get("checksum") == MD5_VERIFIED for c in checks) else "unchecked"
    return "unverified" if record["provenance"].get("allow_unverified_data") else "verified"


# --------------------------------------------------------------------------- history
def history(results_dir: str | Path | Folder, profile: str | None = None) -> pd.DataFrame:
    """One row per run and epoch of the records `runs` covers; HISTORY_COLUMNS (a key an epoch lacks: empty)."""
    folder = _folder(results_dir, profile)
    rows = [
        {"run_hash": h, **{c: entry.get(c) for c in HISTORY_COLUMNS[1:]}}
        for h in _hashes(folder, profile)
        for entry in folder.records.records[h]["history"]
    ]
    return _frame(rows, HISTORY_COLUMNS, folder)


# --------------------------------------------------------------------------- verdicts
def verdicts(results_dir: str | Path | Folder, profile: str | None = None) -> pd.DataFrame:
    """One row per claim and profile, as each table's results.json stores it, with `p_holm` adjusted over the
    profile's family (repro.results.family, the rule the report applies); VERDICT_COLUMNS."""
    folder = _folder(results_dir, profile)
    rows = []
    for name in dict.fromkeys(r.profile for r in folder.results):
        stored = [(r.manifest_id, v) for r in folder.results if r.profile == name for v in r.verdicts]
        adjusted, _ = holm_adjust(v for _, v in stored)
        # the report's p_holm; the note stays as stored
        rows += [_verdict_row(name, table, replace(v, p_holm=a.p_holm)) for (table, v), a in zip(stored, adjusted)]
    return _frame(rows, VERDICT_COLUMNS, folder)


def _verdict_row(profile: str, table: str, v: Verdict) -> dict[str, Any]:
    return {
        "profile": profile,
        "table": table,
        "claim": v.claim,
        "scope": v.scope,
        "section": v.section,
        "status": v.status,
        "stability": v.stability,
        "rule": v.rule or None,
        "rows": SEPARATOR.join(v.rows) or None,
        "measured": json.dumps(v.measured, sort_keys=True) if v.measured else None,
        "reported": json.dumps(v.reported, sort_keys=True) if v.reported else None,
        "tolerance": v.tolerance,
        "p_value": v.p_value,
        "p_holm": v.p_holm,
        "seeds_needed": v.seeds_needed,
        "paper_scale": v.paper_scale,
        "source": v.source,
        "statement": v.statement,
        "evidence": v.evidence,
        "failed": json.dumps(v.failed) if v.failed else None,
        "note": v.note or None,
    }


def readings(results_dir: str | Path | Folder, profile: str | None = None) -> pd.DataFrame:
    """One row per claim and alternative reading it was decided under (docs/readings.md), with the verdict as
    chosen beside it, so that "which verdicts change under this reading?" is a filter on `changes`;
    READING_COLUMNS. A trained alternative's `value` is the measured number on the rows it trained."""
    folder = _folder(results_dir, profile)
    rows = []
    for (name, table), entries in folder.readings.items():
        for entry in entries:
            chosen = entry.get("chosen") or {}
            for alt in entry.get("alternatives") or []:
                rows.append(
                    {
                        "profile": name,
                        "table": table,
                        "claim": entry.get("claim"),
                        "kind": entry.get("kind"),
                        "reading": alt.get("reading"),
                        "alternative": alt.get("alternative"),
                        "label": alt.get("label"),
                        "status": alt.get("status"),
                        "value": alt.get("value") or None,
                        "chosen_status": chosen.get("status"),
                        "chosen_value": chosen.get("value") or None,
                        "changes": alt.get("status") not in (chosen.get("status"), "not run"),
                        "evidence": alt.get("evidence") or None,
                    }
                )
    return _frame(rows, READING_COLUMNS, folder)


# --------------------------------------------------------------------------- rows and seeds
def result_row_seeds(result: ManifestResult) -> pd.DataFrame:
    """One table's rows by seed, from its stored run summaries (each the record's numbers); ROW_SEED_COLUMNS."""
    return _frame(_row_seed_rows(result), ROW_SEED_COLUMNS)


def _row_seed_rows(result: ManifestResult, alternatives: dict[str, str] | None = None) -> list[dict[str, Any]]:
    rows = []
    for row in sorted(result.measured.details.get("runs") or {}):
        for s in sorted(result.measured.runs(row), key=lambda s: s.seed):
            rows.append(
                {
                    "profile": result.profile,
                    "table": result.manifest_id,
                    "row": row,
                    "seed": s.seed,
                    "run_hash": s.hash,
                    "accuracy": s.accuracy,
                    "final_accuracy": s.final_accuracy,
                    "peak_accuracy": s.peak_accuracy,
                    "chance": s.chance,
                    "rho": result.measured.row(row, "rho"),
                    "reading": reading_of(row, alternatives),
                    "device": s.device,
                    "threads": s.threads,
                    "deterministic": s.deterministic,
                }
            )
    return rows


def row_seeds(results_dir: str | Path | Folder, profile: str | None = None) -> pd.DataFrame:
    """Every table's rows by seed (`result_row_seeds` of each results.json); ROW_SEED_COLUMNS."""
    folder = _folder(results_dir, profile)
    rows = [r for result in folder.results for r in _row_seed_rows(result, folder.alternatives)]
    return _frame(rows, ROW_SEED_COLUMNS, folder)


def row_stats(seeds: pd.DataFrame) -> pd.DataFrame:
    """Per profile, table and row of a `row_seeds` frame: seeds, the mean and sample s.d. (ddof=1; empty for one
    seed) of accuracy over them, chance and rho; ROW_STAT_COLUMNS, in the frame's order. A folder is refused, and so
    is a `runs` frame whose records rows share (their uses joined by ';' in one cell would be grouped as one row)."""
    import pandas as pd

    if not isinstance(seeds, pd.DataFrame):
        given = repr(str(seeds)) if isinstance(seeds, (str, Path)) else "folder"
        raise TypeError(f"row_stats takes a row_seeds frame, got {type(seeds).__name__}: row_stats(row_seeds({given}))")
    if seeds.empty:
        return _frame([], ROW_STAT_COLUMNS)
    keys = ["profile", "table", "row"]
    missing = [c for c in (*keys, "seed", "accuracy", "chance", "rho") if c not in seeds]
    if missing:
        raise ValueError(f"row_stats takes a row_seeds frame; this one has no column {', '.join(missing)}")
    joined = sum(int(seeds[c].astype("string").str.contains(SEPARATOR, regex=False).fillna(False).sum()) for c in keys)
    if joined:
        raise ValueError(
            f"row_stats takes a row_seeds frame (one row per use of a record); this one joins several uses in a cell "
            f"with '{SEPARATOR}', as `runs` does for a record that rows share: row_stats(row_seeds(folder))"
        )
    grouped = seeds.groupby(["profile", "table", "row"], sort=False)
    out = grouped.agg(
        seeds=("seed", "size"),
        accuracy_mean=("accuracy", "mean"),
        accuracy_sd=("accuracy", "std"),
        chance=("chance", "first"),
        rho=("rho", "first"),
    )
    return out.reset_index()[list(ROW_STAT_COLUMNS)]


__all__ = [
    "FolderError",
    "Folder",
    "read_folder",
    "runs",
    "history",
    "verdicts",
    "readings",
    "row_seeds",
    "result_row_seeds",
    "row_stats",
    "reading_of",
    "data_kind",
]
