#!/usr/bin/env bash
# Times the kernels' tilings on this machine's GPU with the tools of benchmarks/tools/, each of
# which includes its kernels' source and needs no build of Ember: attention's v4 and b4 tilings
# (attention_tilings.cu -> OUT_DIR/tilings.csv), conv2d's implicit-GEMM tile widths
# (conv_tilings.cu -> OUT_DIR/conv-tilings.csv) and cross entropy's kernels at a vocabulary's
# shape (cross_entropy_rows.cu -> OUT_DIR/cross-entropy-rows.csv). It configures core-runtime as
# ci/gpu-focus.sh does (for the generated headers the sources include) and compiles the tools for
# sm_90 side by side: a minute or two on a fresh machine.
#   usage: ci/gpu-tilings.sh OUT_DIR
set -euo pipefail
out=${1:?usage: ci/gpu-tilings.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/.devbuild/core
mkdir -p "$out"
[[ -x /usr/bin/g++ ]] && export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++
cmake -S "$root/core-runtime" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$root/.devbuild/prefix" -DEMBER_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DEMBER_BUILD_TESTS=ON >"$out/tilings-configure.log" 2>&1
tools=(attention_tilings conv_tilings cross_entropy_rows) pids=()
for tool in "${tools[@]}"; do
  nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr --extended-lambda \
    -I "$root/core-runtime/include" -I "$build/generated/include" -I "$root/core-runtime/src" \
    -I "$build/generated/src" -Xcompiler=-ffunction-sections,-fdata-sections -Xlinker --gc-sections \
    "$root/benchmarks/tools/$tool.cu" -o "$build/$tool" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done  # set -e: a failed compile stops here
"$build/attention_tilings" | tee "$out/tilings.csv"
"$build/conv_tilings" | tee "$out/conv-tilings.csv"
"$build/cross_entropy_rows" | tee "$out/cross-entropy-rows.csv"
