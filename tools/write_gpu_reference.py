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
from typing import Any

from repro.core.fsutil import atomic_write_text
from repro.cost.gpu_reference import REFERENCE_FILE, SCHEMA, parse
from repro.data.input_choice import FILE as INPUT_FILE
from repro.plan.manifest import load_all
from repro.plan.run_config import planned_runs

REPO_ROOT = Path(__file__).resolve().parents[1]  # the checkout: its measurements and device profiles
MEASUREMENTS = REPO_ROOT / "docs" / "measurements"
PROFILES = REPO_ROOT / "tools" / "device" / "profiles.toml"


def configs(profiles=PROFILES) -> dict:
    """Every run the shipped manifests plan under the file's profiles, by config hash."""
    return {
        p.cfg.hash: p.cfg
        for m in load_all(profiles_file=profiles)
        for prof in m.profiles.values()
        for p in planned_runs(m, prof)
    }


def newest_folders(root: Path) -> list[Path]:
    """The newest measurement folder (<YYYY-MM-DD>-<gpu>/ holding a bench_gpu.json) of each GPU, newest first."""
    newest: dict[str, Path] = {}
    for folder in sorted(root.glob("????-??-??-*/bench_gpu.json")):
        folder = folder.parent
        newest[folder.name[11:]] = folder  # sorted by date: a later one replaces an earlier one
    return sorted(newest.values(), key=lambda f: f.name[:10], reverse=True)


def build_folder(folder: Path, configs: dict[str, Any], label: str) -> dict[str, Any]:
    """One GPU's reference from its measurement folder: bench_gpu.json and any bench_gpu_*.json merged, and the
    data preparation of the runs of its *_timings.json files (none: the reference has no data_preparation)."""
    bench = sorted(folder.glob("bench_gpu*.json"), key=lambda p: (p.name != "bench_gpu.json", p.name))
    timings = [json.loads(p.read_text()) for p in sorted(folder.glob("*_timings.json"))]
    merged = {"commands": {f"{i}/{k}": v for i, t in enumerate(timings) for k, v in t["commands"].items()}}
    doc = build([json.loads(p.read_text()) for p in bench], merged if timings else None, configs)
    doc["measured_in"] = label
    return doc


def build_reference(root: Path, configs: dict[str, Any], label_root: str = "docs/measurements") -> dict[str, Any]:
    """The shipped file: the newest measurement folder of each GPU under `root`, newest first."""
    folders = newest_folders(root)
    if not folders:
        raise ValueError(f"{root}: no <date>-<gpu>/bench_gpu.json measurement folder")
    return {
        "note": "written by tools/write_gpu_reference.py from docs/measurements/; checked by "
        "tests/cost/test_gpu_reference.py",
        "schema": SCHEMA,
        "references": [build_folder(f, configs, f"{label_root}/{f.name}") for f in folders],
    }


def input_choices(reference: dict[str, Any]) -> dict[str, Any]:
    """repro.data.input_choice's file: per GPU of the references, the input path its "input_path" check chose."""
    gpus = {}
    for doc in reference["references"]:
        cal = parse(doc, Path(doc["measured_in"]))
        for rate in cal.inputs.values():
            gpus.setdefault(
                cal.device, {"path": rate.path, "ratio": rate.ratio, "measured": f"{doc['measured_in']}: {rate.check}"}
            )
    return {
        "note": "written by tools/write_gpu_reference.py from docs/measurements/ (repro.data.input_choice)",
        "gpus": gpus,
    }


def build(bench_docs: list[dict[str, Any]], timings: dict[str, Any] | None, configs: dict[str, Any]) -> dict[str, Any]:
    """The shipped reference (tools/write_gpu_reference.py): `repro bench gpu` documents of one GPU merged (a check
    a later call ran replaces one an earlier call skipped), and the seconds per image value that the runs of a
    timings.json (repro.results.timings) spent preparing their data, `configs` giving each run's config by hash."""
    from repro.data.sizes import run_split_sizes
    from repro.data.specs import get_dataset

    merged = {k: v for k, v in bench_docs[0].items() if k != "checks"}
    checks: dict[str, dict[str, Any]] = {}
    for doc in bench_docs:
        for check in doc["checks"]:
            if check["name"] not in checks or checks[check["name"]]["status"] == "skipped":
                checks[check["name"]] = check
        merged["manifests"] = {**merged["manifests"], **doc["manifests"]}
    merged.update(
        checks=list(checks.values()),
        wall_s=sum(d["wall_s"] for d in bench_docs),
        started=min(d["started"] for d in bench_docs),
    )
    if timings is None:
        return merged
    seconds = values = 0.0
    runs, commands = 0, []
    for name, command in timings["commands"].items():
        for run in command["runs"]:
            cfg = configs.get(run["hash"])
            part = run["parts"].get("data preparation")
            if cfg is None or part is None:
                continue
            sizes = run_split_sizes(cfg.dataset, cfg.data, cfg.train_samples, cfg.test_samples)
            seconds += part["wall_s"]
            values += (sizes.train + sizes.test) * get_dataset(cfg.dataset).channels * cfg.image_size**2
            runs += 1
        commands.append(f"`repro {name.split('/')[-1]} --profile {command['profile']}`, {command['started']}")
    if not runs:
        raise ValueError("no run of the timings has a config among those given and a data preparation part")
    merged["data_preparation"] = {"seconds_per_value": seconds / values, "runs": runs, "measured": "; ".join(commands)}
    return merged


def dump(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    reference = build_reference(MEASUREMENTS, configs())
    atomic_write_text(REFERENCE_FILE, dump(reference))
    atomic_write_text(INPUT_FILE, dump(input_choices(reference)))
    for ref in reference["references"]:
        prep = ref.get("data_preparation")
        prep_text = f"{prep['seconds_per_value']:.3g} s a value" if prep else "not measured"
        print(
            f"{ref['measured_in']}: {len(ref['checks'])} checks, {len(ref['manifests'])} manifests, "
            f"data preparation {prep_text}"
        )
    print(f"wrote {REFERENCE_FILE} and {INPUT_FILE}")
