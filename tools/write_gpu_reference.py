"""Write repro/cost/gpu_reference.json and repro/data/input_paths.json from the device checks' measurements.

    python tools/write_gpu_reference.py

For each GPU, its newest folder docs/measurements/<YYYY-MM-DD>-<gpu>/ (tools/device/check.sh's files, committed:
docs/device-check.md): the `repro bench gpu` files (bench_gpu.json, and any bench_gpu_*.json of further calls,
merged: a check a later call ran replaces one an earlier call skipped) and the timings.json of a table trained
there at full size (*_timings.json), whose runs' data preparation prices every GPU run's. The configs of those
runs come from the device check's profiles (tools/device/profiles.toml). The input path each GPU's check chose
goes to repro/data/input_paths.json, which ImageNet runs on that GPU take by default (repro.data.input_choice).
tests/cost/test_gpu_reference.py fails until both files are the build of the newest measurements.
"""

import json
from pathlib import Path

from repro.core.fsutil import atomic_write_text
from repro.cost.gpu_reference import REFERENCE_FILE, build_reference, input_choices
from repro.data.input_choice import FILE as INPUT_FILE
from repro.plan.manifest import load_all
from repro.plan.run_config import planned_runs

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout: its measurements and device profiles
MEASUREMENTS = REPO_ROOT / "docs" / "measurements"
PROFILES = REPO_ROOT / "tools" / "device" / "profiles.toml"


def configs(profiles=PROFILES) -> dict:
    """Every run the shipped manifests plan under the file's profiles, by config hash."""
    return {p.cfg.hash: p.cfg for m in load_all(profiles_file=profiles) for prof in m.profiles.values()
            for p in planned_runs(m, prof)}


def dump(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    reference = build_reference(MEASUREMENTS, configs())
    atomic_write_text(REFERENCE_FILE, dump(reference))
    atomic_write_text(INPUT_FILE, dump(input_choices(reference)))
    for ref in reference["references"]:
        prep = ref.get("data_preparation")
        prep_text = f"{prep['seconds_per_value']:.3g} s a value" if prep else "not measured"
        print(f"{ref['measured_in']}: {len(ref['checks'])} checks, {len(ref['manifests'])} manifests, "
              f"data preparation {prep_text}")
    print(f"wrote {REFERENCE_FILE} and {INPUT_FILE}")
