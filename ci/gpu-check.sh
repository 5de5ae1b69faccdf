#!/usr/bin/env bash
# Builds core-runtime with CUDA for one architecture, runs the whole C++ test suite (CUDA cases
# included), then compute-sanitizer: memcheck over the whole suite, and racecheck and synccheck
# over the tests that reach a kernel using shared memory. Meant for a GPU machine (the H200 runs
# of benchmarks/results/ were made with it); writes logs and a summary to OUT_DIR, one line per
# sanitizer with its ERROR SUMMARY.
#   usage: ci/gpu-check.sh OUT_DIR [--no-sanitizers | --only TOOL...]
#   --only memcheck (say) runs that sanitizer alone; --only with no suite run: `--only` skips the
#   plain suite too, for a second call on a machine that has the build (a device call is limited
#   to 10 minutes, so the three sanitizers may need two calls).
#   EMBER_SANITIZER_TIMEOUT: seconds each sanitizer run may take (default 1800); a run cut off
#   says so in the summary.
#   EMBER_SANITIZER_SHARD=K/N: each sanitizer runs only shard K (0 to N-1) of its tests, by
#   googletest's own sharding, so that memcheck over the whole suite (longer than one device
#   call) is N calls: `EMBER_SANITIZER_SHARD=0/4 ci/gpu-check.sh OUT --only memcheck`, then 1/4...
set -uo pipefail
out=${1:?usage: ci/gpu-check.sh OUT_DIR [--no-sanitizers | --only TOOL...]}
shift
tools=(memcheck racecheck synccheck)
run_suite=1
if [[ "${1:-}" == "--no-sanitizers" ]]; then
  tools=()
elif [[ "${1:-}" == "--only" ]]; then
  shift
  tools=("$@")
  run_suite=0
fi
mkdir -p "$out"
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EMBER_GPU_BUILD_DIR:-$root/.devbuild/core}
jobs=$(nproc)
limit=${EMBER_SANITIZER_TIMEOUT:-1800}
shard=${EMBER_SANITIZER_SHARD:-}
if [[ -n "$shard" ]]; then
  [[ "$shard" =~ ^([0-9]+)/([0-9]+)$ ]] && ((BASH_REMATCH[1] < BASH_REMATCH[2])) ||
    { echo "EMBER_SANITIZER_SHARD=$shard: expected K/N with 0 <= K < N, e.g. 0/4"; exit 2; }
  shard_env=(GTEST_SHARD_INDEX="${BASH_REMATCH[1]}" GTEST_TOTAL_SHARDS="${BASH_REMATCH[2]}")
else
  shard_env=()
fi

# The distribution's compiler (see gpu-stack.sh for why the image's default g++ is avoided).
[[ -x /usr/bin/g++ ]] && export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++
start=$(date +%s)
cmake -S "$root/core-runtime" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DEMBER_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/configure.log" 2>&1 || {
  tail -50 "$out/configure.log"; exit 1; }
ninja -C "$build" -j"$jobs" >"$out/build.log" 2>&1 || { grep -E "error|FAILED" "$out/build.log" | head -60; exit 1; }
echo "build: $(( $(date +%s) - start )) s"

tests="$build/tests/ember_core_tests"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
rc=0
if ((run_suite)); then
  t0=$(date +%s)
  "$tests" --gtest_output="xml:$out/tests.xml" >"$out/tests.log" 2>&1
  rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests ran" "$out/tests.log" | tail -5
  grep -E "^\[  FAILED  \]" "$out/tests.log" | sort -u | head -80
  echo "test exit code: $rc; $(( $(date +%s) - t0 )) s"
fi

# The kernels that use shared memory (grep __shared__ src/cuda, and group_scratch in reduce.cuh)
# and the tests that reach them on the GPU:
#   gemm_tiled.cuh v2-v5                     TiledGemm, Matmul, CudaMatchesCpu (matmul_tiled)
#   conv_implicit_gemm.cuh, conv_pool.cu     ConvPaths, Conv2d (bias_grad_partial's block_sum)
#   reduce.cuh group_allreduce               Reduction (reduction.cu), Softmax and Loss
#                                            (softmax_loss.cu)
#   normalization.cu block_combine,          BatchNorm, LayerNorm
#     block_sum, ln_params_partial
shared_memory_tests='TiledGemm.*:ConvPaths.*:CudaMatchesCpu.*'
for suite in Matmul Conv2d Reduction Softmax Loss BatchNorm LayerNorm; do
  shared_memory_tests+=":Devices/$suite.*/cuda0"
done

# sanitize TOOL LOG [gtest args...]: one compute-sanitizer run, then its summary line.
# --target-processes application-only: the death test of CudaBackend re-executes the test binary
# to fault a kernel on purpose; the tool would count that child's planted fault as an error.
# No --leak-check: the caching allocators and cuBLAS handles keep their memory until the
# process exits by design (as PyTorch's do), which a leak check would report as 30-odd leaks.
sanitize() {
  local tool=$1 log=$2
  shift 2
  local t0=$(date +%s)
  env "${shard_env[@]}" timeout "$limit" compute-sanitizer --tool "$tool" \
    --target-processes application-only --error-exitcode 9 "$tests" "$@" >"$log" 2>&1
  local code=$? took=$(( $(date +%s) - t0 ))
  local summary
  summary=$(grep -E "ERROR SUMMARY" "$log" | tail -1 | sed 's/^=* *//')
  [[ -n "$summary" ]] || summary="no ERROR SUMMARY"
  ((code == 124)) && summary+=" (cut off after $limit s)"
  local passed
  passed=$(grep -E "^\[  PASSED  \]" "$log" | tail -1)
  echo "$tool${shard:+ (shard $shard)}: $summary; exit $code; $took s; ${passed:-no PASSED line}"
  # The device functions the reports name, counted: Ember's (ember::...) or a library's (cuBLAS's
  # nvjet_*, ...), so that a hazard inside cuBLAS is told apart from one in Ember's kernels.
  grep -E "^=+ +at |Race reported between .* at " "$log" |
    sed -E 's/.* at (void )?//; s/\(anonymous namespace\):://g; s/[<(+].*//' |
    sort | uniq -c | sort -rn | head -10
}

# memcheck runs the whole suite (but the test below): a filter on "cuda" in the test name once skipped the
# TiledGemm and ConvPaths tests, the hand-written GEMM and implicit-GEMM kernels. racecheck costs
# most per shared-memory access: it skips the *AtRealisticSizes* tests (GEMMs up to 1024^3, convs
# of 3e9 multiply-adds), whose kernels the small-shape tests run through the same code paths, edge
# tiles included.
for tool in "${tools[@]}"; do
  case $tool in
    # CudaGraph.ACaptureThatWaitsForTheGpuFailsCleanly makes CUDA calls fail on purpose (a
    # synchronisation inside a capture), which memcheck counts as API errors.
    memcheck) sanitize memcheck "$out/memcheck.log" \
      --gtest_filter=-CudaGraph.ACaptureThatWaitsForTheGpuFailsCleanly ;;
    racecheck)
      sanitize racecheck "$out/racecheck.log" --gtest_filter="$shared_memory_tests-*AtRealisticSizes*" ;;
    synccheck) sanitize synccheck "$out/synccheck.log" --gtest_filter="$shared_memory_tests" ;;
    *) echo "unknown sanitizer: $tool (memcheck, racecheck or synccheck)"; rc=2 ;;
  esac
done
exit $rc
