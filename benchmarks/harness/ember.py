"""Ember's side of every measurement: building benchmarks/cpp (the ember_bench program) and
running it on one case at a time."""

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.timer import TimerOptions, TimeStats

CPP_DIR = Path(__file__).resolve().parents[1] / "cpp"


class BenchError(RuntimeError):
    """ember_bench failed on a case; the message carries its stderr."""


def build(build_dir: Path, device: str, ember_prefix: str | None, cmake_args: list[str],
          cpp_dir: Path = CPP_DIR, env: dict | None = None) -> Path:
    """Configures and builds ember_bench (Release) in build_dir and returns its path. With
    ember_prefix it links the core-runtime installed there, else it builds core-runtime from the
    checkout cpp_dir belongs to (see cpp/CMakeLists.txt); gate.py passes another checkout's.
    An existing build_dir is reused incrementally. env: the build's environment."""
    args = ["cmake", "-S", str(cpp_dir), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
            "--no-warn-unused-cli"]  # EMBER_ENABLE_CUDA is unused with an installed core
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):
        args.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    if ember_prefix:
        args.append(f"-DCMAKE_PREFIX_PATH={ember_prefix}")
    if device == "cpu":
        args.append("-DEMBER_ENABLE_CUDA=OFF")
    elif not any(a.startswith("-DCMAKE_CUDA_ARCHITECTURES") for a in cmake_args):
        args.append("-DCMAKE_CUDA_ARCHITECTURES=native")  # this machine's GPU only: a short build
    subprocess.run(args + cmake_args, check=True, stdout=subprocess.DEVNULL, env=env)
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "ember_bench"], check=True,
                   env=env)
    return build_dir / "ember_bench"


class Program:
    """Runs a built ember_bench. Each case runs in a fresh process, so one case's cached blocks
    and warm caches never flatter the next."""

    def __init__(self, path: Path, device: str, timer: TimerOptions):
        self.path, self.device, self.timer = Path(path), device, timer

    def run(self, case: str) -> dict:
        """The JSON object ember_bench prints for one case (see cpp/ember_bench.cpp)."""
        args = [str(self.path), "--device", self.device, "--warmup", str(self.timer.warmup),
                "--repeat", str(self.timer.repeat), "--min-sample-ms",
                str(self.timer.min_sample_ms), case]
        return json.loads(self._output(args))

    def time(self, case: str) -> TimeStats:
        r = self.run(case)
        return TimeStats(r["median_ms"], r["q1_ms"], r["q3_ms"], r["min_ms"])

    def instructions(self, case: str) -> int:
        """Instructions executed by one call of a CPU case, counted by callgrind: the same count
        on every run of the same binary, however busy the machine is. One thread (OpenMP and
        OpenBLAS) keeps the count free of spin-waiting."""
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            self._output(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                          f"--callgrind-out-file={out}", str(self.path), "--callgrind", case],
                         env=env)
            totals = re.search(r"^totals:\s+(\d+)", out.read_text(), re.MULTILINE)
        return int(totals.group(1))

    def _output(self, args: list[str], env=None) -> str:
        proc = subprocess.run(args, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise BenchError(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout
