"""`repro report`: re-render <results>/<profile>/report.md from whatever results the folder holds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from repro.cli.common import (
    CommandInterrupted,
    check_profile,
    check_results_dir,
    console,
    fail,
    load_every,
    read_files,
    refuse_a_file,
    settings,
    show,
    show_unusable,
    write_failed,
)
from repro.cli.options import MANIFESTS, PROFILES, READINGS, RESULTS, profile_option
from repro.core.fsutil import WriteFailed
from repro.plan.manifest import Manifest

if TYPE_CHECKING:
    from repro.plan.table_plan import Plans


def report(
    results_dir: Optional[Path] = RESULTS,
    manifests_dir: Optional[Path] = MANIFESTS,
    profiles: Optional[Path] = PROFILES,
    readings: Optional[Path] = READINGS,
    profile: Optional[str] = profile_option("Only this profile's report. Default: every profile with results."),
) -> None:
    """Re-render <results>/<profile>/report.md and report.html from whatever results the directory holds."""
    import sys

    from repro.claims import decided_results
    from repro.claims.decide import rows_left_out
    from repro.cli.common import making, recording
    from repro.cost.estimate import CostModel
    from repro.cost.taken import for_report
    from repro.plan.table_plan import plan_all
    from repro.report.summary import write_report
    from repro.results.measurements import profiles_present
    from repro.report.render import DETAIL
    from repro.results.run_records import read_records
    from repro.results.timings import phase
    from repro.runtime.interrupt import command_line, raise_pending

    given = results_dir  # the folder named on the command line: the hints below name it again
    results_dir = results_dir or settings().results
    manifests = load_every(manifests_dir, profiles, readings=readings)  # bad input is reported before anything else
    if profile is not None:
        check_profile(manifests, profile)  # an unknown name is refused, naming the closest, before the folder
    refuse_a_file(results_dir)
    if not results_dir.is_dir():
        fail(
            f"no results in {results_dir}: the folder does not exist; run a table or "
            f"`{making(['verify-all'], profile, given)}` first"
        )
    present = profiles_present(results_dir)
    if profile is not None and profile not in present:
        fail(
            f"no results of profile '{profile}' in {results_dir} (profiles with results: "
            f"{', '.join(present) or 'none'}); run a table at that profile or "
            f"`{making(['verify-all'], profile, given)}` first"
        )
    names = [profile] if profile else present
    if not names:
        fail(f"no results in {results_dir}: run a table or `{making(['verify-all'], None, given)}` first")
    for name in names:
        check_results_dir(results_dir, name)
    plans = plan_all(manifests)  # once: every stage below reads them
    try:
        for name in names:
            _rebuild_damaged(results_dir, name, manifests, plans)
            with recording("report", results_dir, name, heavy=False, reads=read_files(manifests, profiles)):
                with phase("claims"):
                    entries = decided_results(results_dir, name, manifests)
                left_out = rows_left_out(entries)
                with phase("report"):  # the caches alone: the report counts nothing
                    costs = for_report(results_dir, name, plans, CostModel.under(settings(), cached_only=True))
                path, summary = write_report(entries, results_dir, name, costs)
            console.rule(name)
            for line in summary["lines"]:
                show(line)
            show(f"wrote {path}, {path.with_name(DETAIL).name} and {path.with_name('report.html').name}")
            if left_out:
                show(
                    f"Left out: {'; '.join(left_out)}: rows this folder holds that the manifests read here do not "
                    "have; read the manifests that trained them (--manifests DIR)"
                )
        show_unusable(  # the report renders results.json, written from them before they became unusable
            read_records(results_dir).unusable,
            "in the folder: a table's numbers from one are still shown, as its results.json holds them "
            "(trace.html marks it); `repro run` sets it aside and trains its run again",
        )
        raise_pending()  # a Ctrl-C dropped in a finalizer while rendering still interrupts
    except KeyboardInterrupt as exc:
        # Each file is replaced whole, so none is half-written; the set of them may be part old, part new.
        text = (
            f"report interrupted: the run records and results are untouched; figures and report.md may be "
            f"partly re-rendered; rerun `{command_line(sys.argv)}` to render them all"
        )
        raise CommandInterrupted("report", None, exc, text) from exc
    except WriteFailed as exc:
        write_failed(exc)


def _rebuild_damaged(results_dir: Path, profile: str, manifests: list[Manifest], plans: Plans) -> None:
    """A table's results.json that cannot be parsed as one is set aside and rebuilt from the run records (nothing
    trains); one that cannot be read (permission, I/O) stops the report with one line, left as it is."""
    from repro.results.measurements import ResultUnusable, load_result

    damaged: list[tuple[Manifest, ResultUnusable]] = []
    for m in manifests:
        try:
            load_result(results_dir, profile, m.id)
        except ResultUnusable as exc:
            if not exc.damaged:
                fail(f"cannot read {exc.path}: {exc.reason}; it is left as it is")
            damaged.append((m, exc))
    if not damaged:
        return
    from repro.execution.files import set_aside
    from repro.pipeline import rebuild_result

    for m, unusable in damaged:
        if profile not in m.profiles:
            fail(
                f"{unusable.path} is unusable ({unusable.reason}) and profile '{profile}' is not known here to "
                "rebuild it; pass the profiles file it was run with (--profiles)"
            )
        set_aside(unusable.path, "table result", unusable.reason, "it is rebuilt from the run records")
        result = rebuild_result(plans.of(m.id, profile), results_dir, settings=settings())
        problems = result.measured.problems
        show(
            f"{m.id}: results.json rebuilt from the run records"
            + (f"; {len(problems)} problem(s), first: {problems[0]}" if problems else "")
        )
