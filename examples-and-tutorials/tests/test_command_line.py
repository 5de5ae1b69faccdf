"""Every example's command line: --help documents every option, and a --device this machine
cannot use is refused in one line (argparse's usage error), not with a traceback."""

import re
import subprocess
import sys

import pytest
from conftest import PYTHON

import ember

SCRIPTS = ["train_digits.py", "mlp_digits.py", "train_mnist.py", "train_cifar10.py",
           "style_transfer.py", "train_gpt.py"]


def run(name, *args):
    return subprocess.run([sys.executable, str(PYTHON / name), *args], capture_output=True,
                          text=True, timeout=120)


def undocumented(help_text):
    """The options of an argparse --help text that have no help string."""
    lines = help_text.splitlines()
    missing = []
    for i, line in enumerate(lines):
        m = re.match(r"^  (?:-\w(?: \S+)?, )?(--[\w-]+)(?: [A-Z_.\[\] ]+?)?(\s{2,}\S.*)?$", line)
        if not m or m.group(1) == "--help":
            continue
        follows = i + 1 < len(lines) and re.match(r"^ {6,}\S", lines[i + 1])
        if not m.group(2) and not follows:
            missing.append(m.group(1))
    return missing


def test_undocumented_finds_an_option_without_help():
    text = "options:\n  -h, --help  show this help\n  --steps STEPS\n  --lr LR     the rate\n"
    assert undocumented(text) == ["--steps"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_documents_every_option(name):
    done = run(name, "--help")
    assert done.returncode == 0, done.stderr
    assert "--device" in done.stdout
    assert undocumented(done.stdout) == []


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_malformed_device_is_one_line(name):
    done = run(name, "--device", "tpu")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "argument --device: 'tpu' is not a device" in done.stderr


@pytest.mark.skipif(ember.cuda.is_available(), reason="this machine has a usable GPU")
@pytest.mark.parametrize("name", SCRIPTS)
def test_cuda_without_a_gpu_is_one_line(name):
    done = run(name, "--device", "cuda")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and "none is usable here" in error[0] and "--device cpu" in error[0]
