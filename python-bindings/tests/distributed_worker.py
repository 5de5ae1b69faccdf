"""One rank of the multi-process tests of test_distributed*.py: python distributed_worker.py
SCENARIO OUT_DIR, with MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE set. Each scenario writes
what the test checks to OUT_DIR/rank<r>.npz or .json; an exception is written as
{"error": class name, "message": ..., "seconds": time until it was raised}."""

import json
import os
import sys
import time

import numpy as np

import ember
import ember.distributed as dist
from ember import nn

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]
FLOATING = ["float16", "bfloat16", "float32", "float64"]


def inputs(rank, shape, dtype, case):
    """Small integers (exact in every dtype and in their sums over a few ranks), as NumPy
    float64 and as an ember tensor of dtype."""
    rng = np.random.default_rng(1000 * rank + case)
    values = rng.integers(0, 2 if dtype == "bool" else 6, size=shape).astype(np.float64)
    return values, ember.tensor(values, dtype=getattr(ember, dtype))


def as_float64(t):
    return t.to(ember.float64).numpy()


def collectives(out, rank, world):
    """Every collective x dtype x odd size; saves each result for the test to compare."""
    results = {}
    case = 0
    for dtype in DTYPES:
        ops = ["sum", "max", "min"] + (["avg"] if dtype in FLOATING else [])
        for shape in [(), (1,), (7,), (3, 5)]:
            for op in ops:
                case += 1
                _, t = inputs(rank, shape, dtype, case)
                if shape == (3, 5):  # a non-contiguous view: the transpose
                    t = t.t()
                dist.all_reduce(t, op=op)
                results[f"all_reduce/{dtype}/{op}/{shape}"] = as_float64(t)
        case += 1
        _, t = inputs(rank, (7,), dtype, case)
        work = dist.broadcast(t, src=world - 1, async_op=True)
        work.wait()
        results[f"broadcast/{dtype}"] = as_float64(t)
        for shape in [(), (7,), (2, 3)]:
            case += 1
            _, t = inputs(rank, shape, dtype, case)
            rows = 1 if shape == () else shape[0]
            gathered = ember.empty((world * rows,) + tuple(shape[1:]),
                                   dtype=getattr(ember, dtype))
            dist.all_gather_into_tensor(gathered, t)
            results[f"all_gather/{dtype}/{shape}"] = as_float64(gathered)
            parts = [ember.empty(shape, dtype=getattr(ember, dtype)) for _ in range(world)]
            dist.all_gather(parts, t)
            results[f"all_gather_list/{dtype}/{shape}"] = np.stack([as_float64(p) for p in parts])
        for op in ops:
            case += 1
            _, t = inputs(rank, (world * 5, 3), dtype, case)
            part = ember.empty((5, 3), dtype=getattr(ember, dtype))
            dist.reduce_scatter_tensor(part, t, op=op)
            results[f"reduce_scatter/{dtype}/{op}"] = as_float64(part)
    try:
        dist.all_reduce(ember.tensor([1, 2]), op=dist.ReduceOp.AVG)
    except TypeError as e:
        results["int_avg_error"] = np.array(str(e))
    dist.barrier()
    results["sequence_number"] = np.array(dist._group.sequence_number)
    np.savez(os.path.join(out, f"rank{rank}.npz"), **results)


# ---- DDP: the digits CNN (examples-and-tutorials' models.small_cnn) and a head never used

class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(800, 10),
        )
        self.unused = nn.Linear(10, 10)  # gets no gradient: not in forward

    def forward(self, x):
        return self.body(x)


def digits_batches(steps, batch, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((steps, batch, 1, 28, 28))
    y = rng.integers(0, 10, size=(steps, batch))
    return x, y


def make_model(dtype):
    ember.manual_seed(0)
    model = DigitsCNN().to(dtype)
    # BatchNorm's batch statistics are each rank's own (as in PyTorch without SyncBatchNorm), so
    # equivalence with one process holds with running statistics: evaluation mode.
    model.eval()
    return model


def train(model, x, y, shard, accumulate, ddp=None):
    """10 steps of SGD with momentum on this rank's shard of each global batch; accumulate
    splits the shard in two micro-batches, the first under no_sync."""
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    dtype = next(iter(model.parameters())).dtype
    for step in range(x.shape[0]):
        xs, ys = x[step][shard], y[step][shard]
        opt.zero_grad()
        pieces = np.array_split(np.arange(len(ys)), 2 if accumulate else 1)
        for k, idx in enumerate(pieces):
            xb = ember.tensor(xs[idx], dtype=dtype)
            yb = ember.tensor(ys[idx])
            loss = loss_fn(model(xb), yb) * (len(idx) / len(ys))
            if ddp is not None and k < len(pieces) - 1:
                with ddp.no_sync():
                    loss.backward()
            else:
                loss.backward()
        opt.step()


def ddp(out, rank, world):
    accumulate = os.environ.get("EMBER_TEST_ACCUMULATE") == "1"
    dtype = getattr(ember, os.environ.get("EMBER_TEST_DTYPE", "float64"))
    x, y = digits_batches(10, 32)
    model = make_model(dtype)
    if rank != 0:  # different starting values: the wrap copies rank 0's
        with ember.no_grad():
            for p in model.parameters():
                p.add_(1.0)
    wrapped = nn.parallel.DistributedDataParallel(model)
    per_rank = 32 // world
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    train(wrapped, x, y, shard, accumulate, ddp=wrapped)
    state = {k: v.to(ember.float64).numpy() for k, v in model.state_dict().items()}
    state["unused_grad_is_none"] = np.array(model.unused.weight.grad is None)
    np.savez(os.path.join(out, f"rank{rank}.npz"), **state)


def compiled_step(model, opt, ddp, micro_batches, head=None):
    """One training step as ember.compile would have it: the micro-batches but the last under
    ddp.no_sync() (gradient accumulation), then the update. head: a layer whose output joins the
    loss (on the ranks that pass one)."""
    loss_fn = nn.CrossEntropyLoss()

    def step(*xy):
        opt.zero_grad()
        n = len(xy) // 2
        total = sum(int(xy[n + k].shape[0]) for k in range(n))
        for k in range(n):
            logits = model(xy[k])
            loss = loss_fn(logits, xy[n + k]) * (int(xy[n + k].shape[0]) / total)
            if head is not None:
                loss = loss + 0.01 * head(logits).sum()
            if ddp is not None and k < n - 1:
                with ddp.no_sync():
                    loss.backward()
            else:
                loss.backward()
        opt.step()
        return loss

    return ember.compile(step)


def ddp_compiled(out, rank, world):
    """The ddp scenario's training with the step compiled (or eager, EMBER_TEST_EAGER=1, the
    same code): 10 steps, the first traced, the others replayed. EMBER_TEST_PARTIAL=1: the
    unused head joins the loss on rank 1 only (a gradient on one rank, none on the other)."""
    accumulate = os.environ.get("EMBER_TEST_ACCUMULATE") == "1"
    partial = os.environ.get("EMBER_TEST_PARTIAL") == "1"
    eager = os.environ.get("EMBER_TEST_EAGER") == "1"
    x, y = digits_batches(10, 32)
    model = make_model(ember.float64)
    wrapped = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.02,
                                                  first_bucket_cap_mb=0.005)
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    head = model.unused if partial and rank == 1 else None
    step = compiled_step(wrapped, opt, wrapped, 2 if accumulate else 1, head)
    run = step.__wrapped__ if eager else step
    per_rank = 32 // world
    for s in range(x.shape[0]):
        idx = np.array_split(np.arange(rank * per_rank, (rank + 1) * per_rank),
                             2 if accumulate else 1)
        xs = [ember.tensor(x[s][i], dtype=ember.float64) for i in idx]
        ys = [ember.tensor(y[s][i]) for i in idx]
        run(*xs, *ys)
    state = {k: v.to(ember.float64).numpy() for k, v in model.state_dict().items()}
    state["unused_grad_is_none"] = np.array(model.unused.weight.grad is None)
    state["buckets"] = np.array(len(wrapped.bucket_layout()))
    if not eager:
        state["traces"] = np.array(step.traces)
        state["replays"] = np.array(step.replays)
        state["explain"] = np.array(step.explain())
    np.savez(os.path.join(out, f"rank{rank}.npz"), **state)


def overlap(out, rank, world):
    """A backward with several small buckets: the log of when each started."""
    x, y = digits_batches(1, 16)
    model = make_model(ember.float32)
    wrapped = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.01,
                                                  first_bucket_cap_mb=0.001)
    loss = nn.CrossEntropyLoss()(wrapped(ember.tensor(x[0], dtype=ember.float32)),
                                 ember.tensor(y[0]))
    loss.backward()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"events": wrapped.reducer_events(), "buckets": wrapped.bucket_layout()}, f)


# ---- failures: each raises on purpose; the test checks the error and how long it took

def failure(out, rank, world):
    kind = os.environ["EMBER_TEST_FAILURE"]
    t = ember.ones(5)
    if kind in ("dead_rank", "after_break"):
        # Rank 1 dies after every rank has joined: dying at once, it could close its connection
        # while rank 0 still waits in init_process_group for Gloo to report it connected, which
        # fails init instead of the collective under test.
        dist.barrier()
    if kind == "dead_rank":
        if rank == 1:
            os._exit(3)  # dies without a word after joining
        time.sleep(0.5)
        dist.all_reduce(t)
    elif kind == "order":
        dist.all_reduce(t)
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, src=0)
    elif kind == "after_break":  # the group refuses further work after a failure
        if rank == 1:
            os._exit(3)
        time.sleep(0.5)
        try:
            dist.all_reduce(t)
        except dist.DistributedError:
            pass
        dist.all_reduce(t)


SCENARIOS = {"collectives": collectives, "ddp": ddp, "ddp_compiled": ddp_compiled,
             "overlap": overlap, "failure": failure}


def main():
    scenario, out = sys.argv[1], sys.argv[2]
    rank = int(os.environ["RANK"])
    start = time.monotonic()
    try:
        timeout = float(os.environ.get("EMBER_TEST_TIMEOUT", "30"))
        dist.init_process_group("gloo", timeout=timeout)
        SCENARIOS[scenario](out, rank, dist.get_world_size())
        dist.destroy_process_group()
    except Exception as e:  # the test checks it
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump({"error": type(e).__name__, "message": str(e),
                       "is_distributed_error": isinstance(e, dist.DistributedError),
                       "is_timeout": isinstance(e, TimeoutError),
                       "seconds": time.monotonic() - start}, f)


if __name__ == "__main__":
    main()
