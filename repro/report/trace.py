"""One number of a table traced back to where it came from (`repro trace TABLE ROW [COLUMN]`, report.html's trace
links). Torch-free, except that the paper's datasets' published archives are read through repro.data.sources.

A table's row is a manifest row (`dw_h128_moe`) or a comparison of two rows (`dw_h128`: the model row against its
baseline); its columns are the metrics stored for it (rows.<id>.<metric>, comparisons.<id>.<metric>). The trace
(Trace.items) gives the stored values, the claims that read the row, the run records behind it, the commits,
devices and container (the folder's action log, repro.results.actions), the data the runs trained on and the
command that reproduces the table. Nothing is decided here: every part is read from the folder.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from repro.plan.manifest import SHIPPED_MANIFESTS, Manifest
from repro.results.actions import Action, load_actions, owners, sha256_file
from repro.results.crate import RUN_HASH
from repro.results.measurements import (
    COMPARISON_METRICS,
    ROW_METRICS,
    ManifestResult,
    RUNS_FOLDER,
    profile_dir,
)
from repro.results.run_records import own_problem, parse_record


class TraceError(ValueError):
    """A row or column the table does not have: one line naming it and what the table has."""


@dataclass(frozen=True)
class TracedRun:
    row: str
    seed: int
    hash: str
    epochs: int | None
    accuracy: float | None
    record: str  # the record's path
    sha256: str  # of the record file ("" when it is missing)
    problem: str = ""  # why the record is not usable ("" when it is)
    commit: str = ""
    device: str = ""
    data: str = ""


@dataclass(frozen=True)
class Trace:
    table: str
    title: str
    profile: str
    row: str
    label: str
    kind: str  # "row" or "comparison"
    rows: list[str]  # the manifest rows the number is drawn from
    values: dict[str, Any]  # metric path -> the value results.json stores
    claims: list[dict[str, str]]  # {"claim", "status", "statement"}
    runs: list[TracedRun]
    commits: list[str]
    container: str
    data: list[str]
    command: str
    results: str  # results.json's path
    device: str  # where the table's numbers were computed (results.json's provenance)
    notes: list[str] = field(default_factory=list)
    # For a row a [[sensitivity]] table generates ("<row>__<alternative>"): the reading it varies, the row it
    # varies, and the claims that read that row, which its verdicts under the reading are about
    twin_of: list[dict[str, Any]] = field(default_factory=list)  # {"row", "reading", "base", "claims"}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def items(self) -> list[tuple[str, list[str]]]:
        """(heading, lines): the trace as the terminal and report.html show it."""
        runs = [
            f"{r.row} seed {r.seed}: {r.hash}, {r.epochs if r.epochs is not None else '?'} epochs, accuracy "
            + (f"{100 * r.accuracy:.2f}%" if r.accuracy is not None else "?")
            + (f"; UNUSABLE: {r.problem}" if r.problem else "")
            for r in self.runs
        ]
        files = [f"{r.record} sha256 {r.sha256 or '(missing)'}" for r in self.runs]
        number = [f"{self.table} / {self.label} ({self.kind} {self.row}), profile {self.profile}"]
        claims = [f"{c['claim']}: {c['status']}: {c['statement']}" for c in self.claims]
        twins = [
            f"{t['row']} is {t['base']} under the reading {t['reading']}: "
            + (
                f"the claims on {t['base']} ({', '.join(t['claims'])}) under it are in the report's readings section"
                if t["claims"]
                else f"no claim of this table reads {t['base']}"
            )
            for t in self.twin_of
        ]
        return [
            ("Number", number + [f"{path}: {value_text(v)}" for path, v in self.values.items()]),
            ("Claims", claims + twins or ["no claim of this table reads it"]),
            ("Run records", runs or ["none: the number is counted, not trained (FLOPs, rho)"]),
            ("Record files", files or [self.results]),
            ("Code", self.commits or ["not recorded"]),
            ("Device", sorted({r.device for r in self.runs if r.device}) or [str(self.device)]),
            ("Container", [self.container]),
            ("Data", self.data or ["none: no run trained for it"]),
            ("Reproduce", [self.command] + self.notes),
        ]


def value_text(value: Any, p: str = "p ", digits: int = 6, seed: str = "seed ") -> str:
    """A stored value in words: a paired gap (repro.claims.stats.GapStats) in pp, a mapping by seed or name, a
    number to `digits` significant digits (report.html: `p` "p = ", 4 digits, keys without "seed ")."""
    if isinstance(value, dict) and "mean" in value:
        sd = f" ± {100 * value['sd']:.2f}" if value.get("sd") is not None else ""
        p_text = f", {p}{value['p']:.3g}" if value.get("p") is not None else ""
        return f"{100 * value['mean']:+.2f}{sd} pp over {value.get('n', '?')} seeds{p_text}"
    if isinstance(value, dict):
        return ", ".join(
            f"{seed if str(k).isdigit() else ''}{k}: {value_text(v, p, digits, seed)}" for k, v in value.items()
        )
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


def row_ids(manifest: Manifest, result: ManifestResult) -> list[str]:
    """Every row and comparison the table has a number for, in the manifest's order."""
    kinds = {path.split(".")[1] for path in result.measured.metrics} | set(result.measured.details.get("runs") or {})
    return [r.id for r in manifest.rows if r.id in kinds] + [c.id for c in manifest.comparisons if c.id in kinds]


def _resolve(manifest: Manifest, result: ManifestResult, row: str) -> tuple[str, str, list[str]]:
    """(kind, label, the manifest rows behind it) of a row or comparison id; TraceError naming those there are."""
    known = row_ids(manifest, result)
    for r in manifest.rows:
        if r.id == row and row in known:
            return "row", r.label, [r.id]
    for c in manifest.comparisons:
        if c.id == row and row in known:
            return "comparison", c.label, [c.row, c.baseline]
    from repro.core.schema import closest

    raise TraceError(
        f"table {manifest.id} has no row or comparison '{row}'{closest(row, known)} at profile "
        f"{result.profile}; it has: {', '.join(known)}"
    )


def _values(result: ManifestResult, kind: str, row: str, column: str | None) -> dict[str, Any]:
    prefix = f"{'rows' if kind == 'row' else 'comparisons'}.{row}."
    values = {p: v for p, v in sorted(result.measured.metrics.items()) if p.startswith(prefix)}
    if column is None:
        return values
    vocabulary = ROW_METRICS if kind == "row" else COMPARISON_METRICS
    if prefix + column in values:
        return {prefix + column: values[prefix + column]}
    have = ", ".join(p.rsplit(".", 1)[1] for p in values) or "none"
    if column not in vocabulary:
        raise TraceError(f"'{column}' is not a metric of a {kind}; this one has: {have}")
    missing = result.measured.missing.get(prefix + column)
    raise TraceError(
        f"{kind} {row} of {result.manifest_id} has no {column}"
        + (f" ({missing})" if missing else "")
        + f"; it has: {have}"
    )


def _read(path: Path, run_hash: str, records: dict[str, Any]) -> tuple[Any, str, str]:
    """(the record, why it is unusable or "", the file's sha256 or "") of a record file, read once per `records`."""
    if not RUN_HASH.fullmatch(run_hash):  # results.json is a file like any other: a path there is not a hash
        return None, f"{run_hash[:40]!r} is not a run's hash", ""
    if run_hash not in records and path.is_symlink():
        records[run_hash] = (None, "it is a symbolic link, not a record file", "")
    if run_hash not in records:
        record, problem = parse_record(path)
        if record is None and problem is None:
            problem = "the file is missing"
        problem = problem or own_problem(record, run_hash) or ""
        records[run_hash] = (record, problem, sha256_file(path) if path.is_file() else "")
    return records[run_hash]


def _run(results_dir: Path, row: str, summary: Any, records: dict[str, Any]) -> TracedRun:
    path = Path(results_dir) / RUNS_FOLDER / f"{summary.hash}.json"
    record, problem, digest = _read(path, summary.hash, records)
    prov = record.get("provenance", {}) if isinstance(record, dict) and not problem else {}
    epochs = len(record["history"]) if isinstance(record, dict) and not problem else None
    return TracedRun(
        row,
        summary.seed,
        summary.hash,
        epochs,
        summary.accuracy,
        str(path),
        digest,
        problem,
        str(prov.get("git_commit", "")),
        str(prov.get("device", summary.device or "")),
        summary.data or "",
    )


def _data(result: ManifestResult, runs: list[TracedRun]) -> list[str]:
    """The data checks stored with the table (with the published archives), else what the runs say they read."""
    out = []
    checks = result.data_checks()
    for c in checks:
        out.append(c.summary())
        from repro.data.sources import dataset_source

        try:
            source = dataset_source(c.dataset)
        except (KeyError, OSError):
            continue
        out += [
            f"{a.file}: {a.url}" + (f" md5 {a.md5}" if a.md5 else " (no checksum published)") for a in source.archives
        ]
    if not checks:
        out += sorted({r.data for r in runs if r.data})
    return out


def _container(actions: list[Action], table: str) -> str:
    path = f"{table}/results.json"
    action = owners(actions, [path]).get(path)
    if action is None:
        return "not recorded: no command in actions.json wrote results.json"
    image = action.container.get("image")
    where = (
        f"image {image}"
        if image
        else "a container that does not name its image ($REPRO_IMAGE unset)"
        if action.container
        else "none: it ran outside a container"
    )
    return f"{where} (`{action.command_line}`, {action.ended})"


def read_as(manifest: Manifest, profile: str) -> list[str]:
    """The options a command needs to read this table as it was read here: a manifests folder, a profiles file or a
    readings file of one's own (none for the shipped ones). Without them the table, or its profile, is not found."""
    out = []
    folder = Path(manifest.path).parent.resolve()  # absolute, as the line may be read far from where it was written
    if manifest.path and folder != SHIPPED_MANIFESTS.resolve():
        out += ["--manifests", str(folder)]
    if profile in manifest.profile_files:
        out += ["--profiles", str(Path(manifest.profile_files[profile]).resolve())]
    if manifest.own_readings is not None:
        out += ["--readings", str(Path(manifest.own_readings.path).resolve())]
    return out


def trace(
    results_dir: Path,
    manifest: Manifest,
    result: ManifestResult,
    row: str,
    column: str | None = None,
    records: dict[str, Any] | None = None,
    actions: list[Action] | None = None,
) -> Trace:
    """The trace of one row (or one metric of it) of a table's stored result; TraceError on an unknown one.
    `records` (by hash) and `actions` (the folder's log): what the traces of one page share, read once."""
    records = {} if records is None else records
    actions = load_actions(profile_dir(results_dir, result.profile)) if actions is None else actions
    kind, label, rows = _resolve(manifest, result, row)
    values = _values(result, kind, row, column)
    runs = [
        _run(results_dir, r, s, records) for r in rows for s in sorted(result.measured.runs(r), key=lambda s: s.seed)
    ]
    claims = [
        {"claim": v.claim, "status": v.status_text, "statement": v.statement}
        for v in result.verdicts
        if set(v.rows) & ({row} | set(rows))
    ]
    by_id = {r.id: r for r in manifest.rows}
    twin_of = [
        {
            "row": r,
            "reading": by_id[r].reading,
            "base": by_id[r].base,
            "claims": [v.claim for v in result.verdicts if by_id[r].base in v.rows],
        }
        for r in rows
        if by_id[r].reading
    ]
    made_at = [*(r.commit for r in runs), str(result.provenance.get("git_commit", ""))]
    commits = list(dict.fromkeys(c for c in made_at if c))
    command = shlex.join(
        ["repro", "run", manifest.id, *read_as(manifest, result.profile)]
        + ["--profile", result.profile, "--results-dir", str(results_dir)]
    )
    reuse = "(reuses the run records present; to train them again, move the record files above aside first)"
    notes = [reuse] if runs else []
    return Trace(
        manifest.id,
        manifest.title,
        result.profile,
        row,
        label,
        kind,
        rows,
        values,
        claims,
        runs,
        commits,
        _container(actions, manifest.id),
        _data(result, runs),
        command,
        str(profile_dir(results_dir, result.profile) / manifest.id / "results.json"),
        str(result.provenance.get("device", "not recorded")),
        notes,
        twin_of,
    )
