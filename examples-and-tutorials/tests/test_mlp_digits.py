"""mlp_digits.py end to end on the CPU: its files, its accuracy and an exact resume through the
learning-rate schedule."""

from conftest import assert_outputs, metrics, run_script

SMALL = ("--epochs", 4, "--warmup-epochs", 1)


def test_trains_and_resumes_exactly(tmp_path):
    full, first, resumed = tmp_path / "full", tmp_path / "first", tmp_path / "resumed"
    run_script("mlp_digits.py", *SMALL, "--out", full)
    assert_outputs(full)
    assert metrics(full)["test_accuracy"] >= 0.90  # 4 epochs reach about 96 %

    # stopping after epoch 2 of 4 keeps the schedule of the 4-epoch run
    run_script("mlp_digits.py", *SMALL, "--out", first, "--stop-after", 2)
    run_script("mlp_digits.py", *SMALL, "--out", resumed,
               "--resume", first / "checkpoint.safetensors")
    want, got = metrics(full)["history"], metrics(resumed)["history"]
    assert got["train_loss"] == want["train_loss"]
    assert got["test_accuracy"] == want["test_accuracy"]
