"""Batch norm (training mode) and layer norm, forward + backward, float32.

Each side computes what Ember's case does (cpp/kernel_cases.cpp): the forward, then the
gradients of x, weight and bias. The NumPy reference is the textbook formulas written as NumPy
expressions. PyTorch's calls the ATen ops behind F.batch_norm / F.layer_norm and their autograd,
directly: aten.native_layer_norm and aten.native_layer_norm_backward;
aten._batch_norm_with_update and aten.batch_norm_backward, which choose the backend
F.batch_norm runs (cuDNN on CUDA, PyTorch's own kernels on the CPU). aten.native_batch_norm
would run PyTorch's own kernels on CUDA too, which took twice cuDNN's time at [256, 32, 26, 26]
on an H200. No input requires grad, so no graph is built: loss.backward() would time PyTorch's
autograd engine too, which Ember's case does not run.

From Python (via=python) Ember's forward returns its output alone, not the statistics it saves
for the backward: those are computed once beforehand, outside the timed call, and the backward
takes them; the work timed is the same as ember_bench's."""

from harness.case import KernelCase

EPS, MOMENTUM = 1e-5, 0.1  # Ember's defaults, and PyTorch's
ALL_GRADS = [True, True, True]  # output_mask: the gradients of x, weight and bias


def norm_fwd_bwd_numpy(np, x, weight, bias, grad_out, axes, shape):
    """y = xhat * weight + bias with xhat = (x - mean) * invstd over `axes`, and the gradients of
    x, weight and bias; weight and bias broadcast as `shape`."""
    w, b = weight.reshape(shape), bias.reshape(shape)
    weight_axes = tuple(a for a in range(x.ndim) if shape[a] == 1)

    def step():
        invstd = 1 / np.sqrt(x.var(axes, keepdims=True) + EPS)
        xhat = (x - x.mean(axes, keepdims=True)) * invstd
        y = xhat * w + b
        g = grad_out * w
        grad_x = (g - g.mean(axes, keepdims=True) - xhat * (g * xhat).mean(axes, keepdims=True))
        return y, grad_x * invstd, (grad_out * xhat).sum(weight_axes), grad_out.sum(weight_axes)

    return step


def batch_norm_numpy(r, p):
    x = r.uniform(p["n"], p["c"], p["h"], p["w"])
    return norm_fwd_bwd_numpy(r.xp, x, r.uniform(p["c"]), r.uniform(p["c"]), r.uniform(*x.shape),
                              (0, 2, 3), (1, p["c"], 1, 1))


def batch_norm_torch(r, p):
    aten, c = r.xp.ops.aten, p["c"]
    x, weight, bias = r.uniform(p["n"], c, p["h"], p["w"]), r.uniform(c), r.uniform(c)
    running_mean, running_var, grad_out = r.uniform(c), r.uniform(c).abs(), r.uniform(*x.shape)

    def step():  # batch statistics, the running ones updated in place; then the gradients
        y, mean, invstd, reserve = aten._batch_norm_with_update(x, weight, bias, running_mean,
                                                                running_var, MOMENTUM, EPS)
        grads = aten.batch_norm_backward(grad_out, x, weight, running_mean, running_var, mean,
                                         invstd, True, EPS, ALL_GRADS, reserve)
        return (y, *grads)

    return step


def layer_norm_numpy(r, p):
    x = r.uniform(p["rows"], p["cols"])
    return norm_fwd_bwd_numpy(r.xp, x, r.uniform(p["cols"]), r.uniform(p["cols"]),
                              r.uniform(*x.shape), (1,), (1, p["cols"]))


def layer_norm_torch(r, p):
    aten, shape = r.xp.ops.aten, [p["cols"]]
    x, weight, bias = r.uniform(p["rows"], p["cols"]), r.uniform(p["cols"]), r.uniform(p["cols"])
    grad_out = r.uniform(*x.shape)

    def step():
        y, mean, rstd = aten.native_layer_norm(x, shape, weight, bias, EPS)
        grads = aten.native_layer_norm_backward(grad_out, x, shape, mean, rstd, weight, bias,
                                                ALL_GRADS)
        return (y, *grads)

    return step


def batch_norm_ember(r, p):
    em, c = r.xp, p["c"]
    x, weight, bias = r.uniform(p["n"], c, p["h"], p["w"]), r.uniform(c), r.uniform(c)
    running_mean, running_var, grad_out = r.uniform(c), r.uniform(c).abs(), r.uniform(*x.shape)
    mean = x.mean((0, 2, 3))  # the saved statistics: [C]
    invstd = (x.var((0, 2, 3), correction=0) + EPS).rsqrt()

    def step():  # the running statistics updated in place, as in Ember's case
        y = em.batch_norm(x, running_mean, running_var, weight, bias, training=True,
                          momentum=MOMENTUM, eps=EPS)
        return (y, *em.batch_norm_backward(grad_out, x, weight, mean, invstd, True))

    return step


def layer_norm_ember(r, p):
    em, shape = r.xp, [p["cols"]]
    x, weight, bias = r.uniform(p["rows"], p["cols"]), r.uniform(p["cols"]), r.uniform(p["cols"])
    grad_out = r.uniform(*x.shape)
    mean = x.mean(-1, keepdim=True)  # the saved statistics: [rows, 1]
    rstd = (x.var(-1, correction=0, keepdim=True) + EPS).rsqrt()

    def step():
        y = em.layer_norm(x, shape, weight, bias, EPS)
        return (y, *em.layer_norm_backward(grad_out, x, shape, mean, rstd, weight))

    return step


def cases(device):
    if device == "cpu":
        bn = [dict(n=8, c=16, h=8, w=8), dict(n=32, c=16, h=26, w=26), dict(n=64, c=32, h=24, w=24)]
        ln = [dict(rows=64, cols=256), dict(rows=1024, cols=1024), dict(rows=4096, cols=4096)]
    else:  # the outputs of conv_pool's convolutions
        bn = [dict(n=n, c=c, h=26, w=26) for n in (32, 256) for c in (16, 32)]
        ln = [dict(rows=1024, cols=1024), dict(rows=16384, cols=4096)]
    return ([KernelCase("batch_norm_fwd_bwd", p, batch_norm_numpy, batch_norm_torch,
                        quick=i == 1, ember=batch_norm_ember) for i, p in enumerate(bn)] +
            [KernelCase("layer_norm_fwd_bwd", p, layer_norm_numpy, layer_norm_torch,
                        quick=i == 1, ember=layer_norm_ember) for i, p in enumerate(ln)])
