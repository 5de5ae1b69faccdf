"""train_digits_ddp.py under the launcher with two processes on 127.0.0.1: it trains (eagerly and
with compiled steps), the ranks agree, and a failing rank stops the launcher with its exit
code."""

import json
import subprocess
import sys

import pytest
from conftest import PYTHON

import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(),
                                reason="this build has no gloo backend (libgloo-dev missing)")


def launch(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "ember.distributed.run", "--standalone",
                           "--nproc-per-node", "2", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_two_processes_train_the_digits_cnn(tmp_path, compiled):
    done = launch(PYTHON / "train_digits_ddp.py", "--epochs", 2, "--out", tmp_path,
                  "--timeout", 120, *(["--compile"] if compiled else []))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 process(es), backend gloo" in done.stdout
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["world_size"] == 2
    assert metrics["test_accuracy"] >= 0.85  # 2 epochs of half the data per process: ~95 %
    losses = metrics["history"]["train_loss"]
    assert losses[1] < losses[0]


def test_a_failing_rank_stops_the_launcher_with_its_code(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys, time\n"
                      "sys.exit(7) if os.environ['RANK'] == '1' else time.sleep(60)\n")
    done = launch(script, timeout=60)
    assert done.returncode == 7
    assert "local rank 1 exited with code 7" in done.stderr
