"""Collectives across processes: Ember's Gloo all-reduce against torch.distributed's, and the
digits CNN's data-parallel epoch at one and two processes.

  all_reduce   a float32 sum all-reduce of 4 KB ... 64 MB between 2 processes on 127.0.0.1:
               its time and bus bandwidth (nccl-tests' definition: bytes * 2(n-1)/n / time),
               Ember (ember.distributed, "gloo") beside torch.distributed ("gloo") in the same
               two processes, the two timed in alternation, size by size, so that both see the
               same machine. One launch of the two processes serves every size.
  ddp_epoch    examples-and-tutorials/python/train_digits_ddp.py under the launcher
               (python -m ember.distributed.run) with --nproc-per-node 1 and 2, one thread
               each (OMP_NUM_THREADS=1), batch 32 per process: the fastest of its epochs, and
               the scaling efficiency of two processes, t1 / (2 * t2) (1 = perfect: two
               processes take half the time of one over the same epoch). Reference: the same
               epoch in PyTorch (torch.nn.parallel.DistributedDataParallel, Gloo, the same
               network, split, sampler seed, batch, SGD and thread count; the worker at the end
               of this file), whose efficiency on the same machine says what two processes on
               its cores can reach. step=compiled: the same epoch with each step an
               ember.compile'd step (--compile: traced once, replayed, the all-reduces nodes
               of its graph); its efficiency is against the compiled step at one process.

Targets on a 2-core CPU (issue 26): all-reduce bandwidth >= 0.9x torch's Gloo at every size;
efficiency >= 0.8. The cases launch their own processes; on a machine shared with other work,
processes wait for a core and the figures say so (params: load=shared when the load average
was above the core count at the start of the run)."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

if __name__ == "__main__":  # run as the worker below: harness/ is beside families/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.case import Context, Measurement, Skipped  # noqa: E402

HERE = Path(__file__).resolve()
EXAMPLES = HERE.parents[2] / "examples-and-tutorials" / "python"
EXAMPLE = EXAMPLES / "train_digits_ddp.py"
SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
WORLD = 2
_cache = {}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_label():
    """'shared' when the machine had more runnable work than cores as the run began."""
    return "shared" if os.getloadavg()[0] > (os.cpu_count() or 1) else "idle"


def launch(argv, world, timeout):
    """Runs `python argv` as `world` ranks with torchrun's variables; returns rank 0's stdout."""
    port = free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                   WORLD_SIZE=str(world), LOCAL_RANK=str(r), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=timeout))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        raise Skipped(f"the {world} processes did not end within {timeout} s") from None
    for p, (_, err) in zip(procs, outs):
        if p.returncode != 0:
            raise Skipped(f"a rank failed: {err.strip()[-500:]}")
    return outs[0][0]


def all_reduce_results():
    """{bytes: (ember TimeStats-like dict, torch dict)} from one launch of the worker below."""
    if "all_reduce" not in _cache:
        out = launch([str(HERE), "worker"], WORLD, timeout=900)
        _cache["all_reduce"] = {int(k): v for k, v in json.loads(out.splitlines()[-1]).items()}
    return _cache["all_reduce"]


def bus_bandwidth(nbytes, ms):
    return nbytes * 2 * (WORLD - 1) / WORLD / (ms * 1e-3) / 1e9


@dataclass
class AllReduceCase:
    op: str
    params: dict
    quick: bool = False
    in_process: bool = True  # measured through Python processes: no ember_bench needed

    def measure(self, ctx: Context) -> list[Measurement]:
        nbytes = self.params["bytes"]
        ours, theirs = all_reduce_results()[nbytes]
        return [
            Measurement("time", "ms", "lower", ours["median"], ours["iqr"], "torch",
                        theirs["median"], theirs["iqr"]),
            Measurement("bus_bandwidth", "GB/s", "higher", bus_bandwidth(nbytes, ours["median"]),
                        ours["iqr"], "torch", bus_bandwidth(nbytes, theirs["median"]),
                        theirs["iqr"]),
        ]


@dataclass
class EpochCase:
    op: str
    params: dict
    quick: bool = False
    in_process: bool = True
    epochs: int = field(default=3)

    def epoch_seconds(self, world):
        """Ember's fastest epoch after the first (train_digits_ddp.py under the launcher),
        with compiled steps for step=compiled."""
        compiled = self.params.get("step") == "compiled"
        key = f"epoch{world}{'-compiled' if compiled else ''}"
        if key not in _cache:
            with tempfile.TemporaryDirectory() as tmp:
                launch([str(EXAMPLE), "--epochs", str(self.epochs), "--out", tmp,
                        *(["--compile"] if compiled else [])], world, timeout=900)
                history = json.loads((Path(tmp) / "metrics.json").read_text())["history"]
            _cache[key] = min(history["seconds"][1:] or history["seconds"])
        return _cache[key]

    def torch_epoch_seconds(self, world):
        """PyTorch's fastest epoch after the first, or None without PyTorch."""
        key = f"torch_epoch{world}"
        if key not in _cache:
            try:
                import torch  # noqa: F401
            except ImportError:
                return None
            out = launch([str(HERE), "torch-epoch", str(self.epochs), str(self.params["batch"])],
                         world, timeout=900)
            _cache[key] = min(json.loads(out)[1:])
        return _cache[key]

    def measure(self, ctx: Context) -> list[Measurement]:
        if not EXAMPLE.exists():
            raise Skipped(f"{EXAMPLE} is not here")
        world = self.params["processes"]
        seconds, theirs = self.epoch_seconds(world), self.torch_epoch_seconds(world)
        out = [Measurement("epoch", "s", "lower", seconds, reference="torch" if theirs else "",
                           reference_value=theirs)]
        if world > 1:
            one = self.epoch_seconds(1)
            efficiency = one / (world * seconds)
            out.append(Measurement("scaling_efficiency", "x", "higher", efficiency,
                                   reference="1 process", reference_value=1.0))
            if theirs:
                torch_one = self.torch_epoch_seconds(1)
                out.append(Measurement("scaling_efficiency", "x", "higher", efficiency,
                                       reference="torch", reference_value=torch_one /
                                       (world * theirs)))
        return out


def cases(device):
    if device != "cpu":
        return []  # NCCL's figures belong to a multi-GPU machine
    load = load_label()
    out = [AllReduceCase("all_reduce", {"bytes": n, "processes": WORLD, "backend": "gloo",
                                        "load": load}) for n in SIZES]
    out += [EpochCase("ddp_epoch", {"processes": w, "threads": 1, "batch": 32, "load": load})
            for w in (1, 2)]
    out += [EpochCase("ddp_epoch", {"processes": w, "threads": 1, "batch": 32, "step": "compiled",
                                    "load": load}) for w in (1, 2)]
    return out


# ---- the worker: one rank of the all-reduce measurement (python distributed.py worker)

def _worker():
    import datetime

    import numpy as np
    import torch
    import torch.distributed as tdist

    import ember
    import ember.distributed as dist

    ember.set_num_threads(1)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", timeout=120)
    port = int(os.environ["MASTER_PORT"])
    os.environ["MASTER_PORT"] = str(port + 1 if port < 65535 else port - 1)
    tdist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    rank = dist.get_rank()

    def timed(fn, repeat):
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1e3)
        return samples

    results = {}
    for nbytes in SIZES:
        n = nbytes // 4
        ours = ember.zeros(n)  # zeros: repeated sums stay finite
        theirs = torch.zeros(n)
        calls = (lambda: dist.all_reduce(ours), lambda: tdist.all_reduce(theirs))
        for fn in calls:  # warm-up, and how many repeats fit in about 0.3 s
            fn()
        probe = min(timed(calls[0], 2))
        repeat = ember.tensor([max(5.0, min(200.0, 300 / max(probe, 1e-3)))])
        dist.all_reduce(repeat, op=dist.ReduceOp.MAX)  # every rank must make the same calls
        repeat = int(repeat.item())
        samples = ([], [])
        for _ in range(5):  # alternate, so both sides see the same machine
            for side, fn in enumerate(calls):
                samples[side].extend(timed(fn, max(1, repeat // 5)))
        stats = []
        for s in samples:
            q1, med, q3 = np.percentile(s, [25, 50, 75])
            stats.append({"median": float(med), "iqr": float(q3 - q1)})
        results[nbytes] = stats
    tdist.destroy_process_group()
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(results))


# ---- PyTorch's data-parallel epoch (python distributed.py torch-epoch EPOCHS BATCH): the
# reference of ddp_epoch, the example's loop written with torch's DDP

def _torch_epoch(epochs, batch):
    import torch
    import torch.distributed as tdist
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    sys.path.insert(0, str(EXAMPLES))
    import digits

    from families.training import small_cnn

    torch.set_num_threads(1)
    tdist.init_process_group("gloo")
    x_train, y_train, _, _ = digits.load_digits_split(size=28, seed=0)
    train_set = TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train))
    sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    loader = DataLoader(train_set, batch_size=batch, sampler=sampler)
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(small_cnn(torch.nn))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, weight_decay=5e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    seconds = []
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        tdist.barrier()  # the epoch ends when the slowest rank's does
        seconds.append(time.perf_counter() - start)
    tdist.destroy_process_group()
    if int(os.environ["RANK"]) == 0:
        print(json.dumps(seconds))


if __name__ == "__main__" and sys.argv[1:] == ["worker"]:
    _worker()
if __name__ == "__main__" and sys.argv[1:2] == ["torch-epoch"]:
    _torch_epoch(int(sys.argv[2]), int(sys.argv[3]))
