"""train_digits.py end to end on the CPU: its files, its accuracy, resuming and --min-accuracy."""

from conftest import assert_outputs, metrics, run_script

SMALL = ("--epochs", 2, "--batch-size", 64, "--lr", 0.1)


def test_trains_and_resumes_exactly(tmp_path):
    full, first, resumed = tmp_path / "full", tmp_path / "first", tmp_path / "resumed"
    done = run_script("train_digits.py", *SMALL, "--out", full)
    assert "test accuracy" in done.stdout and "peak memory" in done.stdout
    assert_outputs(full)
    assert metrics(full)["test_accuracy"] >= 0.93  # 2 epochs reach about 97 %

    run_script("train_digits.py", *SMALL, "--stop-after", 1, "--out", first)
    done = run_script("train_digits.py", *SMALL, "--out", resumed,
                      "--resume", first / "checkpoint.safetensors")
    assert "resumed" in done.stdout
    want, got = metrics(full)["history"], metrics(resumed)["history"]
    # the resumed run's second epoch is the uninterrupted run's, number for number
    assert got["train_loss"] == want["train_loss"]
    assert got["test_accuracy"] == want["test_accuracy"]


def test_min_accuracy_fails_the_run(tmp_path):
    done = run_script("train_digits.py", *SMALL, "--epochs", 1, "--out", tmp_path,
                      "--min-accuracy", 1.01, check=False)
    assert done.returncode == 1
    assert "below --min-accuracy" in done.stderr


def test_help():
    done = run_script("train_digits.py", "--help")
    for option in ("--device", "--epochs", "--batch-size", "--lr", "--seed", "--out", "--resume",
                   "--min-accuracy"):
        assert option in done.stdout
