"""train_gpt.py end to end on the CPU, shortened (a tiny model, a few dozen steps): its files,
its loss falling, bfloat16 autocast, resuming exactly and --max-val-loss."""

import json
import math

from conftest import run_script

TINY = ("--steps", 40, "--warmup", 5, "--eval-every", 20, "--eval-windows", 32,
        "--batch-size", 8, "--block-size", 16, "--layers", 1, "--channels", 32, "--heads", 2,
        "--sample-chars", 40)


def test_trains_samples_and_resumes_exactly(tmp_path):
    full, first, resumed = tmp_path / "full", tmp_path / "first", tmp_path / "resumed"
    done = run_script("train_gpt.py", *TINY, "--out", full)
    assert "validation loss" in done.stdout
    for name in ("loss.png", "samples.txt", "metrics.json", "checkpoint.safetensors"):
        assert (full / name).stat().st_size > 0, name
    result = json.loads((full / "metrics.json").read_text())
    assert result["history"]["step"] == [20, 40]
    # a uniform guess over the 103 characters costs ln 103 = 4.63 nats; 40 tiny steps learn
    # the letters' frequencies at least
    assert result["val_loss"] < 0.8 * math.log(103)
    assert (full / "samples.txt").read_text().startswith("The ")

    run_script("train_gpt.py", *TINY, "--stop-after", 20, "--out", first)
    done = run_script("train_gpt.py", *TINY, "--out", resumed,
                      "--resume", first / "checkpoint.safetensors")
    assert "resumed after step 20" in done.stdout
    want = result["history"]
    got = json.loads((resumed / "metrics.json").read_text())["history"]
    assert got == want  # the same steps, losses and samples as without the interruption
    assert (resumed / "samples.txt").read_text() == (full / "samples.txt").read_text()


def test_bfloat16_autocast_trains(tmp_path):
    run_script("train_gpt.py", *TINY, "--autocast", "bf16", "--out", tmp_path)
    result = json.loads((tmp_path / "metrics.json").read_text())
    assert result["args"]["autocast"] == "bf16"
    assert result["val_loss"] < 0.8 * math.log(103)


def test_max_val_loss_fails_the_run(tmp_path):
    done = run_script("train_gpt.py", *TINY, "--steps", 10, "--eval-every", 10, "--out",
                      tmp_path, "--max-val-loss", 0.01, check=False)
    assert done.returncode == 1
    assert "above --max-val-loss" in done.stderr
