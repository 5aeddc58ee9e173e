"""tools/device/check.sh: the steps of the device check, their order, options and limits, and its exit code.

The fast tests run the script with a stand-in for Python that records each call; the slow one runs the real dry
run on this CPU (as docs/device-check.md says to before a lease is spent)."""

import json
import os
import re
import subprocess
import sys

import pytest

from checkout import REPO_ROOT

SCRIPT = REPO_ROOT / "tools" / "device" / "check.sh"
FAKE = r"""#!/usr/bin/env bash
echo "$*" >> "$CALLS"
case "$*" in
  "-c import nvidia.dali") exit "${FAKE_DALI:-1}" ;;
  "-c "*) echo "python x torch y cuda z" ;;
  "-m repro bench moe-conv --help") exit "${FAKE_MOECONV:-1}" ;;
  "-m repro bench gpu"*) exit "${FAKE_BENCH_RC:-0}" ;;
  "-m repro table2"*)
    while [ $# -gt 0 ]; do case "$1" in --results-dir) r=$2 ;; --profile) p=$2 ;; esac; shift; done
    mkdir -p "$r/$p" && echo '{}' > "$r/$p/timings.json" ;;
esac
exit 0
"""


def _run(tmp_path, *args, **env):
    fake = tmp_path / "python"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    calls = tmp_path / "calls.txt"
    out = tmp_path / "out"
    environ = {**os.environ, "PYTHON": str(fake), "CALLS": str(calls), "OUT": str(out), **env}
    proc = subprocess.run(["bash", str(SCRIPT), *args], env=environ, capture_output=True, text=True, timeout=60)
    return proc, calls.read_text().splitlines(), out


def test_the_dry_run_calls_each_step_in_order_at_toy_size(tmp_path):
    proc, calls, out = _run(tmp_path, "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = [c for c in calls if not c.startswith("-c ")]
    assert steps[0].startswith("-m repro bench gpu --only table5 --only table4 --out ")
    assert steps[0].endswith(" --dry-run") and "--steps" not in steps[0]
    assert steps[1] == "-m repro bench moe-conv --help"  # absent here: skipped, and said so
    assert re.fullmatch(
        r"-m repro table2 --profiles tools/device/profiles.toml --profile full_synthetic_dry "
        r"--results-dir \S+/results --data-dir \S+/data",
        steps[2],
    )
    assert re.fullmatch(
        r"-m repro bench fixed-costs --results-dir \S+/results --profile full_synthetic_dry "
        r"--table table2 --out \S+/table2_fixed_costs.json",
        steps[3],
    )
    assert len(steps) == 4 and not any("pip" in c for c in calls)  # no DALI on a CPU
    log = (out / "check.log").read_text()
    assert "no `repro bench moe-conv` in this checkout; skipped" in log and "load before:" in log
    assert (out / "table2_full_synthetic_dry_timings.json").is_file() and (out / "table.tgz").is_file()


def test_on_a_gpu_it_measures_the_layer_when_the_command_exists_and_installs_dali_beside(tmp_path):
    proc, calls, out = _run(tmp_path, FAKE_MOECONV="0")
    steps = [c for c in calls if c.startswith("-m repro")]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "--steps 50 --budget-s 200" in steps[0] and "--dry-run" not in steps[0]
    assert "-m repro bench moe-conv" in steps and "--profile full_synthetic_steady" in next(
        c for c in steps if c.startswith("-m repro table2")
    )
    assert "-m pip install -q nvidia-dali-cuda130" in calls
    (tmp_path / "again").mkdir()
    proc, calls, out = _run(tmp_path / "again", FAKE_DALI="0", FAKE_MOECONV="0")  # installed: not again
    assert not any("pip" in c for c in calls)
    limits = [int(n) for n in re.findall(r"\(limit (\d+) s\)", (out / "check.log").read_text())]
    assert limits == [250, 40, 150, 20]
    assert len(limits) == 4 and sum(limits) <= 8 * 60 - 20  # under 8 minutes, with room for the rest


def test_a_failed_step_fails_the_check_and_the_others_still_run(tmp_path):
    proc, calls, out = _run(tmp_path, "--dry-run", FAKE_BENCH_RC="1")
    assert proc.returncode == 1 and any(c.startswith("-m repro bench fixed-costs") for c in calls)
    assert "bench gpu: exit 1; moe-conv: exit 0; table2 at full_synthetic_dry: exit 0" in proc.stdout


@pytest.mark.slow  # the real dry run: 1.5-3 minutes on a 2-core machine
def test_the_real_dry_run_passes_on_this_cpu(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("REPRO_CHECKPOINT_SECONDS", "TORCHINDUCTOR_CACHE_DIR")}
    proc = subprocess.run(
        ["bash", str(SCRIPT), "--dry-run"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**env, "OUT": str(out), "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"},
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    bench = json.loads((out / "bench_gpu.json").read_text())
    kinds = {c["name"]: (c["kind"], c["status"]) for c in bench["checks"]}
    assert kinds["dense_twin/imagenet/table5.dense"] == ("dense_twin", "passed")
    assert kinds["input_path/imagenet"] == ("input_path", "passed")
    runs = json.loads((out / "table2_fixed_costs.json").read_text())["runs"]
    assert len(runs) == 6 and all(r["steady_epoch_s"] is not None for r in runs)  # two epochs each
