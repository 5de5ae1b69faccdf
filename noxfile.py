"""Ember's build and test entry points (https://nox.thea.codes).

  nox -s build    configure, build and install the C++ packages into .install/
  nox -s tests    every test suite of every package (what CI runs, with lint and asan)
  nox -s lint     clang-format (C++/CUDA) and ruff (Python), checking only
  nox -s stubs    rewrites the .pyi stubs' parts that follow from the op schemas (*.def)
  nox -s asan     core-runtime's tests under AddressSanitizer + UBSan (CPU-only build)
  nox -s cross_aarch64   core-runtime's CPU sources compiled for aarch64 (objects only)
  nox -s demo     the main job: builds Ember and trains the default example (train_digits)
  nox -s tutorials_html   the tutorial notebooks executed and rendered to build/tutorials-html/
  nox -s bench_gate   the benchmark gate: this checkout against a base commit, side by side
  nox -s bench, bench_compare, bench_plot, bench_baseline: see benchmarks/README.md

`nox` alone runs lint, tests, asan and bench_gate. Build trees live in build/, installs in
.install/; a second run rebuilds only what changed (ninja, and ccache when installed).

The C++ packages are built as an outside user would build them: core-runtime is installed, and
everything above it (autodiff-engine, python-bindings, the examples) finds that installed copy
with find_package. CUDA is compiled, for one GPU architecture, when nvcc is found and either a
GPU is visible (nvidia-smi lists one) or EMBER_ENABLE_CUDA=1 asks for it: a first build on a
laptop without a GPU skips many minutes of CUDA compilation, while CI (which sets
EMBER_ENABLE_CUDA=1) compiles and links every CUDA source without a GPU. Environment:
  EMBER_CUDA_ARCHITECTURES=80   the GPU architecture to compile for (default 90: the H200)
  EMBER_ENABLE_CUDA=1           compile CUDA even where no GPU is visible
  EMBER_ENABLE_CUDA=0           build for the CPU only, even where a GPU and nvcc are present
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"  # every build tree
PREFIX = ROOT / ".install"  # where `build` installs core-runtime and autodiff-engine

nox.options.sessions = ["lint", "tests", "asan", "bench_gate"]
nox.options.reuse_venv = "yes"  # keep each session's virtualenv between runs
nox.options.error_on_external_run = True


# ---------------------------------------------------------------- helpers


def find_nvcc() -> str | None:
    """nvcc on PATH, or in the CUDA toolkit's usual place; None when CUDA is not installed."""
    nvcc = shutil.which("nvcc")
    if nvcc is None and Path("/usr/local/cuda/bin/nvcc").exists():
        nvcc = "/usr/local/cuda/bin/nvcc"
    return nvcc


def gpu_visible() -> bool:
    """True when nvidia-smi lists at least one GPU."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    return listed.returncode == 0 and "GPU" in listed.stdout


def cuda_wanted() -> bool:
    """Whether to compile CUDA: EMBER_ENABLE_CUDA=1/0 decides when set, else a visible GPU."""
    setting = os.environ.get("EMBER_ENABLE_CUDA", "")
    if setting in ("0", "1"):
        return setting == "1"
    return gpu_visible()


def scipy_openblas() -> str | None:
    """The folder of the scipy-openblas32 package that ci/requirements.txt installed beside nox:
    core-runtime links its OpenBLAS (see EMBER_SCIPY_OPENBLAS in core-runtime/CMakeLists.txt)."""
    try:
        import scipy_openblas32
    except ImportError:
        return None
    return scipy_openblas32.__path__[0]


def cmake_args(cuda: bool = True, build_type: str = "Release") -> list[str]:
    """Options every configure gets: the build type, ninja and ccache when present, the BLAS, and
    the CUDA compiler with one architecture when nvcc is found and CUDA is wanted (cuda_wanted;
    cuda=False builds for the CPU only). One set serves every project, so options a project does
    not use are not warned about."""
    args = [f"-DCMAKE_BUILD_TYPE={build_type}", "--no-warn-unused-cli"]
    openblas = scipy_openblas()
    if openblas:
        args.append(f"-DEMBER_SCIPY_OPENBLAS={openblas}")
    else:
        print(
            "WARNING: scipy-openblas32 is not installed beside nox, so core-runtime links the "
            "system BLAS, which may be too old for this CPU (5x slower GEMMs on Debian 12). "
            "Fix: pip install -r ci/requirements.txt (or pip install scipy-openblas32) in nox's "
            "environment.",
            file=sys.stderr,
        )
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    launchers = ["CXX"]
    nvcc = find_nvcc() if cuda and cuda_wanted() else None
    if nvcc:
        arch = os.environ.get("EMBER_CUDA_ARCHITECTURES", "90")
        # EMBER_ENABLE_CUDA=ON said outright: a build tree configured for the CPU only keeps OFF
        # in its cache otherwise.
        args += ["-DEMBER_ENABLE_CUDA=ON", f"-DCMAKE_CUDA_COMPILER={nvcc}",
                 f"-DCMAKE_CUDA_ARCHITECTURES={arch}"]
        launchers.append("CUDA")
    else:
        args.append("-DEMBER_ENABLE_CUDA=OFF")
    if shutil.which("ccache"):
        args += [f"-DCMAKE_{lang}_COMPILER_LAUNCHER=ccache" for lang in launchers]
    return args


# ccache rewrites paths under the checkout relative to the build folder, so that builds in other
# folders of the same depth (build/core, build/core-static, the gate's build/gate-bench in this
# tree and in its base worktree) share their cache entries.
CCACHE_ENV = {"CCACHE_BASEDIR": str(ROOT)}


def cmake_build(session, source: str, build_dir: Path, *options: str,
                install_to: Path | None = None, prefix_path: Path = PREFIX, **args) -> None:
    """Configures and builds one CMake project, finding installed packages in prefix_path, and
    installs it into install_to when given. args go to cmake_args."""
    session.run("cmake", "-S", str(ROOT / source), "-B", str(build_dir), *cmake_args(**args),
                f"-DCMAKE_PREFIX_PATH={prefix_path}", *options, external=True)
    session.run("cmake", "--build", str(build_dir), external=True, env=CCACHE_ENV)
    if install_to:
        session.run("cmake", "--install", str(build_dir), "--prefix", str(install_to),
                    external=True)


# The instruction sets core-runtime compiles its hot CPU kernels for besides the baseline
# (EMBER_CPU_ISAS): every one for the tests and a library to pass around.
ALL_CPU_ISAS = "AVX2;AVX512"


def install_cpp_packages(session, with_tests: bool, for_this_machine: bool = False) -> None:
    """core-runtime (shared, with CUDA when cuda_wanted), then autodiff-engine against it, both
    installed into PREFIX. The hot CPU kernels are compiled in the copies of
    ALL_CPU_ISAS and the baseline, chosen at run time; for_this_machine compiles one copy, for
    this CPU alone (-march=native: a library that may not run on another machine)."""
    tests = f"-DEMBER_BUILD_TESTS={'ON' if with_tests else 'OFF'}"
    isas = ["-DEMBER_CPU_ISAS=", "-DEMBER_CPU_BASELINE=native"] if for_this_machine else [
        f"-DEMBER_CPU_ISAS={ALL_CPU_ISAS}", "-DEMBER_CPU_BASELINE=x86-64-v2"]
    cmake_build(session, "core-runtime", BUILD / "core", tests, *isas, install_to=PREFIX)
    cmake_build(session, "autodiff-engine", BUILD / "autodiff", tests, install_to=PREFIX)


def ctest(session, build_dir: Path, env: dict | None = None) -> None:
    session.run("ctest", "--test-dir", str(build_dir), "--output-on-failure", "--no-tests=error",
                "--parallel", str(os.cpu_count() or 2), external=True, env=env)


def build_cpp_examples(session, core_prefix: Path, build_dir: Path) -> None:
    """Builds examples-and-tutorials/cpp against the core-runtime installed in core_prefix."""
    cmake_build(session, "examples-and-tutorials/cpp", build_dir, prefix_path=core_prefix)


def build_wheel(session) -> Path:
    """Builds python-bindings' wheel into build/wheel/ against the C++ packages in PREFIX and
    returns its path. The wheel is self-contained: it carries the shared C++ libraries beside
    the compiled module, which finds them through a relative RUNPATH. No build isolation and one
    build tree kept in build/python/, so that the compiler command stays the same from one run
    to the next and a rebuild compiles only what changed (ccache serves the rest)."""
    pyproject = nox.project.load_toml(ROOT / "python-bindings/pyproject.toml")
    session.install(*pyproject["build-system"]["requires"])
    wheel_dir = BUILD / "wheel"
    shutil.rmtree(wheel_dir, ignore_errors=True)
    env = {"CMAKE_PREFIX_PATH": str(PREFIX)}
    if shutil.which("ccache"):
        env["CMAKE_CXX_COMPILER_LAUNCHER"] = "ccache"
    session.run("python", "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                "--wheel-dir", str(wheel_dir), f"--config-settings=build-dir={BUILD}/python/"
                "{wheel_tag}", str(ROOT / "python-bindings"), env=env)
    (wheel,) = wheel_dir.glob("ember-*.whl")
    return wheel


def install_python_package(session, extras: str = "") -> None:
    """Builds the wheel (build_wheel) and installs it into the session's virtualenv, so that
    what is tested is the wheel itself, not the source tree. The same version is installed
    again on every run: --force-reinstall for the wheel alone, then its dependencies."""
    wheel = build_wheel(session)
    session.install("--force-reinstall", "--no-deps", str(wheel))
    session.install(f"{wheel}{extras}")


def tracked_files(*patterns: str) -> list[str]:
    """Files git knows of (committed or new, not ignored) that match the patterns."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--",
                          *patterns], cwd=ROOT, check=True, capture_output=True, text=True)
    return [f for f in out.stdout.split("\n") if f and (ROOT / f).exists()]


# ---------------------------------------------------------------- sessions


@nox.session(python=False)
def build(session):
    """Builds core-runtime and autodiff-engine with their tests and installs them into .install/."""
    install_cpp_packages(session, with_tests=True)


@nox.session
def tests(session):
    """Every test suite of every package, against the installed packages."""
    install_cpp_packages(session, with_tests=True)
    ctest(session, BUILD / "core")
    ctest(session, BUILD / "autodiff")

    # The C++ example is an outside consumer of the installed core-runtime: once against the
    # shared library built above, once against a static one (which checks that EmberCore's
    # config finds the static library's own dependencies: Threads, BLAS, CUDA).
    # Each example checks its own results and exits non-zero on a mismatch. Both kinds of library
    # compile every file with the same command (core-runtime's CMakeLists.txt), so the static
    # build is served from ccache.
    build_cpp_examples(session, PREFIX, BUILD / "examples-shared")
    ctest(session, BUILD / "examples-shared")
    static_prefix = BUILD / "install-static"
    cmake_build(session, "core-runtime", BUILD / "core-static", "-DBUILD_SHARED_LIBS=OFF",
                "-DEMBER_BUILD_TESTS=OFF", install_to=static_prefix)
    build_cpp_examples(session, static_prefix, BUILD / "examples-static")
    ctest(session, BUILD / "examples-static")

    # python-bindings' wheel, built once against .install/ and installed into this session's
    # virtualenv; its suite runs against the wheel, then the Python examples and tutorials.
    install_python_package(session, extras="[test]")
    session.run("pytest", str(ROOT / "python-bindings/tests"))
    session.install("-r", str(ROOT / "examples-and-tutorials/requirements.txt"))
    session.run("pytest", str(ROOT / "examples-and-tutorials/tests"))

    # The benchmark harness's own tests; the gate itself is the bench_gate session.
    session.install("-r", str(ROOT / "benchmarks/requirements.txt"))
    session.run("pytest", str(ROOT / "benchmarks/tests"))


@nox.session
def lint(session):
    """Checks formatting (clang-format) and Python (ruff); changes nothing."""
    session.install("-r", str(ROOT / "ci/requirements-lint.txt"))
    cpp = tracked_files("*.h", "*.cpp", "*.cu", "*.cuh")
    session.run("clang-format", "--dry-run", "-Werror", *cpp, external=True)
    session.run("ruff", "check", str(ROOT))


@nox.session(python=False)
def stubs(session):
    """Writes the parts of the Python package's type stubs that follow from the op schemas
    (core-runtime/include/ember/ops/*.def): python-bindings/tools/gen_stubs.py. No build needed;
    tests/test_stubs.py fails while they are stale."""
    session.run(sys.executable, str(ROOT / "python-bindings/tools/gen_stubs.py"), *session.posargs)


@nox.session(python=False)
def asan(session):
    """core-runtime's test suite under AddressSanitizer + UBSan, in a CPU-only debug build."""
    build_dir = BUILD / "core-asan"
    cmake_build(session, "core-runtime", build_dir, "-DEMBER_SANITIZE=ON",
                "-DEMBER_BUILD_TESTS=ON", cuda=False, build_type="Debug")
    ctest(session, build_dir, env={"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1",
                                   "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"})


@nox.session(python=False)
def cross_aarch64(session):
    """Compiles every C++ source of core-runtime but the CUDA backend for 64-bit Arm with Debian's
    cross compiler (apt install g++-aarch64-linux-gnu), objects only: no Arm libraries are
    needed, and the check is that the x86-64 instruction sets (src/cpu/isa.h) and flags stay out
    of other processors' builds. The flags are the library's own (CMakeLists.txt), less the
    x86-only ones."""
    compiler = shutil.which("aarch64-linux-gnu-g++")
    if not compiler:
        session.error("aarch64-linux-gnu-g++ is not installed: apt install g++-aarch64-linux-gnu")
    core = ROOT / "core-runtime"
    out = BUILD / "cross-aarch64"
    out.mkdir(parents=True, exist_ok=True)
    version = (core / "VERSION").read_text().strip()
    # The lists CMake generates from the files present (kernels.def's families, ember/ops.h).
    generated = out / "generated"
    session.run("cmake", f"-DEMBER_GENERATED_DIR={generated}", "-P",
                str(core / "cmake/EmberGeneratedLists.cmake"), external=True)
    flags = ["-std=c++17", "-O2", "-pthread", "-Wall", "-Wextra", "-Wno-unused-parameter",
             "-Werror", "-Werror=undef", "-fno-trapping-math", "-ffp-contract=off",
             f"-I{core / 'include'}", f"-I{core / 'src'}", f"-I{generated / 'include'}",
             f"-I{generated / 'src'}", f'-DEMBER_CORE_VERSION_STRING="{version}"']
    # What CMakeLists.txt's ember_backend() defines on the files that ask which backends exist.
    backends = ["-DEMBER_WITH_CPU=1", "-DEMBER_WITH_CUDA=0"]
    sources = sorted([*(core / "src/core").glob("*.cpp"), *(core / "src/ops").glob("*.cpp"),
                      *(core / "src/cpu").glob("*.cpp")])
    for source in sources:
        target = out / (source.relative_to(core).as_posix().replace("/", "_") + ".o")
        session.run(compiler, *flags, *backends, "-c", str(source), "-o", str(target),
                    external=True, silent=True)
    session.log(f"{len(sources)} sources compiled for aarch64 into {out}")


@nox.session
def demo(session):
    """The main job: builds Ember, installs the Python package and trains the default example,
    the small CNN on scikit-learn's handwritten digits (examples-and-tutorials/python/
    train_digits.py), writing its plots and checkpoint into out/train_digits/. Arguments go to
    the example (e.g. -- --epochs 5 --device cuda). The hot CPU kernels are compiled once, for
    this CPU (install_cpp_packages' for_this_machine): two copies fewer to compile on a fresh
    machine; only the examples' packages are installed, not the notebooks' Jupyter."""
    install_cpp_packages(session, with_tests=False, for_this_machine=True)
    install_python_package(session)
    session.install("-r", str(ROOT / "examples-and-tutorials/requirements-examples.txt"))
    session.run("python", str(ROOT / "examples-and-tutorials/python/train_digits.py"),
                *session.posargs, env={"MPLBACKEND": "Agg"})


@nox.session
def tutorials_html(session):
    """Executes every tutorial notebook and renders it to HTML, pictures included, into
    build/tutorials-html/ (index.html lists the course); args: notebooks to render (e.g. 02)."""
    install_cpp_packages(session, with_tests=False)
    install_python_package(session)
    session.install("-r", str(ROOT / "examples-and-tutorials/requirements.txt"))
    session.run("python", str(ROOT / "examples-and-tutorials/tutorials_html.py"),
                str(BUILD / "tutorials-html"), *session.posargs)


# ---------------------------------------------------------------- benchmarks
# The harness in benchmarks/ (see its README). bench and bench_baseline run against the
# core-runtime installed in PREFIX, with ember_bench built in build/bench; the gate builds both of
# its sides from source (gate.py).
BENCH = ROOT / "benchmarks"
BENCH_BASELINE = BENCH / "baseline/cpu-quick.csv"
# The quick subset, 3 rounds, one thread on both sides: a 2-core machine's timings of
# multithreaded code swing with any other load, single-threaded ones far less.
BASELINE_OPTIONS = ("--quick", "--rounds", "3", "--threads", "1")


def install_for_benchmarks(session) -> None:
    cmake_build(session, "core-runtime", BUILD / "core", "-DEMBER_BUILD_TESTS=OFF",
                install_to=PREFIX)
    session.install("-r", str(BENCH / "requirements.txt"))


def run_benchmarks(session, *args: str) -> None:
    session.run("python", str(BENCH / "run.py"), "--ember-prefix", str(PREFIX), "--build-dir",
                str(BUILD / "bench"), *args)


@nox.session
def bench(session):
    """Benchmark families on the CPU (args: family names and run.py options) -> benchmarks/out/.
    The Python package is built and installed too: the via=python rows and the training family
    call Ember through it."""
    install_cpp_packages(session, with_tests=False)
    install_python_package(session)
    session.install("-r", str(BENCH / "requirements.txt"))
    run_benchmarks(session, *session.posargs)


@nox.session
def bench_compare(session):
    """compare.py BASE.csv NEW.csv: a markdown table of changes; fails on a regression."""
    session.install("-r", str(BENCH / "requirements.txt"))
    session.run("python", str(BENCH / "compare.py"), *session.posargs)


@nox.session
def bench_plot(session):
    """PNG plots of every metric over the committed results -> benchmarks/out/plots/."""
    session.install("-r", str(BENCH / "requirements.txt"))
    session.run("python", str(BENCH / "plot.py"), *session.posargs)


@nox.session
def bench_gate(session):
    """The benchmark gate (gate.py): this checkout against a base commit (-- --base REV; default:
    the commit of benchmarks/baseline/cpu-quick.csv), built and measured side by side on this
    machine; the table goes to build/gate/gate.md. Fails on a confirmed regression."""
    session.install("-r", str(BENCH / "requirements.txt"))
    openblas = scipy_openblas()
    blas = [f"--cmake-arg=-DEMBER_SCIPY_OPENBLAS={openblas}"] if openblas else []
    session.run("python", str(BENCH / "gate.py"), *blas, *session.posargs)


@nox.session
def bench_baseline(session):
    """Rewrites benchmarks/baseline/cpu-quick.csv, each row the median of three quick runs
    (baseline.py): the record of what was measured where, and the gate's default base commit;
    committing it is a decision."""
    install_for_benchmarks(session)
    session.run("python", str(BENCH / "baseline.py"), str(BENCH_BASELINE), *session.posargs,
                "--", "--ember-prefix", str(PREFIX), "--build-dir", str(BUILD / "bench"),
                *BASELINE_OPTIONS)
