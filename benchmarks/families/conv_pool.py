"""Convolution and max pooling on [N, C, H, W] float32, forward and forward + backward.

Shapes are those of a small MNIST CNN and issue #2's [64,16,26,26] x [32,16,3,3]; stride 1, no
padding. Each side computes what Ember's case does (cpp/kernel_cases.cpp): conv2d_fwd_bwd the
forward and the gradients of x, weight and bias; max_pool2d_fwd_bwd the forward with the argmax
indices and the gradient of x routed through them.

PyTorch's reference calls the ATen ops its autograd would call, directly: aten.convolution and
aten.convolution_backward (all three gradients; oneDNN or cuDNN underneath),
aten.max_pool2d_with_indices and aten.max_pool2d_with_indices_backward. No input requires grad,
so no graph is built: loss.backward() would time PyTorch's autograd engine too, which Ember's
case does not run.

NumPy has no convolution. The textbook im2col formulation (sliding windows contracted with
tensordot, i.e. a GEMM) stands in for one, a strawman rather than a library's kernel: it is
timed only where PyTorch is not a reference, and its rows name it numpy-im2col. NumPy's max pool
(a reshape and a max) is what a NumPy user writes, a reference named numpy."""

from dataclasses import replace

from harness.case import Context, KernelCase, Measurement

STRAWMAN = "numpy-im2col"  # the reference column of the im2col conv rows
# stride, padding, dilation, transposed, output_padding, groups: Ember's conv2d defaults
CONV_ARGS = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
ALL_GRADS = [True, True, True]  # output_mask: the gradients of x, weight and bias


class ConvCase(KernelCase):
    """A KernelCase whose NumPy reference is the im2col strawman: left out where PyTorch is a
    reference, named numpy-im2col where it is timed."""

    def measure(self, ctx: Context) -> list[Measurement]:
        if any(r.name == "torch" for r in ctx.references):
            ctx = replace(ctx, references=[r for r in ctx.references if r.name != "numpy"])
        rows = super().measure(ctx)
        for m in rows:
            if m.reference == "numpy":
                m.reference = STRAWMAN
        return rows


def conv_inputs(r, p):
    x = r.uniform(p["n"], p["c"], p["h"], p["w"])
    weight = r.uniform(p["o"], p["c"], p["kernel"], p["kernel"])
    return x, weight, r.uniform(p["o"])


def windows(np, x, k):
    """x [N, C, H, W] -> [N, C, H-k+1, W-k+1, k, k]: every k x k window, a view (no copy)."""
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))


def conv2d_numpy_forward(np, x, weight, bias):
    # out[n, o, i, j] = sum over c, a, b of x[n, c, i + a, j + b] * weight[o, c, a, b] + bias[o]
    out = np.tensordot(windows(np, x, weight.shape[-1]), weight, axes=([1, 4, 5], [1, 2, 3]))
    return out.transpose(0, 3, 1, 2) + bias[:, None, None]  # [N, Ho, Wo, O] -> [N, O, Ho, Wo]


def conv2d(r, p):
    x, weight, bias = conv_inputs(r, p)
    if r.name == "torch":
        return lambda: r.xp.nn.functional.conv2d(x, weight, bias)
    return lambda: conv2d_numpy_forward(r.xp, x, weight, bias)


def conv2d_fwd_bwd_numpy(r, p):
    np, k = r.xp, p["kernel"]
    x, weight, bias = conv_inputs(r, p)
    grad_out = r.uniform(*conv2d_numpy_forward(np, x, weight, bias).shape)
    flipped = weight[:, :, ::-1, ::-1]

    def step():
        y = conv2d_numpy_forward(np, x, weight, bias)
        grad_weight = np.tensordot(grad_out, windows(np, x, k), axes=([0, 2, 3], [0, 2, 3]))
        # grad_x is the full correlation of grad_out with the flipped kernel
        padded = np.pad(grad_out, ((0, 0), (0, 0), (k - 1, k - 1), (k - 1, k - 1)))
        grad_x = np.tensordot(windows(np, padded, k), flipped, axes=([1, 4, 5], [0, 2, 3]))
        return y, grad_x.transpose(0, 3, 1, 2), grad_weight, grad_out.sum((0, 2, 3))

    return step


def conv2d_fwd_bwd_torch(r, p):
    aten, (x, weight, bias) = r.xp.ops.aten, conv_inputs(r, p)
    grad_out = r.uniform(*r.xp.nn.functional.conv2d(x, weight, bias).shape)

    def step():
        y = aten.convolution(x, weight, bias, *CONV_ARGS)
        grads = aten.convolution_backward(grad_out, x, weight, [p["o"]], *CONV_ARGS, ALL_GRADS)
        return (y, *grads)

    return step


def pool_inputs(r, p):
    """x, and a grad_out of the pooled shape."""
    n, c, k = p["n"], p["c"], p["kernel"]
    return r.uniform(n, c, p["h"], p["w"]), r.uniform(n, c, p["h"] // k, p["w"] // k)


def max_pool2d_fwd_bwd_numpy(r, p):
    np, k = r.xp, p["kernel"]
    x, grad_out = pool_inputs(r, p)
    n, c, ho, wo = grad_out.shape

    def step():  # windows of k x k as axes 3 and 5; the gradient goes where the max was
        blocks = x[:, :, :ho * k, :wo * k].reshape(n, c, ho, k, wo, k)
        y = blocks.max(axis=(3, 5))
        grad_x = np.zeros_like(x)
        routed = (blocks == y[:, :, :, None, :, None]) * grad_out[:, :, :, None, :, None]
        grad_x[:, :, :ho * k, :wo * k] = routed.reshape(n, c, ho * k, wo * k)
        return y, grad_x

    return step


def max_pool2d_fwd_bwd_torch(r, p):
    aten, (x, grad_out), k = r.xp.ops.aten, pool_inputs(r, p), p["kernel"]
    window = ([k, k], [k, k], [0, 0], [1, 1], False)  # kernel, stride, padding, dilation, ceil

    def step():  # the forward with its argmax indices, then the gradient of x through them
        y, indices = aten.max_pool2d_with_indices(x, *window)
        return y, aten.max_pool2d_with_indices_backward(grad_out, x, *window, indices)

    return step


def conv2d_ember(r, p):
    x, weight, bias = conv_inputs(r, p)
    return lambda: r.xp.conv2d(x, weight, bias)


def conv2d_fwd_bwd_ember(r, p):  # the ops of Ember's case, from Python
    em, (x, weight, bias) = r.xp, conv_inputs(r, p)
    grad_out = r.uniform(*em.conv2d(x, weight, bias).shape)

    def step():  # the bias's gradient is grad_out summed over all but its channels
        y = em.conv2d(x, weight, bias)
        return (y, em.conv2d_backward_input(grad_out, weight, x.shape),
                em.conv2d_backward_weight(grad_out, x, weight.shape), grad_out.sum((0, 2, 3)))

    return step


def max_pool2d_fwd_bwd_ember(r, p):
    em, (x, grad_out), k = r.xp, pool_inputs(r, p), p["kernel"]

    def step():
        y, indices = em.max_pool2d(x, k, return_indices=True)
        return y, em.max_pool2d_backward(grad_out, indices, x.shape)

    return step


def conv_flops(p):  # multiply-adds of the forward pass, twice that for the backward
    ho, wo = p["h"] - p["kernel"] + 1, p["w"] - p["kernel"] + 1
    return 2 * p["n"] * p["o"] * ho * wo * p["c"] * p["kernel"] ** 2


def cases(device):
    if device == "cpu":  # the CNN's two layers at batch 32, then issue #2's shape
        convs = [dict(n=32, c=1, h=28, w=28, o=16), dict(n=32, c=16, h=13, w=13, o=32),
                 dict(n=64, c=16, h=26, w=26, o=32)]
    else:
        convs = [dict(n=n, c=c, h=28, w=28, o=o) for n in (32, 256) for c, o in ((1, 16), (16, 32))]
    out = []
    for i, conv in enumerate(convs):
        p = dict(conv, kernel=3)
        quick = i == 1
        out += [
            ConvCase("conv2d", p, conv2d, conv2d, flops=conv_flops(p), quick=quick,
                     ember=conv2d_ember),
            ConvCase("conv2d_fwd_bwd", p, conv2d_fwd_bwd_numpy, conv2d_fwd_bwd_torch,
                     flops=3 * conv_flops(p), quick=quick, ember=conv2d_fwd_bwd_ember),
        ]
        # pooling acts on the conv's output
        pool = dict(n=p["n"], c=p["o"], h=p["h"] - 2, w=p["w"] - 2, kernel=2)
        out.append(KernelCase("max_pool2d_fwd_bwd", pool, max_pool2d_fwd_bwd_numpy,
                              max_pool2d_fwd_bwd_torch, quick=quick,
                              ember=max_pool2d_fwd_bwd_ember))
    return out
