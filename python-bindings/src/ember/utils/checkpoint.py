"""ember.utils.checkpoint: run a region of a model without keeping its intermediates, and run it
again during backward to get them back (torch.utils.checkpoint, in its reentrant form).

The region's forward runs without recording; only its tensor arguments are kept. When backward
reaches the region, the region runs once more from those arguments, this time recording, and
its gradient is taken from that recomputation. Memory: the region's activations live only
while its backward runs. Cost: the region's forward runs twice.

Random numbers. As PyTorch does (preserve_rng_state=True, its default), the state of the default
generator is saved before the region's forward and put back for the recomputation, so dropout
draws the same mask both times; afterwards the generator's state is the one it had before the
recomputation, so the rest of backward (and the next step) draw as if nothing had been recomputed.
Ember has one generator for every device, so saving it covers CUDA tensors too (PyTorch saves the
CPU state and that of the CUDA devices of the arguments).

Buffers. When the region is a Module (checkpoint(block, x)), its buffers (batch norm's running
statistics) are saved before the recomputation and put back after it, so they are updated once
per step, as without checkpointing. PyTorch updates them a second time during the recomputation;
here they match the unchecked step exactly. Batch norm normalises with the batch's statistics in
training, which the recomputation computes again from the same input, so its output is the same.
"""

from ember import _core
from ember.autograd import Function, enable_grad, no_grad

__all__ = ["checkpoint"]


def _is_tensor(x):
    return isinstance(x, _core.Tensor)


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, run, preserve_rng_state, num_args, *args_and_params):
        # The parameters come along only so that the call is recorded when they need gradients
        # and no argument does; backward accumulates into their .grad itself.
        args = args_and_params[:num_args]
        ctx.num_params = len(args_and_params) - num_args
        ctx.run = run
        ctx.rng_state = _core.get_rng_state() if preserve_rng_state else None
        ctx.args = [None if _is_tensor(a) else a for a in args]
        ctx.save_for_backward(*[a if _is_tensor(a) else None for a in args])
        outputs = run(*args)
        ctx.single = _is_tensor(outputs)
        return outputs

    @staticmethod
    def backward(ctx, *grad_outputs):
        inputs = []
        needs = ctx.needs_input_grad[3:]  # after run, preserve_rng_state and num_args
        for arg, saved, need in zip(ctx.args, ctx.saved_tensors, needs):
            if saved is None:
                inputs.append(arg)
                continue
            x = saved.detach()
            x.requires_grad_(bool(need))
            inputs.append(x)
        run = ctx.run
        buffers = list(run.buffers()) if hasattr(run, "buffers") else []
        kept = [b.clone() for b in buffers]
        state_now = _core.get_rng_state()
        if ctx.rng_state is not None:
            _core.set_rng_state(ctx.rng_state)
        try:
            with enable_grad():
                outputs = run(*inputs)
        finally:
            if ctx.rng_state is not None:
                _core.set_rng_state(state_now)
            with no_grad():
                for b, k in zip(buffers, kept):
                    b.copy_(k)
        outputs = (outputs,) if _is_tensor(outputs) else tuple(outputs)
        pairs = [(y, g) for y, g in zip(outputs, grad_outputs) if y.requires_grad]
        if len(pairs) == 1:
            pairs[0][0].backward(pairs[0][1])
        elif pairs:
            # One backward over every output: d(sum <y, g>)/dx is each output's gradient summed,
            # exactly (the gradient of sum is ones, and ones * g is g).
            with enable_grad():  # backward runs with recording off
                total = None
                for y, g in pairs:
                    term = (y * g).sum()
                    total = term if total is None else total + term
            total.backward()
        grads = [x.grad if _is_tensor(x) and x.requires_grad else None for x in inputs]
        return (None, None, None, *grads, *([None] * ctx.num_params))


def checkpoint(function, *args, preserve_rng_state=True, use_reentrant=None, **kwargs):
    """function(*args, **kwargs), without keeping its intermediate tensors for backward: they are
    recomputed when backward needs them (torch.utils.checkpoint.checkpoint). function returns a
    tensor or a tuple of tensors; its result and gradients are those of the plain call, bit for
    bit. Parameters of function (a Module's, or tensors it closes over) get their gradients
    accumulated in .grad as usual. use_reentrant is accepted for PyTorch's signature; Ember's
    checkpoint is the reentrant kind either way. Inside ember.compile, the recomputation becomes
    the compiled graph's own (see the memory_budget option) and this call records as usual.
    """
    if not callable(function):
        raise _core.ValueError(
            f"ember.utils.checkpoint: function is a {type(function).__name__}, not callable; pass "
            "the region to run as a function or Module, then its arguments: "
            "checkpoint(block, x)")
    if kwargs:
        def run(*a, _f=function, _kw=kwargs):
            return _f(*a, **_kw)
        if hasattr(function, "buffers"):
            run.buffers = function.buffers
    else:
        run = function
    params = getattr(function, "parameters", None)
    params = [p for p in params() if p.requires_grad] if callable(params) else []
    if not _core.is_grad_enabled() or not (params or any(
            _is_tensor(a) and a.requires_grad for a in args)):
        return function(*args, **kwargs)  # nothing to differentiate: nothing to keep either
    return _Checkpoint.apply(run, preserve_rng_state, len(args), *args, *params)
