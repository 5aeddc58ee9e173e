#!/usr/bin/env bash
# The device check for a lent GPU, in one command: the prepared check (`repro bench gpu`), then one table
# of the full recipe on synthetic data at full size (tools/device/profiles.toml). Writes what it measured
# under OUT (default ./device-out): bench_gpu.json, the table's results as a tarball, and the log.
#   tools/device/check.sh [TABLE]          on a GPU
#   tools/device/check.sh --dry-run [TABLE] on a CPU, at toy size, before a lease is spent
set -uo pipefail
cd "$(dirname "$0")/../.."
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
table=${1:-table2}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
work=$(mktemp -d)
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}

if [ $dry = 1 ]; then
    bench=(--dry-run) profile=full_synthetic_dry
else
    bench=(--budget-s "${BENCH_BUDGET_S:-200}" --steps "${BENCH_STEPS:-100}") profile=full_synthetic
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi
"$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'

set -x
timeout "${BENCH_TIMEOUT_S:-330}" "$py" -m repro bench gpu "${bench[@]}" --out "$out/bench_gpu.json"
bench_rc=$?
timeout "${TABLE_TIMEOUT_S:-200}" "$py" -m repro "$table" --profiles tools/device/profiles.toml \
    --profile "$profile" --results-dir "$work/results" --data-dir "$work/data"
table_rc=$?
set +x
tar czf "$out/table.tgz" -C "$work" results
echo "bench gpu: exit $bench_rc; $table at $profile: exit $table_rc"
[ $bench_rc = 0 ] && [ $table_rc = 0 ]
