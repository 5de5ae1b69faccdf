#!/usr/bin/env bash
# Builds core-runtime with CUDA for one architecture, runs the whole C++ test suite (CUDA cases
# included), and runs compute-sanitizer memcheck over the whole suite. Meant for a GPU machine
# (the H200 runs of benchmarks/results/ were made with it); writes logs and a summary to $OUT_DIR.
#   usage: ci/gpu-check.sh OUT_DIR [--no-memcheck]
set -uo pipefail
out=${1:?usage: ci/gpu-check.sh OUT_DIR [--no-memcheck]}
memcheck=1
[[ "${2:-}" == "--no-memcheck" ]] && memcheck=0
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EMBER_GPU_BUILD_DIR:-$root/.devbuild/core}
jobs=$(nproc)

start=$(date +%s)
cmake -S "$root/core-runtime" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DEMBER_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/configure.log" 2>&1 || {
  tail -50 "$out/configure.log"; exit 1; }
ninja -C "$build" -j"$jobs" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - start )) s"

tests="$build/tests/ember_core_tests"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
"$tests" --gtest_output="xml:$out/tests.xml" >"$out/tests.log" 2>&1
rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/tests.log" | tail -5
grep -E "^\[  FAILED  \]" "$out/tests.log" | sort -u | head -80
echo "test exit code: $rc"

if ((memcheck)); then
  # The whole suite: a filter on "cuda" in the test name skipped the TiledGemm and ConvPaths
  # tests, the hand-written GEMM and implicit-GEMM kernels (the CPU cases cost it little).
  # No --leak-check: the caching allocators and cuBLAS handles keep their memory until the
  # process exits by design (as PyTorch's do), which a leak check would report as 30-odd leaks.
  compute-sanitizer --tool memcheck --error-exitcode 9 "$tests" >"$out/memcheck.log" 2>&1
  echo "memcheck exit code: $? ($(grep -c "ERROR SUMMARY" "$out/memcheck.log") summaries)"
  grep -E "ERROR SUMMARY|Invalid|out of bounds" "$out/memcheck.log" | sort | uniq -c | head -20
fi
exit $rc
