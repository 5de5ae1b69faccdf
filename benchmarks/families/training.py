"""The digits CNN's training: Ember through its bindings against PyTorch eager, in one process.

The network of examples-and-tutorials/python/train_digits.py (models.small_cnn): conv 1->16 3x3,
batch-norm, ReLU, 2x2 max-pool, conv 16->32 3x3, batch-norm, ReLU, 2x2 max-pool, flatten,
linear 800->10; cross-entropy; SGD with the example's momentum 0.9 and weight decay 5e-4. Each
side builds it from its own nn module in the same way, on float32 [batch, 1, 28, 28] images of
uniform noise with random labels. Every case calls Ember as a user does, `import ember`
(via=python).

  cnn_eager_step    one step (zero_grad, forward, loss, backward, update) at batch 32 and 256,
                    timed as every case is (harness/timer.py)
  cnn_epoch         one epoch over 60 000 images resident on the device, sliced into batches
                    (the last one partial), with no synchronisation inside: its time and images/s.
                    One timed epoch per side and round, after warm-up steps at both batch shapes,
                    so its spread is across rounds (--rounds) and 0 with one
  cnn_peak_memory   the most bytes in use during one step, above those in use before the model
                    was built (the model, its gradients, the momentum, the batch, the
                    activations), at batch 16 ... 1024; deterministic
  gpt_block_peak_memory
                    the same for one GPT-style block (the transformer family's model with one
                    layer: token and position embeddings, layer norm, causal self-attention, GELU
                    MLP, head; cross-entropy; AdamW) at d 128, 4 heads, T 64, batch 8 and 32:
                    a step of a few milliseconds; deterministic
  conv2d_forward, conv2d_backward, batch_norm_forward, batch_norm_backward, relu_forward,
  relu_backward     each layer's op alone at the network's shapes, batch 32 and 256, against the
                    ATen op PyTorch's autograd calls (as conv_pool and normalization do)

Peak memory: Ember's allocator statistics (max_memory_allocated, reset before the step);
PyTorch's torch.cuda.max_memory_allocated on CUDA. PyTorch has no such statistics on the CPU:
there its profiler (profile_memory) records every allocation and free of its CPU allocator
during the step, whose running sum's maximum is added to the bytes of the tensors alive when
the step begins (parameters, buffers, gradients, optimizer state, batch). Memory a library takes
past its allocator would not be counted there: a lower bound."""

import gc
from dataclasses import dataclass, replace

import numpy as np

from families.conv_pool import ALL_GRADS, CONV_ARGS, conv_inputs
from harness.case import Context, KernelCase, Measurement, PythonCase, python_side, torch_reference
from harness.timer import TimerOptions

LR, MOMENTUM, WEIGHT_DECAY = 0.03, 0.9, 5e-4  # train_digits.py's defaults
BN_MOMENTUM, EPS = 0.1, 1e-5
EPOCH_IMAGES = 60_000
STEP_BATCHES = (32, 256)
MEMORY_BATCHES = (16, 32, 64, 128, 256, 512, 1024)
# (c, h, w, o): the two convolutions' inputs and outputs; batch-norm and ReLU act on the output
LAYERS = ((1, 28, 28, 16), (16, 13, 13, 32))


def small_cnn(nn):
    """models.small_cnn of the examples, from torch.nn or ember.nn."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),  # [N, 16, 13, 13]
        nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # [N, 32, 5, 5]
        nn.Flatten(), nn.Linear(800, 10))


def trainer(r):
    """The model, its optimizer and the training step on a batch (x, labels)."""
    r.xp.manual_seed(0)
    model = small_cnn(r.xp.nn).to(r.device)
    optimizer = r.xp.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM,
                               weight_decay=WEIGHT_DECAY)
    loss_fn = r.xp.nn.CrossEntropyLoss()

    def step(x, labels):
        optimizer.zero_grad()
        loss_fn(model(x), labels).backward()
        optimizer.step()

    return model, optimizer, step


def images(r, n):
    return r.uniform(n, 1, 28, 28), r.randint(10, n)


def eager_step(r, p):
    step, (x, labels) = trainer(r)[2], images(r, p["batch"])
    return lambda: step(x, labels)


def epoch(r, p):
    step, (x, labels), batch = trainer(r)[2], images(r, p["images"]), p["batch"]
    starts = range(0, p["images"], batch)
    for i in (0, starts[-1]) * 2:  # both batch shapes: Ember builds a backward graph per shape
        step(x[i:i + batch], labels[i:i + batch])

    def run():
        for i in starts:
            step(x[i:i + batch], labels[i:i + batch])

    return run


class EpochCase(KernelCase):
    """A KernelCase timed once per round (an epoch lasts seconds), with images/s beside its
    time."""

    def measure(self, ctx: Context) -> list[Measurement]:
        once = replace(ctx, timer=TimerOptions(warmup=0, repeat=1, min_sample_ms=0.0))
        rows = super().measure(once)
        per_s = [replace(m, metric="throughput", unit="images/s", better="higher",
                         value=self.params["images"] / m.value * 1e3,
                         reference_value=m.reference_value and
                         self.params["images"] / m.reference_value * 1e3) for m in rows]
        return rows + per_s


# ---- peak memory of one step ----

def cnn_trainer(r, p):
    """(model, optimizer, step, inputs) of the digits CNN at batch p["batch"]."""
    return (*trainer(r), images(r, p["batch"]))


GPT_BLOCK = dict(layers=1, channels=128, heads=4, block=64)  # vocabulary: the transformer's
GPT_BLOCK_BATCHES = (8, 32)


def gpt_block_trainer(r, p):
    """(model, optimizer, step, inputs) of one GPT-style block at batch p["batch"]: the
    transformer family's model and step (AdamW), at GPT_BLOCK's sizes."""
    from families import transformer  # it imports this module for torch_step_peak

    r.xp.manual_seed(0)
    model = transformer.gpt(r.xp, **GPT_BLOCK).to(r.device)
    _, optimizer, step = transformer.trainer(r, "none", model)
    data = np.random.default_rng(0).integers(0, transformer.VOCAB,
                                             (p["batch"], GPT_BLOCK["block"] + 1))
    x, y = (r.xp.tensor(data[:, s].copy()).to(r.device) for s in (np.s_[:-1], np.s_[1:]))
    return model, optimizer, step, (x, y)


PEAK_TRAINERS = {"cnn_peak_memory": cnn_trainer, "gpt_block_peak_memory": gpt_block_trainer}


def warm_libraries(r, make):
    """One throwaway step before the starting count, so that what a library allocates once per
    process (cuBLAS's and cuDNN's workspaces and handles) is in that count whichever case runs
    first: without it a case run alone counted PyTorch's cuBLAS workspace in its step's peak
    (74 MB against 6 MB for the digits CNN at batch 32 on an H100)."""
    _, _, step, inputs = make()
    step(*inputs)
    r.sync()


def ember_step_peak(r, make, warmup=2) -> int:
    """Ember's peak bytes over one training step, after `warmup` (the first allocates the
    optimizer's state and builds the backward graph), above the bytes in use before make() ->
    (model, optimizer, step, inputs) ran: the allocator's own statistics."""
    em = r.xp
    warm_libraries(r, make)
    before = em.memory_allocated(r.device)
    _, _, step, inputs = make()
    for _ in range(warmup):
        step(*inputs)
    r.sync()
    em.reset_peak_memory_stats(r.device)
    step(*inputs)
    r.sync()
    return em.max_memory_allocated(r.device) - before


def ember_peak(r, p, op="cnn_peak_memory") -> int:
    return ember_step_peak(r, lambda: PEAK_TRAINERS[op](r, p))


def torch_peak(r, p, op="cnn_peak_memory") -> int:
    return torch_step_peak(r, lambda: PEAK_TRAINERS[op](r, p))


def torch_step_peak(r, make) -> int:
    """PyTorch's peak bytes over one training step, after two to make the optimizer's state;
    make() -> (model, optimizer, step, inputs), called after the starting count. On CUDA the
    allocator's peak; on the CPU the storages alive across the step (parameters, buffers, inputs,
    gradients, optimizer state) plus the profiled peak of step(*inputs)."""
    torch = r.xp
    cuda = r.device.type == "cuda"
    warm_libraries(r, make)
    before = torch.cuda.memory_allocated() if cuda else 0
    model, optimizer, step, inputs = make()
    for _ in range(2):
        step(*inputs)
    r.sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        step(*inputs)
        r.sync()
        return torch.cuda.max_memory_allocated() - before
    alive = [*model.parameters(), *model.buffers(), *inputs,
             *(w.grad for w in model.parameters() if w.grad is not None),
             *(t for state in optimizer.state.values() for t in state.values()
               if isinstance(t, torch.Tensor))]
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in alive}
    return sum(storages.values()) + cpu_profiled_peak(torch, lambda: step(*inputs))


def cpu_profiled_peak(torch, fn) -> int:
    """The maximum, over fn's run, of the bytes PyTorch's CPU allocator handed out and did not
    take back since fn began (its profiler's memory records, in time order)."""
    profiler = torch.profiler
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    records = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                     if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU)
    total = peak = 0
    for _, nbytes in records:
        total += nbytes
        peak = max(peak, total)
    return peak


def peak_rows(ctx: Context, ours, theirs) -> list[Measurement]:
    """The peak_bytes row of a step: ours(r) on Ember's side, theirs(r) on PyTorch's where it is
    a reference of the run."""
    gc.collect()  # the previous cases' tensors, freed now rather than during this one
    value = ours(python_side(ctx))
    torch = torch_reference(ctx)
    reference = theirs(torch) if torch is not None else None
    return [Measurement("peak_bytes", "B", "lower", float(value),
                        reference="torch" if torch is not None else "",
                        reference_value=reference and float(reference),
                        reference_spread=0.0 if torch is not None else None)]


@dataclass
class PeakMemoryCase(PythonCase):
    deterministic = True  # allocator figures: the same every run

    def measure(self, ctx: Context) -> list[Measurement]:
        return peak_rows(ctx, lambda r: ember_peak(r, self.params, self.op),
                         lambda r: torch_peak(r, self.params, self.op))


# ---- each layer's ops alone, at the network's shapes ----

def conv2d_forward_torch(r, p):
    x, weight, bias = conv_inputs(r, p)
    return lambda: r.xp.ops.aten.convolution(x, weight, bias, *CONV_ARGS)


def conv2d_forward_ember(r, p):
    x, weight, bias = conv_inputs(r, p)
    return lambda: r.xp.conv2d(x, weight, bias)


def conv_grad_out(r, p):
    return r.uniform(p["n"], p["o"], p["h"] - p["kernel"] + 1, p["w"] - p["kernel"] + 1)


def conv2d_backward_torch(r, p):  # the gradients of x, weight and bias
    (x, weight, _), grad_out = conv_inputs(r, p), conv_grad_out(r, p)
    return lambda: r.xp.ops.aten.convolution_backward(grad_out, x, weight, [p["o"]], *CONV_ARGS,
                                                      ALL_GRADS)


def conv2d_backward_ember(r, p):
    em, (x, weight, _), grad_out = r.xp, conv_inputs(r, p), conv_grad_out(r, p)
    return lambda: (em.conv2d_backward_input(grad_out, weight, x.shape),
                    em.conv2d_backward_weight(grad_out, x, weight.shape), grad_out.sum((0, 2, 3)))


def activation(r, p):
    return r.uniform(p["n"], p["c"], p["h"], p["w"])


def relu_forward_torch(r, p):  # into out= on the CPU (harness.references)
    x, out = activation(r, p), r.out(p["n"], p["c"], p["h"], p["w"])
    return lambda: r.xp.clamp_min(x, 0, out=out)


def relu_backward_torch(r, p):  # grad where x > 0, else 0: ATen's threshold_backward
    x, grad_out, out = activation(r, p), activation(r, p), r.out(p["n"], p["c"], p["h"], p["w"])
    backward = r.xp.ops.aten.threshold_backward
    if out is None:
        return lambda: backward(grad_out, x, 0)
    return lambda: backward.grad_input(grad_out, x, 0, grad_input=out)


def relu_forward_ember(r, p):
    x = activation(r, p)
    return lambda: r.xp.relu(x)


def relu_backward_ember(r, p):
    x, grad_out = activation(r, p), activation(r, p)
    return lambda: r.xp.relu_backward(grad_out, x)


def bn_inputs(r, p):
    """x, weight, bias, running mean and variance, as normalization's batch_norm case."""
    c = p["c"]
    return activation(r, p), r.uniform(c), r.uniform(c), r.uniform(c), r.uniform(c).abs()


def batch_norm_forward_torch(r, p):  # batch statistics; the running ones updated in place
    x, weight, bias, mean, var = bn_inputs(r, p)
    forward = r.xp.ops.aten._batch_norm_with_update
    return lambda: forward(x, weight, bias, mean, var, BN_MOMENTUM, EPS)


def batch_norm_forward_ember(r, p):
    x, weight, bias, mean, var = bn_inputs(r, p)
    return lambda: r.xp.batch_norm(x, mean, var, weight, bias, training=True,
                                   momentum=BN_MOMENTUM, eps=EPS)


def batch_norm_backward_torch(r, p):  # the gradients of x, weight and bias
    aten, (x, weight, bias, running_mean, running_var) = r.xp.ops.aten, bn_inputs(r, p)
    grad_out = activation(r, p)
    _, mean, invstd, reserve = aten._batch_norm_with_update(x, weight, bias, running_mean,
                                                            running_var, BN_MOMENTUM, EPS)
    return lambda: aten.batch_norm_backward(grad_out, x, weight, running_mean, running_var, mean,
                                            invstd, True, EPS, ALL_GRADS, reserve)


def batch_norm_backward_ember(r, p):
    (x, weight, *_), grad_out = bn_inputs(r, p), activation(r, p)
    mean = x.mean((0, 2, 3))  # what the forward saves: [C]
    invstd = (x.var((0, 2, 3), correction=0) + EPS).rsqrt()
    return lambda: r.xp.batch_norm_backward(grad_out, x, weight, mean, invstd, True)


LAYER_OPS = (("relu_forward", relu_forward_torch, relu_forward_ember),
             ("relu_backward", relu_backward_torch, relu_backward_ember),
             ("batch_norm_forward", batch_norm_forward_torch, batch_norm_forward_ember),
             ("batch_norm_backward", batch_norm_backward_torch, batch_norm_backward_ember))


def layer_cases(batch: int) -> list:
    out = []
    for c, h, w, o in LAYERS:
        conv = dict(n=batch, c=c, h=h, w=w, o=o, kernel=3)
        out += [KernelCase("conv2d_forward", conv, torch=conv2d_forward_torch,
                           ember=conv2d_forward_ember).on_python(),
                KernelCase("conv2d_backward", conv, torch=conv2d_backward_torch,
                           ember=conv2d_backward_ember).on_python()]
        act = dict(n=batch, c=o, h=h - 2, w=w - 2)  # the convolution's output
        out += [KernelCase(op, act, torch=theirs, ember=ours).on_python()
                for op, theirs, ours in LAYER_OPS]
    return out


def cases(device):
    out = [KernelCase("cnn_eager_step", {"batch": b}, torch=eager_step, ember=eager_step)
           .on_python() for b in STEP_BATCHES]
    out += [EpochCase("cnn_epoch", {"images": EPOCH_IMAGES, "batch": b}, torch=epoch,
                      ember=epoch).on_python() for b in STEP_BATCHES]
    out += [PeakMemoryCase("cnn_peak_memory", {"batch": b, "via": "python"})
            for b in MEMORY_BATCHES]
    from families.transformer import ember_attention_kind  # it imports this module

    kind = ember_attention_kind()  # fused, or from primitives: the CSV's params say which
    out += [PeakMemoryCase("gpt_block_peak_memory", {"batch": b, "attention": kind,
                                                     "via": "python"})
            for b in GPT_BLOCK_BATCHES]
    for b in STEP_BATCHES:
        out += layer_cases(b)
    return out
