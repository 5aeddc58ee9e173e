"""The one orchestrator: manifest -> measurements -> metrics -> claims -> tables on disk.

Each measure a row can ask for ("flops", "accuracy", "latency") has a measurer in
repro.measure.MEASURERS; comparisons derive metrics from pairs of rows; claims are
decided on the result (repro.claims). Everything a table shows is saved in
results.json next to it, with its provenance. `TableRun` runs tables one after another
(`repro run`, `repro verify-all`); `flop_check` counts every distinct model of every
manifest three ways; repro.report.summary writes report.md.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from repro.devices import resolve_device
from repro.fsutil import WriteFailed
from repro.manifest import Manifest
from repro.measure import MEASURERS
from repro.measure.base import Context
from repro.measure.flops import row_flops, row_key
from repro.measure.readings import count_readings
from repro.provenance import provenance
from repro.report.render import write_manifest_outputs
from repro.claims import decide_table
from repro.results import (FlopCheck, ManifestResult, Measured, comparison_metric, derive_comparisons, row_metric,
                           save_result)
from repro.timings import phase

def make_context(manifest: Manifest, profile: str, results_dir: Path, device: str, jobs: int = 0, **kw) -> Context:
    settings = manifest.profile(profile)  # KeyError naming the closest profiles
    device = resolve_device(device)
    # On a CPU as many runs at once as the cores hold at the threads each trains on (its config's).
    jobs = jobs or (1 if device.startswith("cuda") else max(1, (os.cpu_count() or 1) // settings.run_threads()))
    return Context(profile, settings, results_dir, device, jobs=jobs, **kw)


def comparison_metrics(manifest: Manifest, measured: Measured) -> None:
    """Metrics of each comparison that can be derived from its two rows' metrics."""
    derive_comparisons(manifest.comparisons, measured)


def run_manifest(manifest: Manifest, ctx: Context) -> ManifestResult:
    measured = Measured()
    for measure in sorted(manifest.measures()):
        measured.update(MEASURERS.get(measure).builder(manifest, ctx))
    comparison_metrics(manifest, measured)
    result = ManifestResult(manifest.id, manifest.title, manifest.paper_ref, manifest.paper_table,
                            ctx.profile_name, measured, [], provenance(ctx.device), ctx.profile)
    count_readings(manifest, result)  # the analytic claims' rows under each alternative reading
    with phase("claims", manifest.id):
        return decide_table(manifest, result)


def execute(manifest: Manifest, ctx: Context) -> tuple[ManifestResult, list[Path]]:
    """Run one manifest and write its results.json, tables and claims; none of them while some of its runs
    are submitted and not awaited (`ctx.submitted`): a table is never written from missing results."""
    result = run_manifest(manifest, ctx)
    if ctx.submitted:
        return result, []
    with phase("tables", manifest.id):
        save_result(result, ctx.results_dir)
        files = write_manifest_outputs(manifest, result, ctx.results_dir)
    return result, files


@dataclass
class TableOutcome:
    """What running one table came to."""

    manifest_id: str
    result: ManifestResult | None = None
    files: list[Path] = field(default_factory=list)
    run_counts: Any = None  # repro.execution.runs.RunCounts, when the table trains
    needs_data: str = ""  # a dataset or pretrained weights file is missing: nothing was trained
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
    """Tables run one after another at one profile; `current` names the table running (for an interrupt)."""

    profile: str
    results_dir: Path
    device: str
    jobs: int = 0
    data_dir: Path | None = None
    executor: Any = None  # repro.execution.options.ExecutorOptions
    progress: Any = None
    current: str | None = None

    def run(self, manifests: list[Manifest], on_start: Callable[[Manifest, Context], None] | None = None,
            on_done: Callable[[TableOutcome], None] | None = None) -> list[TableOutcome]:
        """Run each manifest; a table that fails is an outcome, and the next one still runs. An interrupt
        (KeyboardInterrupt) and a file the disk refuses (WriteFailed) propagate, with `current` naming the
        table they stopped."""
        from repro.data.layout import DatasetMissing
        from repro.weights import WeightsMissing

        outcomes = []
        for manifest in manifests:
            self.current = manifest.id
            out = TableOutcome(manifest.id)
            try:
                ctx = make_context(manifest, self.profile, self.results_dir, self.device, jobs=self.jobs,
                                   data_dir=self.data_dir, executor=self.executor)
                ctx.progress = self.progress
                if on_start is not None:
                    on_start(manifest, ctx)
                result, out.files = execute(manifest, ctx)
                out.run_counts, out.submitted = ctx.run_counts, ctx.submitted
                if not ctx.submitted:
                    out.result = result
            except (DatasetMissing, WeightsMissing) as exc:
                out.needs_data = f"{manifest.id} needs data that is not here; nothing was trained.\n{exc}"
            except WriteFailed:
                raise  # the disk refuses files: every next table would fail the same way
            except Exception as exc:  # one broken table must not hide the others
                out.error = describe_exception(exc)
            outcomes.append(out)
            if on_done is not None:
                on_done(out)
        self.current = None
        return outcomes


def rebuild_result(manifest: Manifest, profile: str, results_dir: Path, device: str = "auto") -> ManifestResult:
    """The table's results.json and tables written again from the run records already in `results_dir`, training
    nothing (a run without a record is a problem of the table, as a failed run is); FLOP counts and latencies
    are measured again on this machine. For a results.json that was damaged (repro.results.ResultUnusable)."""
    ctx = make_context(manifest, profile, results_dir, device, jobs=1, train=False)
    result, _ = execute(manifest, ctx)
    return result


def decidable_not_reproduced(results: list[ManifestResult], device: str) -> bool:
    """--strict: a claim the profile and device could decide that did not come out reproduced."""
    for result in results:
        kind = result.profile_settings.evidence if result.profile_settings else "pipeline"
        for v in result.verdicts:
            undecidable = (v.scope != "analytic" and kind not in ("reduced", "paper")) or (
                v.scope == "gpu" and not device.startswith("cuda"))
            if v.status != "reproduced" and not (v.status == "not run" and undecidable):
                return True
    return False


def flop_check(manifests: list[Manifest], progress=None) -> FlopCheck:
    """Count every distinct model three ways; any disagreement or unsupported op fails it."""
    check, seen = FlopCheck(), set()
    rows = [(m.id, r) for m in manifests for r in m.rows]
    task = progress.add_task("FLOP checks", total=len(rows)) if progress else None
    with phase("FLOP check"):
        for manifest_id, row in rows:
            key = row_key(row)
            if key not in seen:
                seen.add(key)
                check.add(manifest_id, row.id, row_flops(row).problems)
            if progress:
                progress.advance(task)
    return check


def describe_exception(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


__all__ = ["Context", "TableOutcome", "TableRun", "comparison_metric", "decidable_not_reproduced", "execute",
           "flop_check", "make_context", "rebuild_result", "row_metric", "run_manifest"]
