"""Write repro/cost/cpu_reference.json: what CPU runs cost on this machine, for `repro list` on a CPU not measured.

    python tools/write_cpu_reference.py RESULTS_DIR [RESULTS_DIR ...]

Each folder holds a cold `repro verify-all` of a shipped CPU profile on a 2-core machine of CI's kind, e.g.

    repro verify-all --profile smoke --results-dir /tmp/ref/smoke
    repro verify-all --profile functional --results-dir /tmp/ref/functional

(an empty $REPRO_CACHE for each, so the stand-in pretraining is measured too). Run it after a change to a
profile or a model changes what the runs cost, and say in the commit which machine it was.
"""

import collections
import datetime as dt
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from repro.core.fsutil import atomic_write_text
from repro.core.settings import DEFAULT_CACHE
from repro.cost.calibration import Throughput
from repro.cost.cpu_reference import RATE_NAMES, REFERENCE_FILE, SCHEMA
from repro.cost.estimate import CostModel
from repro.cost.fit import MIN_RUNS, fit_constants, fit_rates
from repro.cost.measured import read_folders
from repro.plan.manifest import load_all
from repro.plan.table_plan import plan_all
from repro.results.timings import machine, machine_key


def reference_run_model(samples: list[dict[str, Any]]) -> dict[str, float]:
    """The run model of a reference's runs: repro.cost.fit's constants at the cold estimate's units (no parameter
    terms: a cold estimate has no model sizes), and the CPU share of their wall time."""
    (a, b, _, o, _), _ = fit_constants([([r["macs"], r["steps"], 0.0, 1.0, 0.0], r["cpu_s"]) for r in samples], 0.0)
    return {
        "macs_per_s": 1 / a if a > 0 else float("inf"),
        "step_overhead_s": b,
        "run_overhead_s": o,
        "cpu_share": sum(r["cpu_s"] for r in samples) / sum(r["wall_s"] for r in samples),
    }


def build_cpu_reference(
    results_dirs: list[Path], manifests: list, commit: str, machine: str, cache: Path = DEFAULT_CACHE
) -> dict[str, Any]:
    """The document tools/write_cpu_reference.py writes: every CPU run record of the folders, the run model
    fitted to them at the cold estimate's units, and the phase rates fitted to their timings.json, priced as
    cold whatever this machine's cache folder `cache` holds."""
    times = read_folders(results_dirs)
    runs = [r for r in times.runs_of("cpu") if r.cpu_s is not None]
    if len(runs) < MIN_RUNS:
        raise ValueError(
            f"{len(runs)} CPU run records with CPU seconds under {', '.join(map(str, results_dirs))}; "
            f"a reference needs {MIN_RUNS} or more"
        )
    model = CostModel(cached_only=True, cache=cache)  # what a cold `repro list` sees: shipped counts, no model sizes
    work = {r.hash: model.run_work(r.cfg) for r in runs}
    samples = sorted(
        (
            {
                "hash": r.hash,
                "label": f"{r.label or r.manifest} ({r.cfg.data}, {r.cfg.epochs} epochs)",
                "macs": work[r.hash].macs,
                "steps": work[r.hash].steps,
                "cpu_s": round(r.cpu_s, 3),
                "wall_s": round(r.wall_s, 3),
            }
            for r in runs
        ),
        key=lambda s: s["label"],
    )
    constants = reference_run_model(samples)
    device = Throughput(
        "cpu",
        "cpu",
        constants["macs_per_s"],
        constants["step_overhead_s"],
        "reference",
        run_seconds={s["hash"]: s["cpu_s"] for s in samples},
        run_overhead_s=constants["run_overhead_s"],
        cpu_share=constants["cpu_share"],
        parallel=2,
        fitted=True,
    )
    # The folders were measured cold: their stand-in pretraining is priced, whatever is cached here.
    with tempfile.TemporaryDirectory(prefix="repro-reference-") as empty:
        rates = fit_rates(
            times, plan_all(manifests), CostModel(cached_only=True, fitted={"cpu": device}, cache=Path(empty))
        )
    ratios = sorted(
        (r["macs"] / constants["macs_per_s"] + r["steps"] * constants["step_overhead_s"] + constants["run_overhead_s"])
        / r["cpu_s"]
        for r in samples
    )
    deciles = statistics.quantiles(ratios, n=10)
    return {
        "schema": SCHEMA,
        "note": "written by tools/write_cpu_reference.py; checked by tests/cost/test_reference.py",
        "machine": machine,
        "measured": dt.datetime.fromtimestamp(max(r.ended for r in runs), dt.timezone.utc).strftime("%Y-%m-%d"),
        "commit": commit,
        "run_model": constants,
        "fit": f"the run model's CPU seconds / the measured, per run: median {statistics.median(ratios):.2f}, "
        f"10-90% {deciles[0]:.2f}-{deciles[-1]:.2f} (a run listed here is priced at its own)",
        "rates": {k: round(getattr(rates, k).seconds, 4) for k in RATE_NAMES if getattr(rates, k).basis == "fitted"},
        # What the estimates priced by this file are checked against (tests/cost/test_reference.py):
        "verify_all_wall_s": {
            profile: round(commands["verify-all"].wall_s, 1)
            for profile, commands in sorted(times.commands.items())
            if "verify-all" in commands
        },
        "runs": samples,
    }


def dumps(doc: dict[str, Any]) -> str:
    """The document as JSON, one line per run, so that a new reference reads as a diff of the runs that moved."""
    head = json.dumps({k: v for k, v in doc.items() if k != "runs"}, indent=1)
    runs = ",\n".join("  " + json.dumps(r) for r in doc["runs"])
    return head[:-2] + ',\n "runs": [\n' + runs + "\n ]\n}\n"


def runs_commit(folders: list[Path]) -> str:
    """The commit the folders' run records were trained on (the most common, should they differ)."""
    commits = collections.Counter()
    for folder in folders:
        for path in (folder / "runs").glob("*.json"):
            commits[json.loads(path.read_text()).get("provenance", {}).get("git_commit", "unknown")] += 1
    return commits.most_common(1)[0][0] if commits else "unknown"


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folders = [Path(p) for p in sys.argv[1:]]
    doc = build_cpu_reference(folders, load_all(), runs_commit(folders), machine_key(machine()))
    atomic_write_text(REFERENCE_FILE, dumps(doc))
    print(f"wrote {REFERENCE_FILE}: {len(doc['runs'])} runs, {doc['fit']}; rates {doc['rates']}")
