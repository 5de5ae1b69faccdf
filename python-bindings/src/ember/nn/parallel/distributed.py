"""DistributedDataParallel: one model per process, its gradients averaged over the processes.

    dist.init_process_group("gloo")
    model = DistributedDataParallel(model)          # device_ids=[local_rank] on CUDA
    loss_fn(model(x), y).backward()                 # .grad is the mean over every rank
    optimizer.step()

When wrapped, rank 0's parameters and buffers are copied to every rank, so all start alike. The
averaging is ember._core.distributed.Reducer (C++, autodiff-engine's reducer.h): gradients are
gathered into buckets (bucket_cap_mb, 25 MB; the first 1 MB) in the order the backward graph
computes them, and each bucket's all-reduce starts as soon as its last gradient is in, while
backward goes on. Parameters that get no gradient are known from the backward graph, so
PyTorch's find_unused_parameters is accepted and not needed. In training mode, the buffers
(BatchNorm's running statistics) are copied from rank 0 before each forward, as PyTorch's
broadcast_buffers=True does. no_sync() accumulates gradients locally for micro-batches; the
first backward after it averages the sum.

In a step compiled with ember.compile, the reducer's all-reduces and the buffers' broadcasts are
nodes of the step's graph: each bucket's all-reduce starts after the node computing its last
gradient and is waited for before the optimizer's update, so a replay overlaps communication
with backward as eager mode does (step.explain() lists the buckets under "data parallel").
no_sync() is a guard of the compiled step: a call under it replays (or traces) a plan without
all-reduces. Every rank must call the compiled step alike, as with any collective.
"""

import contextlib

from ember import _core
from ember import distributed as dist
from ember.autograd import no_grad
from ember.nn.module import Module


class DistributedDataParallel(Module):
    """Wraps module for data-parallel training over process_group (the default group)."""

    def __init__(self, module, device_ids=None, output_device=None, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25.0, find_unused_parameters=False,
                 first_bucket_cap_mb=1.0):
        super().__init__()
        group = dist._resolve(process_group)
        self.module = module
        object.__setattr__(self, "process_group", group)
        object.__setattr__(self, "broadcast_buffers", bool(broadcast_buffers))
        self._check_devices(module, device_ids, group)
        if bucket_cap_mb <= 0 or first_bucket_cap_mb <= 0:
            raise _core.ValueError(
                f"DistributedDataParallel: bucket_cap_mb={bucket_cap_mb} and "
                f"first_bucket_cap_mb={first_bucket_cap_mb} must be positive"
            )
        with no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                group.broadcast(t, 0)
        params = [p for p in module.parameters() if p.requires_grad]
        object.__setattr__(self, "reducer", _core.distributed.Reducer(
            params, group, int(bucket_cap_mb * 2**20), int(first_bucket_cap_mb * 2**20)))

    @staticmethod
    def _check_devices(module, device_ids, group):
        devices = {str(p.device) for p in module.parameters()}
        if group.backend == "nccl" and any(d == "cpu" for d in devices):
            raise _core.DeviceError(
                "DistributedDataParallel: the nccl backend reduces CUDA tensors, but the module "
                "has parameters on the CPU. Fix: model.to(f'cuda:{local_rank}') before wrapping, "
                "or init_process_group('gloo')"
            )
        if device_ids:
            wanted = {str(_core.device(f"cuda:{d}") if isinstance(d, int) else _core.device(d))
                      for d in device_ids}
            if len(device_ids) != 1 or not devices <= wanted:
                raise _core.DeviceError(
                    f"DistributedDataParallel: device_ids={device_ids!r} but the module's "
                    f"parameters are on {sorted(devices)}. Fix: one device per process, the "
                    "one the module is on (device_ids=[local_rank])"
                )

    def forward(self, *args, **kwargs):
        if self.broadcast_buffers and self.training and self.process_group.world_size > 1:
            with no_grad():
                for b in self.module.buffers():
                    # An op, so that a compiled step (ember.compile) replays it.
                    _core.distributed._broadcast_buffer(self.process_group, b, 0)
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, backward accumulates .grad locally; the next backward outside it averages
        what was accumulated."""
        before = self.reducer.sync
        self.reducer.sync = False
        try:
            yield
        finally:
            self.reducer.sync = before

    def bucket_layout(self):
        """The buckets as lists of indices into the trainable parameters (empty before the
        first backward)."""
        return self.reducer.buckets()

    def reducer_events(self):
        """(event, microseconds) of the last averaged backward: gradients arriving, buckets'
        all-reduces starting, backward ending, all-reduces done."""
        return self.reducer.events()
