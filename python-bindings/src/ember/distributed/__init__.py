"""ember.distributed: collectives across processes and machines, with torch.distributed's names.

    import ember.distributed as dist
    dist.init_process_group("gloo")          # rank and world size from the environment
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # in place, on every rank
    dist.destroy_process_group()

Processes are started by the launcher, ``python -m ember.distributed.run --nproc-per-node 2
train.py`` (or by torchrun), which sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and
LOCAL_RANK. Rank 0 serves the rendezvous store at MASTER_ADDR:MASTER_PORT. CPU tensors go
through Gloo ("gloo"), CUDA tensors through NCCL ("nccl"), both in C++ (ember._core.distributed).

A rank that dies or never comes, ranks started with different world sizes, a port in use, or
collectives called in different orders raise DistributedError (DistributedTimeoutError, also a
TimeoutError, for what did not happen within ``timeout``) on every surviving rank: never a hang.
"""

import datetime
import os

from ember import _core

_d = _core.distributed

DistributedError = _d.DistributedError
DistributedTimeoutError = _d.DistributedTimeoutError
ProcessGroup = _d.ProcessGroup
TCPStore = _d.TCPStore
Work = _d.Work

#: PyTorch's default timeout of a process group's collectives.
default_pg_timeout = datetime.timedelta(minutes=30)


class ReduceOp:
    """How all_reduce and reduce_scatter combine the ranks' tensors (PyTorch's names)."""

    SUM = "sum"
    AVG = "avg"  # floating dtypes only
    MAX = "max"
    MIN = "min"


_group = None  # the default group, between init_process_group and destroy_process_group


def is_available():
    """Always True: ember.distributed is part of every build (backends may not be)."""
    return True


def is_gloo_available():
    return _d.backend_available("gloo")


def is_nccl_available():
    return _d.backend_available("nccl")


def is_initialized():
    return _group is not None


def _environment(name, given):
    if given is not None and given != -1:
        return given
    value = os.environ.get(name)
    if value is None:
        raise _core.ValueError(
            f"ember.distributed.init_process_group: the environment variable {name} is not set. "
            "Fix: start the script with python -m ember.distributed.run --nproc-per-node N "
            "(or torchrun), which sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE, or set "
            "them yourself"
        )
    return value


def _integer(name, text):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise _core.ValueError(
            f"ember.distributed.init_process_group: {name}={text!r} is not an integer"
        ) from None


def _seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None):
    """Joins the default process group. backend: "gloo" (CPU tensors) or "nccl" (CUDA tensors;
    default when ember.cuda.is_available()). rank and world_size default to RANK and
    WORLD_SIZE, the store's address to MASTER_ADDR/MASTER_PORT (init_method "env://", or
    "tcp://host:port"). timeout (a timedelta or seconds; 30 minutes) bounds the rendezvous and
    every collective."""
    global _group
    if _group is not None:
        raise _core.ValueError(
            "ember.distributed.init_process_group: the default group exists already. Fix: call "
            "destroy_process_group() first"
        )
    if backend is None:
        from ember import cuda

        backend = "nccl" if cuda.is_available() else "gloo"
    backend = str(backend).lower()
    seconds = _seconds(default_pg_timeout if timeout is None else timeout)
    if seconds <= 0:
        raise _core.ValueError(
            f"ember.distributed.init_process_group: timeout is {timeout!r}; it must be positive"
        )
    rank = _integer("RANK", _environment("RANK", rank))
    world_size = _integer("WORLD_SIZE", _environment("WORLD_SIZE", world_size))
    if store is None:
        if init_method and init_method.startswith("tcp://"):
            host, _, port = init_method[len("tcp://"):].rpartition(":")
        elif init_method in (None, "env://"):
            host = _environment("MASTER_ADDR", None)
            port = _environment("MASTER_PORT", None)
        else:
            raise _core.ValueError(
                f"ember.distributed.init_process_group: init_method {init_method!r} is not "
                "supported; pass 'env://' (the default) or 'tcp://host:port'"
            )
        store = TCPStore(host, _integer("MASTER_PORT", port), rank == 0, seconds)
    _group = _d.new_process_group(backend, store, rank, world_size, seconds)  # holds the store
    return _group


def destroy_process_group(group=None):
    """Leaves the default group: its collectives already started finish first."""
    global _group
    if group is None or group is _group:
        _group = None


def _resolve(group):
    group = group or _group
    if group is None:
        raise _core.ValueError(
            "ember.distributed: no process group. Fix: call "
            "ember.distributed.init_process_group() first"
        )
    return group


def get_rank(group=None):
    return _resolve(group).rank


def get_world_size(group=None):
    return _resolve(group).world_size


def get_backend(group=None):
    return _resolve(group).backend


def _result(work, async_op):
    return work if async_op else None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """tensor becomes, in place on every rank, the reduction (op) of every rank's tensor."""
    return _result(_resolve(group).all_reduce(tensor, op, async_op), async_op)


def broadcast(tensor, src=0, group=None, async_op=False):
    """tensor becomes, in place on every rank, rank src's tensor."""
    return _result(_resolve(group).broadcast(tensor, src, async_op), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor [world_size * n, ...] gets rank r's input [n, ...] at rows r*n..(r+1)*n."""
    return _result(_resolve(group).all_gather(output_tensor, input_tensor, async_op), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] gets rank r's tensor (world_size tensors of tensor's shape and dtype)."""
    g = _resolve(group)
    if len(tensor_list) != g.world_size:
        raise _core.ValueError(
            f"ember.distributed.all_gather: tensor_list has {len(tensor_list)} tensors; it "
            f"needs one per rank ({g.world_size})"
        )
    import ember

    flat = tensor.reshape(-1) if tensor.dim() else tensor.reshape(1)
    gathered = ember.empty((g.world_size * flat.shape[0],), dtype=tensor.dtype,
                           device=tensor.device)
    g.all_gather(gathered, flat)  # blocking: the list is filled when this returns
    with ember.no_grad():
        for r, out in enumerate(tensor_list):
            out.copy_(gathered[r * flat.shape[0]:(r + 1) * flat.shape[0]].reshape(tensor.shape))
    return _result(_Completed(), async_op)


class _Completed:
    """The Work of the list forms, which complete before they return."""

    def wait(self):
        pass

    def is_completed(self):
        return True


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output [n, ...] gets this rank's rows of the reduction of every rank's input
    [world_size * n, ...]."""
    return _result(_resolve(group).reduce_scatter(output, input, op, async_op), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output gets the reduction of every rank's input_list[rank]."""
    import ember

    g = _resolve(group)
    if len(input_list) != g.world_size:
        raise _core.ValueError(
            f"ember.distributed.reduce_scatter: input_list has {len(input_list)} tensors; it "
            f"needs one per rank ({g.world_size})"
        )
    whole = ember.cat([t.reshape(-1) for t in input_list])
    part = output.reshape(-1) if output.is_contiguous() else output.contiguous().reshape(-1)
    g.reduce_scatter(part, whole, op, False)
    if not output.is_contiguous():
        with ember.no_grad():
            output.copy_(part.reshape(output.shape))
    return _result(_Completed(), async_op)


def barrier(group=None, async_op=False):
    """Returns when every rank has called it."""
    return _result(_resolve(group).barrier(async_op), async_op)


__all__ = [
    "DistributedError", "DistributedTimeoutError", "ProcessGroup", "ReduceOp", "TCPStore", "Work",
    "all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
    "default_pg_timeout", "destroy_process_group", "get_backend", "get_rank", "get_world_size",
    "init_process_group", "is_available", "is_gloo_available", "is_initialized",
    "is_nccl_available", "reduce_scatter", "reduce_scatter_tensor",
]
