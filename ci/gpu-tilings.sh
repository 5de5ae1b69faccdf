#!/usr/bin/env bash
# Times the tilings of attention's v4 and b4 kernels on this machine's GPU
# (benchmarks/tools/attention_tilings.cu): configures core-runtime as ci/gpu-focus.sh does (for the
# generated headers the kernels' source includes), compiles the tool for sm_90 and runs it. The
# CSV goes to OUT_DIR/tilings.csv and stdout; a minute or two on a fresh machine, as it compiles
# one source.
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
nvcc -std=c++17 -O3 -arch=sm_90 --expt-relaxed-constexpr --extended-lambda \
  -I "$root/core-runtime/include" -I "$build/generated/include" -I "$root/core-runtime/src" \
  -I "$build/generated/src" -Xcompiler=-ffunction-sections,-fdata-sections -Xlinker --gc-sections \
  "$root/benchmarks/tools/attention_tilings.cu" -o "$build/attention_tilings"
"$build/attention_tilings" | tee "$out/tilings.csv"
