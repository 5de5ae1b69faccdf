"""Training steps at the default thread count and at one thread, idle and on a busy machine.

Two small steps, each side built from its own nn module in the same process (via=python):

  mlp_step   Linear(64, 128), ReLU, Linear(128, 10); cross-entropy; plain SGD; batch 32. Small
             enough that every op is below or near the grain of a parallel loop, so what it
             times is the cost of threads that bring nothing.
  cnn_step   the digits CNN of the training family (models.small_cnn), batch 32, SGD with
             momentum: ops large enough to spread over threads.

Each at threads=default (whatever each library starts with: Ember's get_num_threads(), torch's
get_num_threads()) and threads=1 (ember.set_num_threads(1), torch.set_num_threads(1)); and
load=idle or load=busy: two CPU-bound processes (`while True: pass`) run beside the measurement
for its whole length, then are killed. On the 2-core machine busy means every core has a thread
of other work on it, as on a shared development machine; that is where a library whose idle
threads spin, or whose loops wait for a worker the OS has not scheduled, collapses (issue 19:
the MLP step took 1 110 us on OpenMP's two threads against 275 us on one).

Both libraries are held to the case's count before their side is timed and given back their
defaults afterwards. Without ember.set_num_threads (a build older than it) the threads=1 cases
are skipped: run the whole family with --threads 1 instead (then default means 1 too)."""

import subprocess
import sys
import time
from dataclasses import dataclass

from families.training import trainer
from harness.case import Context, KernelCase, Measurement, Skipped, python_side

LOADS = ("idle", "busy")
THREADS = ("default", "1")
BUSY_PROCESSES = 2


def mlp_step(r, p):
    nn = r.xp.nn
    r.xp.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(r.device)
    optimizer = r.xp.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    x, labels = r.uniform(p["batch"], 64), r.randint(10, p["batch"])

    def step():
        optimizer.zero_grad()
        loss_fn(model(x), labels).backward()
        optimizer.step()

    return step


def cnn_step(r, p):
    step = trainer(r)[2]
    x, labels = r.uniform(p["batch"], 1, 28, 28), r.randint(10, p["batch"])
    return lambda: step(x, labels)


class BusyMachine:
    """BUSY_PROCESSES CPU-bound Python processes for the life of a `with` block."""

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(BUSY_PROCESSES)]
        time.sleep(0.3)  # started and spinning before the first sample
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()


class HeldThreads:
    """Ember and torch at `count` threads ("default": as they started) inside a `with` block."""

    def __init__(self, ctx: Context, count: str):
        self.ember = python_side(ctx).xp
        self.torch = next((r.xp for r in ctx.references if r.name == "torch"), None)
        self.count = count

    def __enter__(self):
        if self.count == "default":
            return self
        if not hasattr(self.ember, "set_num_threads"):
            raise Skipped("this ember has no set_num_threads: run the family with --threads 1")
        self.saved = (self.ember.get_num_threads(),
                      self.torch.get_num_threads() if self.torch else None)
        self.ember.set_num_threads(int(self.count))
        if self.torch:
            self.torch.set_num_threads(int(self.count))
        return self

    def __exit__(self, *exc):
        if self.count == "default":
            return
        self.ember.set_num_threads(self.saved[0])
        if self.torch:
            self.torch.set_num_threads(self.saved[1])


@dataclass
class ThreadsCase(KernelCase):
    """A via=python KernelCase timed at params["threads"] with params["load"] beside it."""

    def measure(self, ctx: Context) -> list[Measurement]:
        with HeldThreads(ctx, self.params["threads"]):
            if self.params["load"] == "busy":
                with BusyMachine():
                    return super().measure(ctx)
            return super().measure(ctx)


def cases(device):
    if device != "cpu":
        return []  # the question is the CPU's; a GPU step waits on the device, not on threads
    out = []
    for op, fn in (("mlp_step", mlp_step), ("cnn_step", cnn_step)):
        for load in LOADS:
            for threads in THREADS:
                params = {"batch": 32, "threads": threads, "load": load}
                out.append(ThreadsCase(op, params, torch=fn, ember=fn).on_python())
    return out

