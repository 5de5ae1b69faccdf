#!/usr/bin/env bash
# Where a GPU step's time goes: after ci/gpu-focus.sh has built Ember (same OUT_DIR), runs each
# workload of benchmarks/tools/kernel_profile.py under Nsight Compute and prints its kernels'
# GPU time (one step), then Nsight Compute's speed-of-light and occupancy sections for chosen
# kernels. ncu's CSVs and reports go to OUT_DIR/ncu.
#   PROFILES='cnn-ember-compiled:32 sdpa-torch:1024'        workload:size, timed kernel by kernel
#   DETAILS='sdpa-ember:1024:v3_forward|b2_backward'         workload:size:kernel-name regex
#   usage: PROFILES=... DETAILS=... ci/gpu-profile.sh OUT_DIR
set -u
out=${1:?usage: ci/gpu-profile.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
tool=$root/benchmarks/tools/kernel_profile.py
mkdir -p "$out/ncu"
export PYTHONPATH=$root/.devbuild/pkg
for p in ${PROFILES:-}; do
  IFS=: read -r workload size <<<"$p"
  csv=$out/ncu/$workload-$size.csv
  ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
    --log-file "$csv" python3 "$tool" "$workload" "$size" 2>"$out/ncu/$workload-$size.err" >/dev/null
  python3 "$tool" --summarise "$csv" --top "${TOP:-10}" || tail -5 "$out/ncu/$workload-$size.err"
  grep -h -A3 -E "a call \(wall\)|== replay" "$out/ncu/$workload-$size.err" | head -6
done
for d in ${DETAILS:-}; do
  IFS=: read -r workload size kernels <<<"$d"
  ncu --profile-from-start off --clock-control none --section SpeedOfLight --section Occupancy \
    --section LaunchStats --kernel-name "regex:$kernels" --launch-count 2 \
    python3 "$tool" "$workload" "$size" >"$out/ncu/detail-$workload-$size.txt" 2>&1
  echo "== ncu detail: $workload $size ($kernels)"
  grep -E "^  [a-zA-Z_].*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Achieved Occupancy|Theoretical Occupancy|Registers Per|Shared Memory Config|Block Size|Grid Size|Waves Per SM" \
    "$out/ncu/detail-$workload-$size.txt" | head -60
done
