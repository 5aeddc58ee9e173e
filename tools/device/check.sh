#!/usr/bin/env bash
# The device check for a lent GPU, in one call of under 8 minutes (each step has its own time limit; the sum
# is 460 s): what docs/device-check.md lists, written under OUT (default ./device-out):
#   bench_gpu.json               `repro bench gpu --only table5 --only table4`: k2_moe and its dense twin, the
#                                ImageNet input paths fed to table4.r18_soft (DALI installed first where pip can)
#   moe_conv.txt                 `repro bench moe-conv`, where that subcommand exists
#   table2_<profile>_timings.json, table2_fixed_costs.json, table.tgz
#                                Table 2 at full size on synthetic data, two epochs a run, and each run's fixed
#                                costs and first epoch against its second (`repro bench fixed-costs`)
#   check.log                    what every step printed, with the load before and after
#   tools/device/check.sh [TABLE]            on a GPU
#   tools/device/check.sh --dry-run [TABLE]  on a CPU, at toy size, before a lease is spent
set -uo pipefail
cd "$(dirname "$0")/../.."
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
table=${1:-table2}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT  # what is kept is copied under $out
export PYTHONUNBUFFERED=1
# One inductor cache for every step: a graph bench gpu compiled is not compiled again by the table's runs.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$work/compiled}
py=${PYTHON:-python3}
exec > >(tee "$out/check.log") 2>&1
started=$(date +%s)
echo "load before: $(uptime)"

bench=(--only table5 --only table4 --out "$out/bench_gpu.json")
moe_conv=()  # the bench's own shape (B 64, 256 channels, 14 x 14) on the GPU
if [ $dry = 1 ]; then
    bench+=(--dry-run) profile=full_synthetic_dry
    # toy size: the bench's own shape overruns its step's time limit on a CPU
    moe_conv=(--batch 16 --channels 64 --size 8 --rounds 2 --steps 1)
else
    bench+=(--steps "${BENCH_STEPS:-50}" --budget-s "${BENCH_BUDGET_S:-200}") profile=full_synthetic_steady
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    # DALI is optional: installed in the background while the first checks run, measured if it arrived.
    if ! "$py" -c 'import nvidia.dali' 2>/dev/null; then
        (timeout "${DALI_TIMEOUT_S:-150}" "$py" -m pip install -q "${DALI_PACKAGE:-nvidia-dali-cuda130}" \
            > "$out/dali_install.txt" 2>&1; echo "pip exit $?" >> "$out/dali_install.txt") &
    fi
fi
"$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'

step() {  # step NAME LIMIT_S COMMAND...: run it under its limit, say how it went and how long it took
    local name=$1 limit=$2 t0 rc
    shift 2
    t0=$(date +%s)
    echo "== $name (limit ${limit} s): $*"
    timeout "$limit" "$@"
    rc=$?
    echo "== $name: exit $rc after $(( $(date +%s) - t0 )) s"
    eval "rc_${name//-/_}=$rc"
}

step bench-gpu "${BENCH_TIMEOUT_S:-250}" "$py" -m repro bench gpu "${bench[@]}"
if "$py" -m repro bench moe-conv --help > /dev/null 2>&1; then
    step moe-conv "${MOECONV_TIMEOUT_S:-40}" bash -o pipefail -c "'$py' -m repro bench moe-conv ${moe_conv[*]} | tee '$out/moe_conv.txt'"
else
    echo "== moe-conv: no \`repro bench moe-conv\` in this checkout; skipped"
    rc_moe_conv=0
fi
step table "${TABLE_TIMEOUT_S:-150}" "$py" -m repro "$table" --profiles tools/device/profiles.toml \
    --profile "$profile" --results-dir "$work/results" --data-dir "$work/data"
cp "$work/results/$profile/timings.json" "$out/${table}_${profile}_timings.json" 2>/dev/null
step fixed-costs 20 "$py" -m repro bench fixed-costs --results-dir "$work/results" --profile "$profile" \
    --table "$table" --out "$out/${table}_fixed_costs.json"
tar czf "$out/table.tgz" -C "$work" results
echo "load after: $(uptime)"
echo "bench gpu: exit $rc_bench_gpu; moe-conv: exit $rc_moe_conv; $table at $profile: exit $rc_table;" \
     "fixed costs: exit $rc_fixed_costs; $(( $(date +%s) - started )) s in all"
[ "$rc_bench_gpu" = 0 ] && [ "$rc_moe_conv" = 0 ] && [ "$rc_table" = 0 ] && [ "$rc_fixed_costs" = 0 ]
