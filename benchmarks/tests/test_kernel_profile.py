"""tools/kernel_profile.py's summary of an Nsight Compute CSV (the profiling itself needs a GPU)."""

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "kernel_profile.py"
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def row(n, kernel, unit, value):
    return (f'"{n}","1","python3","h","{kernel}","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"')


def test_kernels_are_summed_by_name_in_microseconds(tmp_path):
    csv = tmp_path / "k.csv"
    csv.write_text("\n".join(["==PROF== Connected to process 1", HEADER,
                              row(0, "gemm", "usecond", "10.5"), row(1, "relu", "nsecond", "2,000"),
                              row(2, "gemm", "msecond", "0.0095")]) + "\n")
    out = subprocess.run([sys.executable, str(TOOL), "--summarise", str(csv)], check=True,
                         capture_output=True, text=True).stdout
    lines = out.splitlines()
    assert lines[0] == "k.csv: 3 kernels, 22.0 us of GPU time"
    assert lines[1].split()[:4] == ["20.0", "us", "90.9", "%"] and lines[1].endswith("gemm")
    assert lines[2].split()[:2] == ["2.0", "us"] and lines[2].endswith("relu")


def test_the_short_unit_names_of_newer_ncu_releases_are_read(tmp_path):
    csv = tmp_path / "k.csv"
    csv.write_text("\n".join([HEADER, row(0, "gemm", "us", "10.5"), row(1, "relu", "ns", "2,000"),
                              row(2, "gemm", "ms", "0.0095")]) + "\n")
    out = subprocess.run([sys.executable, str(TOOL), "--summarise", str(csv)], check=True,
                         capture_output=True, text=True).stdout
    assert out.splitlines()[0] == "k.csv: 3 kernels, 22.0 us of GPU time"
