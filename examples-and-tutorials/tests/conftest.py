"""Helpers of the example tests: run a script of python/ in a subprocess, read its metrics."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]  # examples-and-tutorials/
PYTHON = ROOT / "python"


# The device the example scripts run on: the CPU, or EMBER_EXAMPLES_DEVICE (cuda on a GPU machine:
# ci/gpu-stack.sh runs these tests there too).
DEVICE = os.environ.get("EMBER_EXAMPLES_DEVICE", "cpu")


def run_script(name, *args, check=True, timeout=300):
    """Runs python/<name> with args on DEVICE; returns the CompletedProcess (text output)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(PYTHON / name), "--device", DEVICE, *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout)
    if check and done.returncode != 0:
        pytest.fail(f"{name} exited {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def metrics(out):
    """The metrics.json a training script wrote into out."""
    return json.loads((pathlib.Path(out) / "metrics.json").read_text())


def assert_outputs(out):
    """The plots, metrics and checkpoint every training script writes."""
    for name in ("curves.png", "confusion.png", "misclassified.png", "metrics.json",
                 "checkpoint.safetensors"):
        path = pathlib.Path(out) / name
        assert path.is_file() and path.stat().st_size > 0, f"{name} was not written"
