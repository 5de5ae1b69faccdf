"""ember.distributed across real processes on 127.0.0.1 (distributed_worker.py is each rank):
every collective x dtype x odd size against NumPy, DistributedDataParallel against one process,
the overlap of all-reduce with backward, and the failures that must be errors, not hangs. Every
process is bounded by a timeout."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember import nn

WORKER = Path(__file__).with_name("distributed_worker.py")
pytestmark = pytest.mark.skipif(not dist.is_gloo_available(),
                                reason="this build has no gloo backend (libgloo-dev missing)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(scenario, tmp_path, world, env=None, ranks=None, sizes=None, limit=90, required=None):
    """Runs the worker as ranks (default: all of world) and returns each rank's output (the
    npz's arrays or the json's dict). sizes: the WORLD_SIZE each rank is told; required: the
    ranks that must write an output (default: all)."""
    ranks = range(world) if ranks is None else ranks
    required = ranks if required is None else required
    for attempt in range(2):  # the free port may be taken between free_port() and rank 0's bind
        out = tmp_path / f"{scenario}-{attempt}"
        out.mkdir()
        port = free_port()
        procs = []
        for r in ranks:
            e = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r),
                     WORLD_SIZE=str(world if sizes is None else sizes[r]), OMP_NUM_THREADS="1",
                     **(env or {}))
            procs.append(subprocess.Popen([sys.executable, str(WORKER), scenario, str(out)],
                                          env=e, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT))
        deadline = time.monotonic() + limit
        logs = []
        for p in procs:
            try:
                logs.append(p.communicate(timeout=max(1, deadline - time.monotonic()))[0])
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                pytest.fail(f"{scenario}: a rank did not end within {limit} s (a hang)")
        results = {}
        for r in ranks:
            npz, js = out / f"rank{r}.npz", out / f"rank{r}.json"
            if npz.exists():
                with np.load(npz) as data:
                    results[r] = dict(data)
            elif js.exists():
                results[r] = json.loads(js.read_text())
        in_use = any("MASTER_PORT" in str(v.get("message", "")) for v in results.values()
                     if isinstance(v, dict))
        if not in_use:
            break
    missing = [r for r in required if r not in results]
    assert not missing, f"ranks {missing} wrote nothing:\n" + "\n".join(
        log.decode(errors="replace") for log in logs)
    return results


def reference(dtype, rank, shape, case):
    rng = np.random.default_rng(1000 * rank + case)
    return rng.integers(0, 2 if dtype == "bool" else 6, size=shape).astype(np.float64)


def expected_reduction(op, arrays, dtype):
    stack = np.stack(arrays)
    if dtype == "bool" and op in ("sum", "max"):
        return stack.max(0)  # a bool's sum is an or
    return {"sum": stack.sum(0), "max": stack.max(0), "min": stack.min(0),
            "avg": stack.sum(0) / len(arrays)}[op]


def test_every_collective_every_dtype_odd_sizes_against_numpy(tmp_path):
    world = 3
    got = launch("collectives", tmp_path, world)
    for r in range(world):
        assert "error" not in got[r], got[r]
    # The worker's case numbering, replayed.
    worker = __import__("distributed_worker")
    checked = 0
    case = 0
    for dtype in worker.DTYPES:
        ops = ["sum", "max", "min"] + (["avg"] if dtype in worker.FLOATING else [])
        # avg rounds sum / world to the dtype; the rest is exact
        tol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 2e-7, "float64": 1e-15}.get(dtype, 0)
        for shape in [(), (1,), (7,), (3, 5)]:
            for op in ops:
                case += 1
                arrays = [reference(dtype, q, shape, case) for q in range(world)]
                if shape == (3, 5):
                    arrays = [a.T for a in arrays]
                want = expected_reduction(op, arrays, dtype)
                for r in range(world):
                    np.testing.assert_allclose(got[r][f"all_reduce/{dtype}/{op}/{shape}"], want,
                                               rtol=tol, err_msg=f"{dtype} {op} {shape}")
                    checked += 1
        case += 1
        want = reference(dtype, world - 1, (7,), case)
        for r in range(world):
            np.testing.assert_array_equal(got[r][f"broadcast/{dtype}"], want)
        for shape in [(), (7,), (2, 3)]:
            case += 1
            parts = [reference(dtype, q, shape, case) for q in range(world)]
            want = np.concatenate([np.reshape(p, (-1,) + tuple(shape[1:])) for p in parts])
            for r in range(world):
                np.testing.assert_array_equal(got[r][f"all_gather/{dtype}/{shape}"], want)
                np.testing.assert_array_equal(got[r][f"all_gather_list/{dtype}/{shape}"],
                                              np.stack(parts))
        for op in ops:
            case += 1
            arrays = [reference(dtype, q, (world * 5, 3), case) for q in range(world)]
            whole = expected_reduction(op, arrays, dtype)
            for r in range(world):
                np.testing.assert_allclose(got[r][f"reduce_scatter/{dtype}/{op}"],
                                           whole[r * 5:(r + 1) * 5], rtol=tol)
    assert checked > 300
    for r in range(world):
        assert "avg needs a floating dtype" in str(got[r]["int_avg_error"])
        assert int(got[r]["sequence_number"]) == int(got[0]["sequence_number"]) > 100


def single_process_reference(accumulate):
    """The same 10 steps in this process: one rank, the whole batch of 32."""
    worker = __import__("distributed_worker")
    x, y = worker.digits_batches(10, 32)
    model = worker.make_model(ember.float64)
    worker.train(model, x, y, slice(0, 32), accumulate=False)
    state = {k: v.to(ember.float64).numpy() for k, v in model.state_dict().items()}
    return state, model.unused.weight.grad is None


@pytest.mark.parametrize("accumulate", [False, True], ids=["plain", "no_sync"])
def test_ddp_two_ranks_of_16_equal_one_of_32(tmp_path, accumulate):
    want, unused_none = single_process_reference(accumulate)
    got = launch("ddp", tmp_path, 2, env={"EMBER_TEST_ACCUMULATE": str(int(accumulate))})
    for r in range(2):
        assert "error" not in got[r], got[r]
        for name, value in want.items():
            np.testing.assert_allclose(got[r][name], value, rtol=0, atol=1e-6, err_msg=name)
        # The unused head: no gradient on any rank, so none, as in one process.
        assert bool(got[r]["unused_grad_is_none"]) and unused_none
    for name in want:  # the two ranks agree exactly
        np.testing.assert_array_equal(got[0][name], got[1][name])


def test_bucket_all_reduce_starts_before_backward_ends(tmp_path):
    got = launch("overlap", tmp_path, 2)
    for r in range(2):
        assert "error" not in got[r], got[r]
        events = [name for name, _ in got[r]["events"]]
        assert len(got[r]["buckets"]) >= 3, got[r]["buckets"]
        first_start = events.index("bucket 0 all_reduce starts")
        # Gradients still came after the first bucket's all-reduce started: they overlapped.
        assert any(e.startswith("gradient") for e in events[first_start:]), events
        assert first_start < events.index("backward ends") < events.index(
            "bucket 0 all_reduce done")
        # Buckets follow the order backward produces the gradients: the classifier's first.
        assert got[r]["buckets"] == got[0]["buckets"]


def check_failure(got, rank, error_class, text, within):
    res = got[rank]
    assert res.get("error") == error_class, res
    assert res["is_distributed_error"], res
    assert text in res["message"], res["message"]
    assert res["seconds"] < within, res


def test_a_rank_that_dies_is_an_error_on_the_others_soon(tmp_path):
    got = launch("failure", tmp_path, 2, env={"EMBER_TEST_FAILURE": "dead_rank",
                                               "EMBER_TEST_TIMEOUT": "20"}, required=[0])
    # Well before the 20 s timeout: the broken connection is seen at once.
    check_failure(got, 0, "DistributedError", "ended or crashed", within=15)


def test_after_a_failure_the_group_refuses_work(tmp_path):
    got = launch("failure", tmp_path, 2, env={"EMBER_TEST_FAILURE": "after_break",
                                               "EMBER_TEST_TIMEOUT": "20"}, required=[0])
    check_failure(got, 0, "DistributedError", "broken by an earlier failure", within=15)


def test_a_rank_that_never_comes_is_a_timeout(tmp_path):
    got = launch("failure", tmp_path, 2, env={"EMBER_TEST_FAILURE": "order",
                                               "EMBER_TEST_TIMEOUT": "1.5"}, ranks=[0])
    check_failure(got, 0, "DistributedTimeoutError", "rank(s) 1 of 2 did not join", within=10)
    assert got[0]["is_timeout"]


def test_collectives_in_different_orders_are_reported_on_every_rank(tmp_path):
    got = launch("failure", tmp_path, 2, env={"EMBER_TEST_FAILURE": "order",
                                               "EMBER_TEST_TIMEOUT": "1.5"})
    check_failure(got, 0, "DistributedError", "rank 1 called broadcast(float32[5], root 0) as "
                  "its collective #1", within=12)
    check_failure(got, 1, "DistributedError", "rank 0 called all_reduce(float32[5], sum)",
                  within=12)


def test_a_mismatched_world_size_is_reported_on_every_rank(tmp_path):
    got = launch("failure", tmp_path, 2, env={"EMBER_TEST_FAILURE": "order",
                                               "EMBER_TEST_TIMEOUT": "3"}, sizes=[2, 3])
    check_failure(got, 0, "DistributedError", "world size 3", within=10)
    check_failure(got, 1, "DistributedError", "world size 2", within=10)


def test_a_port_in_use_is_an_error_naming_it(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(port))
        with pytest.raises(dist.DistributedError, match=f"port {port}.*MASTER_PORT"):
            dist.init_process_group("gloo", rank=0, world_size=1, timeout=2)
    assert not dist.is_initialized()


def test_missing_environment_and_bad_arguments_say_the_fix(monkeypatch):
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="RANK is not set.*ember.distributed.run"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="unknown backend 'mpi'"):
        dist.init_process_group("mpi", rank=0, world_size=1,
                                store=dist.TCPStore("127.0.0.1", 0, True, 5))
    with pytest.raises(ValueError, match="no process group"):
        dist.get_rank()


def test_a_world_of_one_in_process():
    store = dist.TCPStore("127.0.0.1", 0, True, 5)
    dist.init_process_group("gloo", rank=0, world_size=1, store=store, timeout=5)
    try:
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
        t = ember.arange(6.0).reshape(2, 3)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
        with pytest.raises(ember.EmberError):
            dist.all_reduce(ember.ones(2, device="cuda"))
        model = nn.Linear(3, 2)
        ddp = nn.parallel.DistributedDataParallel(model)
        ddp(ember.ones(4, 3)).sum().backward()
        np.testing.assert_allclose(model.bias.grad.numpy(), [4.0, 4.0])
    finally:
        dist.destroy_process_group()


def test_tcp_store_round_trips():
    server = dist.TCPStore("127.0.0.1", 0, True, 5)
    client = dist.TCPStore("127.0.0.1", server.port, False, 5)
    server.set("k", b"\x00value")
    assert client.get("k") == b"\x00value"
    assert client.add("n", 3) == 3 and server.add("n", 4) == 7
    assert client.check("k") and not client.check("missing")
    with pytest.raises(dist.DistributedTimeoutError, match="'missing'"):
        client.wait(["missing"], 0.1)


def test_distributed_sampler_matches_pytorch_arithmetic():
    data = list(range(10))
    shares = [list(ember.data.DistributedSampler(data, 3, r, shuffle=False)) for r in range(3)]
    assert shares == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded from the start
    dropped = [list(ember.data.DistributedSampler(data, 3, r, shuffle=False, drop_last=True))
               for r in range(3)]
    assert dropped == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s = [ember.data.DistributedSampler(data, 2, r, shuffle=True, seed=5) for r in range(2)]
    first = [list(x) for x in s]
    assert sorted(first[0] + first[1]) == data  # a partition of the order
    for x in s:
        x.set_epoch(1)
    second = [list(x) for x in s]
    assert second != first and sorted(second[0] + second[1]) == data
    assert len(s[0]) == 5
    loader = ember.data.DataLoader(ember.data.TensorDataset(ember.arange(10)), batch_size=2,
                                   sampler=s[1])
    assert [b[0].tolist() for b in loader] == [second[1][i:i + 2] for i in range(0, 5, 2)]
    with pytest.raises(ValueError, match="rank is 3"):
        ember.data.DistributedSampler(data, 3, 3)
