"""ember.save / ember.load: round trips of nested state, atomic writes (a writer killed
mid-save leaves a complete file), corrupt files, and a bit-exact resume of training from a
checkpoint of model + optimizer + scheduler + RNG + step."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
from ember import nn, optim


def test_round_trip_of_nested_state(tmp_path):
    obj = {
        "model": {"w": ember.randn(3, 4), "i": ember.arange(5), "scalar": ember.tensor(2.5),
                  "d": ember.ones(2).double()},
        "state": {0: {"step": 3, "buf": ember.zeros(2)}, 7: {}},
        "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1]}],
        "array": np.arange(6).reshape(2, 3),
        "mask": ember.tensor([True, False]),
        "half": ember.ones(3).half(),
        "bf16": ember.tensor([1.5, -2.25]).to(ember.bfloat16),
        "misc": [None, "text", 1e-300, float("inf"), 2**62],
    }
    ember.save(obj, tmp_path / "ck.safetensors")
    back = ember.load(tmp_path / "ck.safetensors")
    assert back["state"][0]["step"] == 3 and 7 in back["state"] and back["state"][7] == {}
    assert back["groups"][0]["betas"] == (0.9, 0.999) and back["misc"] == obj["misc"]
    np.testing.assert_array_equal(back["array"], obj["array"])
    assert back["model"]["scalar"].shape == ()
    for key in ("w", "i", "d"):
        assert back["model"][key].dtype == obj["model"][key].dtype
        np.testing.assert_array_equal(back["model"][key].numpy(), obj["model"][key].numpy())
    assert back["mask"].dtype == ember.bool and back["half"].dtype == ember.float16
    assert back["bf16"].dtype == ember.bfloat16
    np.testing.assert_array_equal(back["bf16"].float().numpy(), [1.5, -2.25])
    assert ember.load(tmp_path / "ck.safetensors", map_location="cpu")["model"]["w"].device == \
        ember.device("cpu")


def test_unsupported_objects_and_missing_file(tmp_path):
    with pytest.raises(TypeError, match="cannot save a object at 'x'"):
        ember.save({"x": object()}, tmp_path / "a")
    assert not os.listdir(tmp_path)  # nothing left behind
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "none.safetensors")


def test_corrupt_files_raise_checkpoint_error(tmp_path):
    path = tmp_path / "ck.safetensors"
    ember.save({"w": ember.randn(100)}, path)
    data = path.read_bytes()
    cases = {"truncated": data[:len(data) // 2], "garbage": b"\x07" * 64,
             "empty": b"", "header": (10**9).to_bytes(8, "little") + data[8:]}
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
        with pytest.raises(ember.CheckpointError, match=f"{name} is not a readable"):
            ember.load(tmp_path / name)


WRITER = """
import sys, ember
path = sys.argv[1]
big = ember.ones(8_000_000)
print("ready", flush=True)
for i in range(1, 1000):
    ember.save({"step": i, "w": big * i}, path)
"""


def test_killed_writer_never_leaves_a_partial_file(tmp_path):
    path = tmp_path / "ck.safetensors"
    ember.save({"step": 0, "w": ember.zeros(8_000_000)}, path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for delay in (0.05, 0.3, 0.7):
        child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(path)],
                                 stdout=subprocess.PIPE, env=env)
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        back = ember.load(path)
        w = back["w"].numpy()
        assert w.shape == (8_000_000,) and w[0] == back["step"] and w[-1] == back["step"]
    leftovers = [f for f in os.listdir(tmp_path) if f != "ck.safetensors"]
    assert all(f.startswith(".ck.safetensors.") and f.endswith(".tmp") for f in leftovers)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(),
                                  nn.Dropout(0.3), nn.Linear(16, 3))

    def forward(self, x):
        return self.body(x)


def make():
    model = Net()
    opt = optim.AdamW(model.parameters(), lr=0.01)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    return model, opt, sched


def train(model, opt, sched, steps, start):
    rng = np.random.default_rng(start)  # the data depend on the step number only
    for _ in range(steps):
        x = ember.tensor(rng.standard_normal((8, 4)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 3, 8))
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()
    return start + steps


def test_resume_from_checkpoint_is_bit_exact(tmp_path):
    ember.manual_seed(0)
    model, opt, sched = make()
    step = train(model, opt, sched, 3, 0)
    ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(), "rng": ember.get_rng_state(), "step": step},
               tmp_path / "ck.safetensors")
    train(model, opt, sched, 3, step)
    expected = {k: v.numpy().copy() for k, v in model.state_dict().items()}

    ember.manual_seed(123)  # a different stream until the checkpoint restores it
    model2, opt2, sched2 = make()
    ck = ember.load(tmp_path / "ck.safetensors")
    model2.load_state_dict(ck["model"])
    sched2.load_state_dict(ck["scheduler"])
    opt2.load_state_dict(ck["optimizer"])
    ember.set_rng_state(ck["rng"])
    train(model2, opt2, sched2, 3, ck["step"])
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for key, value in model2.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), expected[key], err_msg=key)
