"""What a manifest run produces, as data: metric paths, measurements, results.json. Torch-free.

A metric lives at a path: ``rows.<row id>.<metric>`` or ``comparisons.<comparison id>.<metric>``.
Paths are built and taken apart here only (`row_metric`, `comparison_metric`, `parse_metric_path`),
so the vocabulary below is the one list of what can be measured. A value is a number, a per-seed
mapping {seed: value}, or a dict of statistics (repro.claims.stats.GapStats.to_dict()).

The per-seed run summaries a report draws from (`details["runs"][row]`) are `RunSummary`.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Iterable, Literal

from repro.core import jsonfile
from repro.core.fsutil import FolderWriter, cannot_create_in
from repro.data.check_result import DataCheck
from repro.spec.profiles import Profile
from repro.core.schema import Problems, from_dict

Status = Literal["reproduced", "not reproduced", "inconclusive", "not run"]
STABLE = 0.8  # a verdict that fewer resamples of its seeds give is called unstable (repro.claims.stability)

# What a row can measure: FLOPs (repro.measure.flop_check), accuracy (repro.measure.accuracy),
# latency and operator counts (repro.measure.latency).
ROW_METRICS = frozenset(
    {
        "total_macs",
        "backbone_macs",
        "head_macs",
        "routed_macs",
        "rho",
        "rho_all_ops",
        "head_share",
        "accuracy",
        "late_drop",
        "chance",
        # per seed, test accuracy after the first epoch (Section 4.5's epoch-1 accuracy)
        "epoch1_accuracy",
        # per seed, of the head's test-time top-1 routing (Section 5.3): the most used expert's share of the test
        # images, and the usage's entropy over log E (1: every expert equally often)
        "routing_top_share",
        "routing_balance",
        # per seed, the fewest experts that take 90% of the test images, and the experts that take at least 1% of the
        # last training epoch's dispatches (Section 5: test-time routing on 1-3 experts while training keeps 8/8 active)
        "test_experts_90",
        "train_experts_active",
        # per seed, H(p_bar) / log E of the head's routing probabilities over its last training epoch (the record's
        # routing_entropy): "routing entropy" read as the entropy of p (the reading "routing-entropy")
        "routing_p_entropy",
        # per seed, of the last training epoch: the head's dispatch balance; and over a backbone's MoE layers (Section
        # 4.6) their number, the least-used expert's share of its layer, the lowest and highest layer balance
        "train_routing_balance",
        "moe_layers",
        "layer_min_share",
        "layer_balance_min",
        "layer_balance_max",
        "latency_ms",
        "op_calls",
        "model_latency_ms",
        "backbone_latency_ms",
        "host_syncs",
        "kernel_launches",
        "num_experts",
        # per seed, of a backbone MoE's routers (Table 5): the largest summed per-epoch relative shift of a layer's
        # router from where it started, and the share of layers whose router moved at all (0: none did)
        "router_shift",
        "routers_moved",
    }
)
# What a comparison derives from its two rows.
COMPARISON_METRICS = frozenset({"flops_reduction", "flops_ratio", "gap", "slowdown", "rho", "model_slowdown"})
# details[READINGS_DETAIL]: the rows the readings table varied, counted again (repro.measure.reading_counts).
READINGS_DETAIL = "readings"
# Fractions: a paper value printed in % is divided by 100 before it is compared with one of these.
FLOP_SUMMARY = ("total_macs", "backbone_macs", "head_macs", "routed_macs", "rho", "rho_all_ops", "head_share")

Kind = Literal["rows", "comparisons"]


def row_metric(row_id: str, metric: str) -> str:
    if metric not in ROW_METRICS:
        raise KeyError(f"unknown row metric '{metric}'; known: {', '.join(sorted(ROW_METRICS))}")
    return f"rows.{row_id}.{metric}"


def comparison_metric(comparison_id: str, metric: str) -> str:
    if metric not in COMPARISON_METRICS:
        raise KeyError(f"unknown comparison metric '{metric}'; known: {', '.join(sorted(COMPARISON_METRICS))}")
    return f"comparisons.{comparison_id}.{metric}"


def parse_metric_path(path: str) -> tuple[Kind, str, str]:
    """(kind, id, metric) of a metric path; ValueError naming what was expected."""
    parts = path.split(".")
    if len(parts) != 3 or parts[0] not in ("rows", "comparisons"):
        raise ValueError(f"expected 'rows.<id>.<metric>' or 'comparisons.<id>.<metric>', got {path!r}")
    kind, ident, metric = parts
    vocabulary = ROW_METRICS if kind == "rows" else COMPARISON_METRICS
    if metric not in vocabulary:
        raise ValueError(f"unknown metric '{metric}' in {path!r}; allowed: {', '.join(sorted(vocabulary))}")
    return kind, ident, metric  # type: ignore[return-value]


@dataclass(frozen=True)
class Measured:
    """What the measurers of one table measured: handed on, never written into (a stage that adds to it
    makes a new one: `combine`, `with_details`, derive_comparisons)."""

    metrics: dict[str, Any] = field(default_factory=dict)  # metric path -> value
    missing: dict[str, str] = field(default_factory=dict)  # metric path -> why not measured
    problems: list[str] = field(default_factory=list)  # failures that make the run not complete
    details: dict[str, Any] = field(default_factory=dict)  # per-row records shown in reports

    def row(self, row_id: str, metric: str) -> Any:
        return self.metrics.get(row_metric(row_id, metric))

    def comparison(self, comparison_id: str, metric: str) -> Any:
        return self.metrics.get(comparison_metric(comparison_id, metric))

    def runs(self, row_id: str) -> list[RunSummary]:
        return [RunSummary.from_dict(d) for d in self.details.get("runs", {}).get(row_id) or []]

    @classmethod
    def combine(cls, parts: Iterable[Measured]) -> Measured:
        """Several measurers' measurements of one table as one (a detail's entries merged by key)."""
        out = Measuring()
        for part in parts:
            out.metrics.update(part.metrics)
            out.missing.update(part.missing)
            out.problems += part.problems
            for key, value in part.details.items():
                out.details.setdefault(key, {}).update(value)
        return out.done()

    def with_metrics(self, metrics: dict[str, Any]) -> Measured:
        return replace(self, metrics={**self.metrics, **metrics})

    def with_details(self, details: dict[str, Any]) -> Measured:
        return replace(self, details={**self.details, **details})


@dataclass
class Measuring:
    """A measurer's own measurements while it measures; `done()` hands them on as a frozen Measured."""

    metrics: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def row(self, row_id: str, metric: str) -> Any:
        return self.metrics.get(row_metric(row_id, metric))

    def set_row(self, row_id: str, metric: str, value: Any) -> None:
        self.metrics[row_metric(row_id, metric)] = value

    def set_comparison(self, comparison_id: str, metric: str, value: Any) -> None:
        self.metrics[comparison_metric(comparison_id, metric)] = value

    def done(self) -> Measured:
        return Measured(dict(self.metrics), dict(self.missing), list(self.problems), dict(self.details))


def derive_comparisons(comparisons: Any, measured: Measured) -> Measured:
    """The measurements with the metrics of each comparison (id, row, baseline) that follow from its two rows'
    FLOP metrics."""
    derived: dict[str, Any] = {}
    for comp in comparisons:
        rho = measured.row(comp.row, "rho")
        if rho is not None:
            derived[comparison_metric(comp.id, "rho")] = rho
        total, base = measured.row(comp.row, "total_macs"), measured.row(comp.baseline, "total_macs")
        if total is not None and base is not None:
            derived[comparison_metric(comp.id, "flops_ratio")] = total / base
            derived[comparison_metric(comp.id, "flops_reduction")] = 1 - total / base
    return measured.with_metrics(derived)


@dataclass(frozen=True)
class RunSummary:
    """What reports and figures need from one run record, with the hash to trace it back."""

    seed: int
    hash: str
    accuracy: float
    final_accuracy: float
    peak_accuracy: float
    test_accuracy_by_epoch: list[float]
    train_accuracy_by_epoch: list[float]
    tau_by_epoch: list[float | None]
    routing: dict[str, Any] = field(default_factory=dict)
    weights: str | None = None
    data: str | None = None
    wall_seconds: float | None = None
    device: str | None = None  # provenance.device: "cpu: <processor>, N intra-op thread(s)" or "cuda: <GPU>"
    chance: float | None = None
    threads: int | None = None  # the run's facts (provenance.reproducibility); None in records written before
    deterministic: bool | None = None
    # Each backbone MoE layer's router shift summed over the epochs (repro.train.routing.router_shift); 0.0: never moved
    router_shift: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> RunSummary:
        metrics, history = record["metrics"], record["history"]
        facts = record["provenance"].get("reproducibility") or {}
        return cls(
            seed=record["seed"],
            hash=record["config_hash"],
            accuracy=metrics["accuracy"],
            final_accuracy=metrics["final_accuracy"],
            peak_accuracy=metrics["peak_accuracy"],
            test_accuracy_by_epoch=[h["test_accuracy"] for h in history],
            train_accuracy_by_epoch=[h["train_accuracy"] for h in history],
            tau_by_epoch=[h.get("tau") for h in history],
            routing=record.get("routing", {}),
            weights=record.get("weights"),
            data=record.get("data"),
            wall_seconds=record.get("wall_seconds"),
            device=record["provenance"].get("device"),
            chance=metrics.get("chance"),
            threads=facts.get("threads"),
            deterministic=facts.get("deterministic"),
            router_shift=_router_shifts(history),
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSummary:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _router_shifts(history: list[dict[str, Any]]) -> dict[str, float]:
    """Each backbone MoE layer's router shift summed over the epochs that recorded one."""
    out: dict[str, float] = {}
    for epoch in history:
        for name, layer in (epoch.get("routing_layers") or {}).items():
            if "router_shift" in layer:
                out[name] = out.get(name, 0.0) + layer["router_shift"]
    return out


@dataclass(frozen=True)
class Verdict:
    """One claim decided (repro.claims.evaluate): never written by hand, never written into (Holm's adjustment
    makes new ones: repro.results.family.holm_adjust)."""

    claim: str
    statement: str
    section: str
    scope: str
    status: Status
    evidence: str  # one line: measured vs reported, and the rule applied
    failed: list[str] = field(default_factory=list)  # which parts of the rule failed
    measured: dict[str, Any] = field(default_factory=dict)
    reported: dict[str, Any] = field(default_factory=dict)
    paper_scale: bool = True
    note: str = ""
    seeds_needed: int | None = None  # for 80% power at the paper's effect size, where it gives one
    p_value: float | None = None  # the significance test's p, where the verdict rests on one
    p_holm: float | None = None  # Holm-adjusted over a report's empirical tests (repro.results.family.holm_adjust)
    # Where the reported number the verdict is judged against is printed: a claim whose reference
    # appears only in the AI-written explainer is counted apart from the paper's (repro.claims.headline).
    source: str = "method-and-results"
    # Set on a verdict a table shows but another decides (Manifest.shows, repro.claims.across): that table's id.
    decided_in: str = ""
    # For an analytic claim: "printed" (a number the paper prints, matched by a count), "property" (a bound or
    # property that follows from the paper's architecture) or "self-test" (of this artifact's own code, shown but
    # not counted as a reproduction of the paper); repro.claims.headline groups by it.
    kind: str = ""
    # The datasets (titles) of a decided measured claim whose files fail their published checksum, accepted
    # with --allow-unverified-data: every place that shows the verdict says so beside it (`status_text`).
    unverified_data: list[str] = field(default_factory=list)

    @property
    def status_text(self) -> str:
        """The status, with 'on unverified data' when the evidence trained on files that fail their checksums."""
        return f"{self.status} (on unverified data)" if self.unverified_data else self.status

    # The rule that decided it (the manifest's `rule`), the rows that rule reads (named, through comparisons or
    # in metric paths: repro.claims.references.claim_rows), and the allowance it judged with where it has one
    # (repro.claims.core.Outcome.tolerance). Empty in results written before they were stored.
    rule: str = ""
    rows: list[str] = field(default_factory=list)
    tolerance: float | None = None
    # The claims that imply this one (Claim.derived_from): decided and shown, counted apart (repro.claims.headline).
    derived_from: list[str] = field(default_factory=list)
    # For a decided empirical verdict: the share of bootstrap resamples of the seeds that give it again
    # (repro.claims.stability); None where there is none (not run, inconclusive, not empirical).
    stability: float | None = None

    @property
    def unstable(self) -> bool:
        """Fewer than STABLE of its seeds' resamples give it (a verdict with no stability is not unstable)."""
        return self.stability is not None and self.stability < STABLE

    @property
    def stability_text(self) -> str:
        """'0.93', or '0.71, unstable: below 0.8' beside the verdict; '' where it has none."""
        if self.stability is None:
            return ""
        text = f"{self.stability:.2f}"
        return text + (
            f", unstable: fewer than {STABLE:.0%} of resamples of the seeds give this verdict" if self.unstable else ""
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ManifestResult:
    """One table's measurements at one profile and, once its claims are decided (repro.claims.decide, which
    returns a new result), their verdicts."""

    manifest_id: str
    title: str
    paper_ref: str
    paper_table: str
    profile: str
    measured: Measured
    verdicts: list[Verdict]
    provenance: dict[str, Any]
    # The profile as run (for this table: repro.spec.profiles.Profile.for_manifest): what the measurements are
    # evidence for, kept with them so that a user profile is still known when the report is rendered
    # later. None: a result written before it was stored.
    profile_settings: Profile | None = None
    # The analytic claims under each alternative reading (repro.claims.under_readings.ClaimReadings), decided with the
    # verdicts from the counts in details[READINGS_DETAIL]; written to results.json, decided again when read.
    readings: list[Any] = field(default_factory=list)
    # Verdicts of claims another table decides and this one shows (Manifest.shows): derived when the results are
    # decided together (repro.claims.decide), never counted here, not written to results.json.
    shown: list[Verdict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.measured.problems

    def data_checks(self) -> list[DataCheck]:
        """The content checks of the datasets the table trained on, made before it trained (repro.data.check)."""
        stored = (self.measured.details.get("data_checks") or {}).get("checks") or []
        return [DataCheck.from_stored(c) for c in stored if isinstance(c, dict)]

    @property
    def device_type(self) -> str:
        """'cuda' or 'cpu': where the measurements ran (recorded as data, never parsed from text)."""
        return str(self.provenance.get("device_type", "cpu"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": self.manifest_id,
            "title": self.title,
            "paper_ref": self.paper_ref,
            "paper_table": self.paper_table,
            "profile": self.profile,
            "metrics": self.measured.metrics,
            "missing": self.measured.missing,
            "problems": self.measured.problems,
            "details": self.measured.details,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "provenance": self.provenance,
            "profile_settings": asdict(self.profile_settings) if self.profile_settings else None,
            "readings": [r.to_dict() for r in self.readings],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ManifestResult:
        measured = Measured(d["metrics"], d["missing"], d["problems"], d["details"])
        return cls(
            d["manifest"],
            d["title"],
            d["paper_ref"],
            d["paper_table"],
            d["profile"],
            measured,
            [Verdict(**v) for v in d["verdicts"]],
            d["provenance"],
            _profile(d.get("profile_settings")),
        )


def _profile(data: dict[str, Any] | None) -> Profile | None:
    """The stored profile, typed again; one that no longer validates (an older schema) counts as unknown."""
    if not data:
        return None
    problems = Problems()
    profile = from_dict(Profile, data, "profile_settings", problems)
    return None if problems.items else profile


@dataclass
class FlopCheck:
    """Every distinct model of a set of manifests counted three ways (repro.pipeline.flop_check)."""

    models: list[tuple[str, str]] = field(default_factory=list)  # (manifest id, row id), first place seen
    failures: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # model -> its problems

    def add(self, manifest_id: str, row_id: str, problems: list[str]) -> None:
        self.models.append((manifest_id, row_id))
        if problems:
            self.failures[(manifest_id, row_id)] = list(problems)

    @property
    def passed(self) -> int:
        return len(self.models) - len(self.failures)

    @property
    def problems(self) -> list[str]:
        return [f"{m}/{r}: {p}" for (m, r), ps in self.failures.items() for p in ps]


MIN_FREE_BYTES = 256 << 20  # records are kilobytes, but a ResNet-18 checkpoint with Adam state is ~130 MB


class ResultsDirError(RuntimeError):
    """The results directory cannot hold results: not a folder, not writable, or no space."""


RUNS_FOLDER = "runs"  # <results>/runs/: the run records every profile and table shares (repro.execution.files)


def written_folders(results_dir: Path, profile: str | None = None, manifest_ids: Iterable[str] = ()) -> list[Path]:
    """The folders a command writes in: the run records', and the profile's, its figures' and each table's."""
    folders = [results_dir / RUNS_FOLDER]
    if profile is not None:
        folders += [profile_dir(results_dir, profile), profile_dir(results_dir, profile) / "figures"]
        folders += [profile_dir(results_dir, profile) / m for m in manifest_ids]
    return folders


def check_results_dir(
    results_dir: Path, min_free: int = MIN_FREE_BYTES, profile: str | None = None, manifest_ids: Iterable[str] = ()
) -> None:
    """Make sure results can be written before any work starts, in every folder the command writes
    (written_folders); the message names the folder and says what to change."""
    import shutil

    where = f"results directory {results_dir}"
    for folder in [results_dir, *written_folders(results_dir, profile, manifest_ids)]:
        if (problem := broken_link(folder)) is not None:
            raise ResultsDirError(problem)
    for folder in written_folders(results_dir, profile, manifest_ids):
        if (link := _link_below(results_dir, folder)) is not None:  # FolderWriter would refuse each file there
            raise ResultsDirError(
                f"{link} is a symbolic link (to {os.readlink(link)}); a results folder's files "
                "are written only inside it: replace the link with a folder of its own"
            )
    if results_dir.exists() and not results_dir.is_dir():
        raise ResultsDirError(f"the {where} is a file, not a folder; pass --results-dir a folder")
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsDirError(
            f"cannot write in the {where}: {exc.strerror or exc}; "
            "choose a writable folder with --results-dir or $REPRO_RESULTS"
        ) from None
    _check_writable(results_dir, results_dir)
    for folder in written_folders(results_dir, profile, manifest_ids):
        _check_writable(folder, results_dir)
    free = shutil.disk_usage(results_dir).free
    if free < min_free:
        raise ResultsDirError(
            f"the {where} has {free / 2**20:.0f} MiB free; at least {min_free / 2**20:.0f} MiB "
            "are needed for run records and checkpoints"
        )


def broken_link(path: Path) -> str | None:
    """What is wrong with the first symbolic link on `path` (itself or a folder above it) that leads nowhere: to
    a target that does not exist, or round a loop of links; None if there is none."""
    for part in [path, *path.parents]:
        if part.is_symlink() and not part.exists():
            try:
                part.stat()
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return (
                        f"{part} is a symbolic link that leads back to itself (through {os.readlink(part)}); "
                        "replace it with a folder, or choose another with --results-dir"
                    )
            return (
                f"{part} is a symbolic link to {os.readlink(part)}, which does not exist; create "
                "that folder (or mount its disk), or choose another with --results-dir"
            )
    return None


def _link_below(results_dir: Path, folder: Path) -> Path | None:
    """The first symbolic link on the way from `results_dir` (itself allowed) down to `folder`, or None."""
    path = results_dir
    for part in folder.relative_to(results_dir).parts:
        path = path / part
        if path.is_symlink():
            return path
    return None


def _check_writable(folder: Path, results_dir: Path) -> None:
    """A file can be created in `folder`, or (not there yet) in the nearest folder above it that is."""
    while not folder.exists() and folder != results_dir:
        folder = folder.parent
    if not folder.is_dir():
        raise ResultsDirError(f"{folder} is a file where the results need a folder; move it away")
    if (why := cannot_create_in(folder)) is not None:
        fix = (
            "choose a writable folder with --results-dir or $REPRO_RESULTS"
            if folder == results_dir
            else "make it writable, or choose another folder with --results-dir"
        )
        raise ResultsDirError(f"cannot write in {folder}: {why}; {fix}")


def profile_dir(results_dir: Path, profile: str) -> Path:
    """Everything one profile produced (tables, claims, figures, report.md); run records are shared."""
    return results_dir / profile


def profiles_present(results_dir: Path) -> list[str]:
    """Profiles with at least one table's results in `results_dir`."""
    if not results_dir.is_dir():
        return []
    return sorted(
        p.name for p in results_dir.iterdir() if p.is_dir() and p.name != RUNS_FOLDER and any(p.glob("*/results.json"))
    )


def result_path(results_dir: Path, profile: str, manifest_id: str) -> Path:
    return profile_dir(results_dir, profile) / manifest_id / "results.json"


def save_result(result: ManifestResult, results_dir: Path) -> Path:
    path = result_path(results_dir, result.profile, result.manifest_id)
    FolderWriter(results_dir).write_json(path, result.to_dict())
    return path


class ResultUnusable(ValueError):
    """A results.json that cannot be used: `damaged` (content that is wrong: it is set aside and rebuilt from the
    run records, repro.pipeline.rebuild_result) or not (it cannot be read: permission, I/O)."""

    def __init__(self, path: Path, reason: str, damaged: bool = True) -> None:
        self.path, self.reason, self.damaged = path, reason, damaged
        super().__init__(f"{path}: {reason}")


# The keys results.json holds (ManifestResult.to_dict), with the JSON type each must have.
RESULT_KEYS = {
    "manifest": str,
    "title": str,
    "paper_ref": str,
    "paper_table": str,
    "profile": str,
    "metrics": dict,
    "missing": dict,
    "problems": list,
    "details": dict,
    "verdicts": list,
    "provenance": dict,
}


def result_problem(data: Any, profile: str, manifest_id: str) -> str | None:
    """Why `data` (parsed results.json) is not the result of the table at the profile, or None."""
    if not isinstance(data, dict):
        return f"it is a JSON {type(data).__name__}, expected an object"
    missing = [k for k in RESULT_KEYS if k not in data]
    if missing:
        return f"missing keys {missing}"
    for key, kind in RESULT_KEYS.items():
        if not isinstance(data[key], kind):
            expected = "text" if kind is str else f"a JSON {kind.__name__}"
            return f"{key} is {json.dumps(data[key])[:40]}, expected {expected}"
    if (data["manifest"], data["profile"]) != (manifest_id, profile):
        return f"it is the result of {data['manifest']} at profile {data['profile']}, not of {manifest_id} at {profile}"
    if not all(isinstance(v, dict) for v in data["verdicts"]):
        return "verdicts holds an entry that is not an object"
    return None


def load_result(results_dir: Path, profile: str, manifest_id: str) -> ManifestResult | None:
    """The table's stored result, None when it has none; ResultUnusable when its results.json cannot be used."""
    path = result_path(results_dir, profile, manifest_id)
    try:
        data = jsonfile.load(path, jsonfile.RESULT_MAX_BYTES)
    except FileNotFoundError:
        return None
    except jsonfile.JsonUnreadable as exc:  # too large or deep, not a regular file, not JSON; or no permission
        raise ResultUnusable(path, exc.reason, damaged=exc.damaged) from None
    if (problem := result_problem(data, profile, manifest_id)) is not None:
        raise ResultUnusable(path, problem)
    try:
        return ManifestResult.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:  # a verdict of another shape
        raise ResultUnusable(path, f"it does not read as a table's result ({type(exc).__name__}: {exc})") from None
