#!/usr/bin/env bash
# One full GPU session in one call (device time is scarce): the CUDA test suite with memcheck
# (ci/gpu-check.sh), the conv2d tests once per forced conv path, then every benchmark family on
# CUDA against PyTorch. Logs are packed into OUT_DIR/logs.tgz; the CSV and summary stay beside it.
#   usage: ci/gpu-run.sh OUT_DIR [benchmark families...]
set -uo pipefail
out=${1:?usage: ci/gpu-run.sh OUT_DIR [families...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
work=$out/work
mkdir -p "$work"
build=$root/.devbuild/core
export EMBER_GPU_BUILD_DIR=$build

"$root/ci/gpu-check.sh" "$work" 2>&1 | tee "$out/summary.txt"

for algo in implicit im2col; do
  EMBER_CONV_ALGO=$algo "$build/tests/ember_core_tests" \
    --gtest_filter='*Conv2d*:*ConvPaths*:*CudaMatchesCpu*' >"$work/conv-$algo.log" 2>&1
  echo "conv tests with EMBER_CONV_ALGO=$algo: exit $? ($(grep -E '^\[  PASSED' "$work/conv-$algo.log"))" |
    tee -a "$out/summary.txt"
done

cmake --install "$build" --prefix "$root/.devbuild/prefix" >/dev/null
PYTHONUNBUFFERED=1 python3 "$root/benchmarks/run.py" --device cuda --rounds 3 "$@" \
  --ember-prefix "$root/.devbuild/prefix" --build-dir "$root/.devbuild/bench" \
  --out "$out/bench-cuda.csv" >"$work/bench.log" 2>&1
echo "benchmarks: exit $?" | tee -a "$out/summary.txt"
tail -60 "$work/bench.log"
tar -czf "$out/logs.tgz" -C "$out" work && rm -rf "$work"
