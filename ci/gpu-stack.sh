#!/usr/bin/env bash
# Every layer on a GPU machine, in one call: builds core-runtime (CUDA, one architecture, with its
# tests) and runs its whole suite, builds autodiff-engine against it and runs its suite (its CUDA
# half included) and compute-sanitizer memcheck over the CUDA half, builds the Python package and
# runs its pytest suite, then the training benchmark family through that package on CUDA (and on
# this host's CPU) against PyTorch, the default example (train_digits) on the GPU, the example
# tests with the scripts on the GPU (EMBER_EXAMPLES_DEVICE=cuda), and each tutorial's script. With
# EMBER_RACECHECK_FILTER set, racecheck runs over those core-runtime tests last, for whatever time
# is left of EMBER_STACK_BUDGET seconds (default 560). Logs are packed into OUT_DIR/logs.tgz;
# summary, CSVs and the example's metrics stay beside it.
#   usage: ci/gpu-stack.sh OUT_DIR
set -uo pipefail
out=${1:?usage: ci/gpu-stack.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$out/work
mkdir -p "$work"
jobs=$(nproc)
prefix=$root/.devbuild/prefix
summary=$out/summary.txt
note() { echo "$*" | tee -a "$summary"; }
# The distribution's compiler, which links libstdc++ as a shared library. A toolchain that links
# it statically into each shared library (as the H200 image's default g++ does) gives
# libember_core a private copy of libstdc++ whose exported symbols clash with the system's
# copy that NumPy loads: iostream calls then crash in a Python process that imported NumPy first.
if [[ -x /usr/bin/g++ ]]; then
  export CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++
fi

start=$(date +%s)
cmake -S "$root/core-runtime" -B "$root/.devbuild/core" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DEMBER_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DEMBER_BUILD_TESTS=ON \
  >"$work/core-configure.log" 2>&1 &&
  ninja -C "$root/.devbuild/core" -j"$jobs" >"$work/core-build.log" 2>&1 &&
  cmake --install "$root/.devbuild/core" --prefix "$prefix" >/dev/null ||
  { note "core-runtime build failed"; tail -40 "$work"/core-*.log; exit 1; }
cmake -S "$root/autodiff-engine" -B "$root/.devbuild/autodiff" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >"$work/ad-configure.log" 2>&1 &&
  ninja -C "$root/.devbuild/autodiff" -j"$jobs" >"$work/ad-build.log" 2>&1 &&
  cmake --install "$root/.devbuild/autodiff" --prefix "$prefix" >/dev/null ||
  { note "autodiff-engine build failed"; grep -E "error" -A5 "$work/ad-build.log" | head -60; exit 1; }
note "builds: $(( $(date +%s) - start )) s"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$summary"

core_tests=$root/.devbuild/core/tests/ember_core_tests
"$core_tests" >"$work/core-tests.log" 2>&1
note "core-runtime tests: exit $? — $(grep -E '^\[  PASSED' "$work/core-tests.log") $(grep -cE '^\[  SKIPPED \] ' "$work/core-tests.log") skipped"
grep -E "^\[  FAILED  \]" "$work/core-tests.log" | sort -u | head -40 | tee -a "$summary"

tests=$root/.devbuild/autodiff/tests/ember_autodiff_tests
"$tests" --gtest_output="xml:$out/autodiff-tests.xml" >"$work/autodiff-tests.log" 2>&1
note "autodiff-engine tests: exit $? — $(grep -E '^\[  PASSED' "$work/autodiff-tests.log") $(grep -cE '^\[  SKIPPED \] ' "$work/autodiff-tests.log") skipped"
grep -E "^\[  FAILED  \]" "$work/autodiff-tests.log" | sort -u | head -40 | tee -a "$summary"
grep -E "^\[ +OK \] Cuda\." "$work/autodiff-tests.log" | tee -a "$summary"
compute-sanitizer --tool memcheck --error-exitcode 9 "$tests" --gtest_filter='Cuda*' \
  >"$work/autodiff-memcheck.log" 2>&1
note "autodiff-engine CUDA half under memcheck: exit $? — $(grep -E 'ERROR SUMMARY' "$work/autodiff-memcheck.log" | tail -1)"

# The Python package built with CMake directly and used from a folder on PYTHONPATH: the
# machine's python3 has pybind11, numpy, pytest and torch, but pip may not install into it.
pkg=$root/.devbuild/python
cmake -S "$root/python-bindings" -B "$root/.devbuild/pybind" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DPython_EXECUTABLE="$(command -v python3)" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" >"$work/python-build.log" 2>&1 &&
  ninja -C "$root/.devbuild/pybind" -j"$jobs" >>"$work/python-build.log" 2>&1 &&
  rm -rf "$pkg" && mkdir -p "$pkg" && cp -r "$root/python-bindings/src/ember" "$pkg/" &&
  cp "$root"/.devbuild/pybind/_core*.so "$pkg/ember/" ||
  { note "python-bindings build failed"; grep -E "error" -A5 "$work/python-build.log" | head -40; }
export PYTHONPATH=$pkg
# The two tests of the wheel's bundled libraries are left out: this package is the module built
# here beside a copy of the sources, and the C++ libraries stay in the prefix.
wheel_only=$root/python-bindings/tests/test_package.py
(cd "$work" && python3 -m pytest "$root/python-bindings/tests" -q -rs -p no:cacheprovider \
  --deselect "$wheel_only::test_the_module_finds_the_bundled_libraries_beside_it_through_origin" \
  --deselect "$wheel_only::test_a_copy_of_the_package_runs_with_only_its_own_libraries" \
  >"$work/pytest.log" 2>&1)
note "python-bindings pytest: exit $? — $(tail -1 "$work/pytest.log")"
grep -E "FAILED|SKIPPED" "$work/pytest.log" | head -20 | tee -a "$summary"

# The family calls Ember only through the package on PYTHONPATH: run.py builds no ember_bench.
for device in cuda cpu; do
  PYTHONUNBUFFERED=1 python3 "$root/benchmarks/run.py" training --device $device \
    --out "$out/training-$device.csv" >"$work/train-$device.log" 2>&1
  note "training family on $device: exit $?"
  tee -a "$summary" <"$work/train-$device.log" | tail -4
done
# The default example on the GPU with its default settings: its metrics.json beside the CSVs.
MPLBACKEND=Agg python3 "$root/examples-and-tutorials/python/train_digits.py" --device cuda \
  --out "$work/train_digits" >"$work/train-digits.log" 2>&1
note "train_digits on cuda: exit $?"
tail -4 "$work/train-digits.log" | tee -a "$summary"
cp "$work/train_digits/metrics.json" "$out/train-digits-cuda-metrics.json" 2>/dev/null
# The example tests with their scripts on the GPU (the notebook and README tests need Jupyter,
# which this machine lacks; each tutorial's jupytext script runs as a plain program instead).
(cd "$work" && EMBER_EXAMPLES_DEVICE=cuda MPLBACKEND=Agg python3 -m pytest \
  "$root/examples-and-tutorials/tests" -q -rs -p no:cacheprovider \
  --ignore="$root/examples-and-tutorials/tests/test_tutorials.py" \
  --ignore="$root/examples-and-tutorials/tests/test_exercises.py" \
  --ignore="$root/examples-and-tutorials/tests/test_readme_blocks.py" >"$work/examples.log" 2>&1)
note "example tests on cuda: exit $? — $(tail -1 "$work/examples.log")"
grep -E "FAILED|SKIPPED" "$work/examples.log" | head -20 | tee -a "$summary"
for script in "$root"/examples-and-tutorials/tutorials/*.py; do
  name=$(basename "$script" .py)
  mkdir -p "$work/$name"
  t0=$(date +%s)
  (cd "$work/$name" && MPLBACKEND=Agg python3 "$script" >"$work/$name.log" 2>&1)
  note "tutorial $name: exit $?; $(( $(date +%s) - t0 )) s; $(grep -m1 'device for this tutorial' "$work/$name.log")"
done

if [[ -n "${EMBER_RACECHECK_FILTER:-}" ]]; then
  left=$(( ${EMBER_STACK_BUDGET:-560} - ($(date +%s) - start) ))
  if (( left > 20 )); then
    timeout "$left" compute-sanitizer --tool racecheck --error-exitcode 9 "$core_tests" \
      --gtest_filter="$EMBER_RACECHECK_FILTER" >"$work/racecheck.log" 2>&1
    code=$?
    ((code == 124)) && cut=" (cut off after $left s)" || cut=""
    note "racecheck: $(grep -E 'ERROR SUMMARY' "$work/racecheck.log" | tail -1 | sed 's/^=* *//')$cut; exit $code; $(grep -E '^\[  PASSED' "$work/racecheck.log"); $(grep -cE '^\[       OK' "$work/racecheck.log") tests finished"
  else
    note "racecheck: not run, $left s left"
  fi
fi
tar -czf "$out/logs.tgz" -C "$out" work && rm -rf "$work"
