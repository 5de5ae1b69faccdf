#!/usr/bin/env bash
# A short GPU check of chosen parts, for when device time is scarce (ci/gpu-stack.sh runs all):
# builds core-runtime (CUDA, sm_90, with its tests), autodiff-engine and the Python module, then
# runs core-runtime's tests matching CORE_FILTER ('-' runs none), autodiff-engine's whole suite
# (AUTODIFF=0 skips it), the pytest files PYTESTS (paths under python-bindings/tests), the
# benchmark families FAMILIES on CUDA, and compute-sanitizer's memcheck, racecheck and synccheck
# over core-runtime's tests matching SANITIZE_FILTER. A second call on a warm machine reuses the
# builds (ninja finds nothing to do). Logs go to OUT_DIR/log, CSVs to OUT_DIR.
#   usage: CORE_FILTER='*Cuda*' PYTESTS='test_amp.py' FAMILIES='attention' ci/gpu-focus.sh OUT_DIR
set -u
out=${1:?usage: ci/gpu-focus.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
log=$out/log prefix=$root/.devbuild/prefix
mkdir -p "$log"
[[ -x /usr/bin/g++ ]] && export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++
start=$(date +%s)
build() {  # name source-folder [cmake options...]
  local name=$1 src=$2
  shift 2
  cmake -S "$root/$src" -B "$root/.devbuild/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" "$@" >"$log/$name-configure.log" 2>&1 &&
    ninja -C "$root/.devbuild/$name" >"$log/$name-build.log" 2>&1 ||
    { echo "$name build failed"; grep -B2 -A8 "error" "$log/$name-build.log" | head -60; exit 1; }
}
build core core-runtime -DEMBER_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DEMBER_BUILD_TESTS=ON
cmake --install "$root/.devbuild/core" --prefix "$prefix" >/dev/null
build autodiff autodiff-engine
cmake --install "$root/.devbuild/autodiff" --prefix "$prefix" >/dev/null
build python python-bindings -DPython_EXECUTABLE="$(command -v python3)" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)"
echo "builds: $(($(date +%s) - start)) s; $(grep -h 'distributed backends' "$log"/core-configure.log)"
core_tests=$root/.devbuild/core/tests/ember_core_tests
if [[ "${CORE_FILTER:-}" != "-" ]]; then
  "$core_tests" --gtest_filter="${CORE_FILTER:-*Cuda*}" >"$log/core-tests.log" 2>&1
  echo "core-runtime tests (${CORE_FILTER:-*Cuda*}): exit $? $(grep -hE '^\[  (PASSED|FAILED) ' "$log/core-tests.log" | tr '\n' ' ')"
fi
if [[ "${AUTODIFF:-1}" != 0 ]]; then
  "$root/.devbuild/autodiff/tests/ember_autodiff_tests" >"$log/autodiff-tests.log" 2>&1
  echo "autodiff-engine tests: exit $? $(grep -hE '^\[  (PASSED|FAILED) ' "$log/autodiff-tests.log" | tr '\n' ' ')"
fi
pkg=$root/.devbuild/pkg
rm -rf "$pkg" && mkdir -p "$pkg" && cp -r "$root/python-bindings/src/ember" "$pkg/" &&
  cp "$root"/.devbuild/python/_core*.so "$pkg/ember/"
export PYTHONPATH=$pkg
if [[ -n "${PYTESTS:-}" ]]; then
  (cd "$log" && python3 -m pytest -q -p no:cacheprovider -rfE \
    $(for f in $PYTESTS; do echo "$root/python-bindings/tests/$f"; done) >"$log/pytest.log" 2>&1)
  echo "pytest: exit $? — $(tail -1 "$log/pytest.log")"
  grep -E "^(FAILED|ERROR)" "$log/pytest.log" | head -20
fi
for family in ${FAMILIES:-}; do
  python3 "$root/benchmarks/run.py" "$family" --device cuda --out "$out/$family-cuda.csv" \
    >"$log/$family.log" 2>&1
  echo "family $family on cuda: exit $?"
  grep -E "ratio|FAILED" "$log/$family.log" | head -12
done
for tool in ${SANITIZE_FILTER:+memcheck racecheck synccheck}; do
  compute-sanitizer --tool "$tool" --error-exitcode 9 "$core_tests" \
    --gtest_filter="$SANITIZE_FILTER" >"$log/$tool.log" 2>&1
  echo "$tool ($SANITIZE_FILTER): exit $? $(grep -hE 'ERROR SUMMARY' "$log/$tool.log" | tail -1) $(grep -hE '^\[  (PASSED|FAILED) ' "$log/$tool.log" | tr '\n' ' ')"
done
echo "total: $(($(date +%s) - start)) s"
