"""Instructions per call of small CPU cases, counted by valgrind's callgrind.

A deterministic figure (the same on every run of the same binary, however busy the machine), so
a gate on it catches a kernel that does more work even where timings are too noisy to. CPU only.
Without valgrind every case fails, saying so: a gate that silently lost these rows would pass
changes it exists to catch."""

import shutil
from dataclasses import dataclass

from harness.case import Context, Measurement, params_text
from harness.ember import BenchError

CASES = [  # op, params: small enough for valgrind's ~50x slowdown
    ("add", {"n": 1 << 16}),
    ("relu", {"n": 1 << 16}),
    ("matmul", {"m": 64, "n": 64, "k": 64, "algo": "default"}),
    ("matmul", {"m": 64, "n": 64, "k": 64, "algo": "tiled"}),
    ("conv2d_fwd_bwd", {"n": 4, "c": 8, "h": 16, "w": 16, "o": 8, "kernel": 3}),
    ("batch_norm_fwd_bwd", {"n": 4, "c": 8, "h": 16, "w": 16}),
]


@dataclass
class InstructionCase:
    op: str
    params: dict
    quick: bool = True
    deterministic = True  # the same count every run: gate.py measures it once per side

    def measure(self, ctx: Context) -> list[Measurement]:
        if shutil.which("valgrind") is None:
            raise BenchError("valgrind not found: instruction counts need valgrind's callgrind "
                             "(ci/install-system-deps.sh installs it; apt-get install valgrind)")
        count = ctx.ember.instructions(f"{self.op}:{params_text(self.params, ',')}")
        return [Measurement("instructions", "count", "lower", float(count))]


def cases(device):
    if device != "cpu":
        return []
    return [InstructionCase(op, params) for op, params in CASES]
