#!/usr/bin/env bash
# Packs core-runtime's CUDA build (sm_90) for a GPU machine that should not spend its time
# building: the library, its test program, ember_bench and the libraries they load that are not
# the C/C++ runtime's or CUDA's own (BLAS, Gloo and Gloo's), stripped, in one archive (about
# 40 MB). Built on a machine without a GPU, it runs on one whose glibc is as new and whose CUDA
# has the same major version. On the GPU machine:
#   mkdir -p /tmp/pack && tar -xzf PACK.tgz -C /tmp/pack && export LD_LIBRARY_PATH=/tmp/pack
#   /tmp/pack/ember_core_tests                       # the whole suite, CUDA cases included
#   python3 benchmarks/run.py conv_pool --device cuda --ember-bench /tmp/pack/ember_bench
# (The Python module is not packed: it must match the GPU machine's Python; ci/gpu-focus.sh
# builds it there.)
#   usage: ci/gpu-pack.sh PACK.tgz     EMBER_PACK_BUILD_DIR: the CUDA build folder to reuse
set -euo pipefail
pack=$(realpath -m "${1:?usage: ci/gpu-pack.sh PACK.tgz}")
root=$(cd "$(dirname "$0")/.." && pwd)
build=${EMBER_PACK_BUILD_DIR:-$root/.devbuild/pack-core}
prefix=$build-prefix bench=$build-bench stage=$build-stage
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

# NumPy's OpenBLAS where this Python has it (the nox sessions' choice), else the system's BLAS.
openblas=$(python3 -c "import scipy_openblas32 as s; print(s.__path__[0])" 2>/dev/null || true)
cmake -S "$root/core-runtime" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DEMBER_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DEMBER_BUILD_TESTS=ON "${launcher[@]}" \
  ${openblas:+-DEMBER_SCIPY_OPENBLAS="$openblas"} >/dev/null
ninja -C "$build"
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S "$root/benchmarks/cpp" -B "$bench" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >/dev/null
ninja -C "$bench" ember_bench

rm -rf "$stage" && mkdir -p "$stage"
cp "$build/tests/ember_core_tests" "$bench/ember_bench" "$stage/"
cp -L "$build/libember_core.so.0" "$stage/"
# Every library the programs load but the C/C++ runtime (the GPU machine has its own) and CUDA's
# (its driver decides which it can run). Gloo's dependencies come with it.
ldd "$stage/ember_core_tests" "$stage/libember_core.so.0" |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|librt|libdl|ld-linux[^/]*)\.so|/libcu|/libnvrtc|/libnvJitLink|/libember_core' |
  xargs -r cp -L -t "$stage/"
strip "$stage"/*
tar -czf "$pack" -C "$stage" .
echo "$pack: $(du -h "$pack" | cut -f1); $(ls "$stage" | tr '\n' ' ')"
