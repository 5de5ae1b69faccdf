"""style_transfer.py end to end on the CPU: the loss falls and both pictures are written."""

from conftest import run_script


def test_loss_falls_and_pictures_are_written(tmp_path):
    done = run_script("style_transfer.py", "--steps", 30, "--size", 32, "--out", tmp_path)
    first, last = (float(x) for x in done.stdout.split("; loss ")[1].split(" -> "))
    assert last < 0.1 * first
    for name in ("stylized.png", "loss.png"):
        assert (tmp_path / name).stat().st_size > 0
