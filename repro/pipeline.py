"""The one orchestrator: manifest -> plan -> measurements -> metrics -> claims -> tables on disk.

A table's plan (repro.plan.table_plan), built once where the command starts, comes first; each
measure a row can ask for ("flops", "accuracy", "latency") has a measurer in repro.measure.MEASURERS,
which reads the plan and returns what it measured; comparisons derive metrics from pairs of rows;
claims are decided on the measurements (repro.claims), which returns the decided result. Each step
hands the next a new, frozen value. Everything a table shows is saved in results.json next to it,
with its provenance. `TableRun` runs tables one after another (`repro run`, `repro verify-all`);
`flop_check` counts every distinct model of every manifest three ways; repro.report.summary writes
report.md.
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from repro.core.devices import resolve_device
from repro.core.fsutil import WriteFailed
from repro.core.progress import Progress
from repro.core.settings import DEFAULT_CACHE, Settings
from repro.core.schema import SchemaError, read_toml
from repro.execution.options import TableOptions
from repro.execution.runs import RunCounts
from repro.plan.manifest import Manifest, parse_manifest
from repro.plan.table_plan import TablePlan
from repro.measure import MEASURERS
from repro.measure.measurer import Context
from repro.measure.flop_check import row_key, row_summary
from repro.measure.reading_counts import count_readings
from repro.results.provenance import provenance
from repro.report.render import write_manifest_outputs
from repro.claims import decide_table
from repro.claims.across import tables_named
from repro.results.measurements import (
    READINGS_DETAIL,
    FlopCheck,
    ManifestResult,
    Measured,
    comparison_metric,
    derive_comparisons,
    load_result,
    row_metric,
    save_result,
)
from repro.results.timings import phase


def make_context(plan: TablePlan, options: TableOptions, progress: Progress | None = None) -> Context:
    """How a table's plan is measured under `options`."""
    device = resolve_device(options.device)
    # On a CPU as many runs at once as the cores hold at the threads each trains on (its config's).
    threads = plan.profile.run_threads()
    jobs = options.jobs or (1 if device.startswith("cuda") else max(1, (os.cpu_count() or 1) // threads))
    return Context(
        options.profile,
        options.results_dir,
        device,
        jobs,
        options.data_dir,
        progress,
        options.executor,
        options.data.allow_unverified,
        options.data.workers,
        options.remeasure_latency,
        settings=options.settings,
    )


def comparison_metrics(manifest: Manifest, measured: Measured) -> Measured:
    """The measurements with each comparison's metrics that can be derived from its two rows' metrics."""
    return derive_comparisons(manifest.comparisons, measured)


@dataclass(frozen=True)
class TableMeasurement:
    """One table's measurements and claims, with the runs behind them."""

    result: ManifestResult
    runs: RunCounts | None = None  # when the table trains: trained here, reused, trained by another process
    submitted: Mapping[str, str] = field(default_factory=dict)  # run hash -> Slurm job, not awaited (--no-wait)


def run_manifest(plan: TablePlan, ctx: Context) -> TableMeasurement:
    """Measure the plan, count its readings, decide its claims: each a new value handed to the next."""
    manifest, parts, runs = plan.manifest, [], None
    submitted: dict[str, str] = {}
    for measure in sorted(manifest.measures()):
        got = MEASURERS.get(measure).builder(plan, ctx)
        parts.append(got.measured)
        runs, submitted = got.runs or runs, {**submitted, **got.submitted}
    measured = comparison_metrics(manifest, Measured.combine(parts))
    # The threads the runs computed on (each record's), not this process's current setting.
    made_on = provenance(ctx.device, plan.profile.run_threads(), allow_unverified_data=ctx.allow_unverified_data)
    measurements = ManifestResult(
        manifest.id,
        manifest.title,
        manifest.paper_ref,
        manifest.paper_table,
        plan.profile_name,
        measured,
        [],
        made_on,
        plan.profile,
    )
    # the analytic claims' rows under each alternative reading, kept with the measurements
    if (counted := count_readings(manifest, measurements, ctx.settings.cache)) is not None:
        measurements = dataclasses.replace(measurements, measured=measured.with_details({READINGS_DETAIL: counted}))
    with phase("claims", manifest.id):
        return TableMeasurement(decide_table(manifest, measurements, stored_tables(manifest, ctx)), runs, submitted)


def stored_tables(manifest: Manifest, ctx: Context) -> dict[str, tuple[Manifest, ManifestResult | None]]:
    """The other manifests this one's claims read or its `shows` name (repro.claims.across), from the folder it
    was loaded from and under the readings it was, each with its result stored in the results folder at this
    profile (None: not run yet)."""
    folder, out = Path(manifest.path).parent, {}
    for table in tables_named(manifest):
        try:
            other = parse_manifest(read_toml(folder / f"{table}.toml"), folder / f"{table}.toml", manifest.own_readings)
        except SchemaError:
            continue  # an invalid or missing manifest: what the claims need from it is `not run`
        out[table] = (other, load_result(ctx.results_dir, ctx.profile_name, table))
    return out


def execute(plan: TablePlan, ctx: Context) -> tuple[TableMeasurement, list[Path]]:
    """Run one table's plan and write its results.json, tables and claims; none of them while some of its runs
    are submitted and not awaited: a table is never written from missing results."""
    table = run_manifest(plan, ctx)
    if table.submitted:
        return table, []
    with phase("tables", plan.id):
        save_result(table.result, ctx.results_dir)
        files = write_manifest_outputs(plan.manifest, table.result, ctx.results_dir)
    return table, files


@dataclass
class TableOutcome:
    """What running one table came to."""

    manifest_id: str
    result: ManifestResult | None = None
    files: list[Path] = field(default_factory=list)
    run_counts: RunCounts | None = None  # when the table trains
    needs_data: str = ""  # a dataset or pretrained weights file is missing or refused: nothing was trained
    error: str = ""  # the table failed to run (repro.pipeline.describe_exception)
    submitted: dict[str, str] = field(default_factory=dict)  # run hash -> Slurm job, not awaited: no table written

    @property
    def problem(self) -> str:
        """Why the table did not regenerate cleanly ('' when it did, or when it waits for submitted runs)."""
        if self.needs_data or self.error:
            return self.needs_data or self.error
        if self.result is not None and self.result.measured.problems:
            problems = self.result.measured.problems
            return f"{len(problems)} problem(s), first: {problems[0]}"
        return ""


@dataclass
class TableRun:
    """Tables run one after another under one set of options; `current` names the table running (for an
    interrupt)."""

    options: TableOptions
    progress: Progress | None = None
    current: str | None = None

    def run(
        self,
        plans: list[TablePlan],
        on_start: Callable[[TablePlan, Context], None] | None = None,
        on_done: Callable[[TableOutcome], None] | None = None,
    ) -> list[TableOutcome]:
        """Run each table's plan (built once, before: repro.plan.table_plan); a table that fails is an outcome, and
        the next one still runs. An interrupt (KeyboardInterrupt) and a file the disk refuses (WriteFailed)
        propagate, with `current` naming the table they stopped."""
        from repro.data.layout import DataRefused, DatasetMissing
        from repro.models.weights import WeightsMissing
        from repro.train.memory import MemoryRefused

        outcomes = []
        for plan in plans:
            manifest = plan.manifest
            self.current = manifest.id
            out = TableOutcome(manifest.id)
            try:
                ctx = make_context(plan, self.options, self.progress)
                if on_start is not None:
                    on_start(plan, ctx)
                table, out.files = execute(plan, ctx)
                out.run_counts, out.submitted = table.runs, dict(table.submitted)
                if not table.submitted:
                    out.result = table.result
            except (DatasetMissing, WeightsMissing) as exc:
                out.needs_data = f"{manifest.id} needs data that is not here; nothing was trained.\n{exc}"
            except (DataRefused, MemoryRefused) as exc:  # data malformed or failing its checksums; a run too big
                out.needs_data = f"{manifest.id}: nothing was trained: {exc}"
            except WriteFailed:
                raise  # the disk refuses files: every next table would fail the same way
            except Exception as exc:  # one broken table must not hide the others
                out.error = describe_exception(exc)
            outcomes.append(out)
            if on_done is not None:
                on_done(out)
        self.current = None
        return outcomes


def rebuild_result(
    plan: TablePlan, results_dir: Path, device: str = "auto", settings: Settings = Settings()
) -> ManifestResult:
    """The table's results.json and tables written again from the run records already in `results_dir`, training
    nothing (a run without a record is a problem of the table, as a failed run is); FLOP counts and latencies
    are measured again on this machine. For a results.json that was damaged (repro.results.measurements.ResultUnusable).
    `settings`: the command's (its cache)."""
    options = TableOptions(plan.profile_name, results_dir, device, jobs=1, settings=settings)
    table, _ = execute(plan, dataclasses.replace(make_context(plan, options), train=False))
    return table.result


def decidable_claims(results: list[ManifestResult], device: str) -> dict[str, str]:
    """--strict: the claims ("table/claim") the profile and device could decide, with their verdicts; a claim they
    cannot decide counts where it has a verdict other than not run all the same."""
    found: dict[str, str] = {}
    for result in results:
        kind = result.profile_settings.evidence if result.profile_settings else "pipeline"
        for v in result.verdicts:
            undecidable = (v.scope != "analytic" and kind not in ("reduced", "paper")) or (
                v.scope == "gpu" and not device.startswith("cuda")
            )
            if not (v.status == "not run" and undecidable):
                found[f"{result.manifest_id}/{v.claim}"] = v.status
    return found


def decidable_not_reproduced(results: list[ManifestResult], device: str) -> list[str]:
    """--strict: the claims ("table/claim") the profile and device could decide that did not come out reproduced."""
    return [claim for claim, status in decidable_claims(results, device).items() if status != "reproduced"]


def flop_check(manifests: list[Manifest], progress=None, cache: Path = DEFAULT_CACHE) -> FlopCheck:
    """Count every distinct model three ways (each count kept in the cache folder `cache`); any disagreement or
    unsupported op fails it."""
    check, seen = FlopCheck(), set()
    rows = [(m.id, r) for m in manifests for r in m.rows]
    task = progress.add_task("FLOP checks", total=len(rows)) if progress else None
    with phase("FLOP check"):
        for manifest_id, row in rows:
            key = row_key(row)
            if key not in seen:
                seen.add(key)
                check.add(manifest_id, row.id, row_summary(row, cache)["problems"])
            if progress:
                progress.advance(task)
    return check


def describe_exception(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


__all__ = [
    "Context",
    "TableMeasurement",
    "TableOutcome",
    "TablePlan",
    "TableRun",
    "comparison_metric",
    "decidable_claims",
    "decidable_not_reproduced",
    "execute",
    "flop_check",
    "make_context",
    "rebuild_result",
    "row_metric",
    "run_manifest",
]
