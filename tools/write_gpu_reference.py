"""Write repro/cost/gpu_reference.json: what GPU runs cost on one GPU, for estimates without a calibration of one's own.

    python tools/write_gpu_reference.py PROFILES_TOML TIMINGS_JSON BENCH_JSON [BENCH_JSON ...]

From a lease's measurements (tools/device/check.sh, docs/device-check.md): the `repro bench gpu` files of one GPU
(merged: a check a later call ran replaces one an earlier call skipped) and the timings.json of a table trained at
full size, whose runs' data preparation prices every GPU run's; PROFILES_TOML is the profiles file that table ran
with (tools/device/profiles.toml), which gives each run's config. The shipped file:

    python tools/write_gpu_reference.py tools/device/profiles.toml \
        docs/measurements/2026-12-04-h200/table2_full_synthetic_timings.json \
        docs/measurements/2026-12-04-h200/bench_gpu.json docs/measurements/2026-12-04-h200/bench_gpu_cifar.json
"""

import json
import sys
from pathlib import Path

from repro.core.fsutil import atomic_write_text
from repro.cost.gpu_reference import REFERENCE_FILE, build
from repro.plan.manifest import load_all
from repro.plan.run_config import planned_runs


def configs(profiles: Path) -> dict:
    """Every run the shipped manifests plan under the file's profiles, by config hash."""
    return {p.cfg.hash: p.cfg for m in load_all(profiles_file=profiles) for prof in m.profiles.values()
            for p in planned_runs(m, prof)}


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    profiles, timings, *bench = (Path(p) for p in sys.argv[1:])
    doc = build([json.loads(p.read_text()) for p in bench], json.loads(timings.read_text()), configs(profiles))
    atomic_write_text(REFERENCE_FILE, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE_FILE}: {len(doc['checks'])} checks, {len(doc['manifests'])} manifests, data preparation "
          f"{doc['data_preparation']['seconds_per_value']:.3g} s per value from {doc['data_preparation']['runs']} runs")
