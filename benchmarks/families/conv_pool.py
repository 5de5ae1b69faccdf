"""Convolution and max pooling on [N, C, H, W] float32, forward and forward + backward.

Shapes are those of a small MNIST CNN and issue #2's [64,16,26,26] x [32,16,3,3]. The NumPy
reference is the textbook im2col formulation (sliding windows contracted with tensordot, i.e. a
GEMM); PyTorch's is F.conv2d / F.max_pool2d with autograd (oneDNN or cuDNN)."""

from harness.case import KernelCase


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


def conv2d_fwd_bwd(r, p):
    x, weight, bias = conv_inputs(r, p)
    if r.name == "torch":
        return conv2d_fwd_bwd_torch(r, x, weight, bias)
    np, k = r.xp, p["kernel"]
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


def conv2d_fwd_bwd_torch(r, x, weight, bias):
    conv = r.xp.nn.functional.conv2d
    for t in (x, weight, bias):
        t.requires_grad_()
    grad_out = r.uniform(*conv(x, weight, bias).shape)

    def step():
        conv(x, weight, bias).backward(grad_out)
        x.grad = weight.grad = bias.grad = None  # as Ember does: fresh gradients, no accumulation

    return step


def max_pool2d_fwd_bwd(r, p):
    x, k = r.uniform(p["n"], p["c"], p["h"], p["w"]), p["kernel"]
    n, c, ho, wo = p["n"], p["c"], p["h"] // k, p["w"] // k
    grad_out = r.uniform(n, c, ho, wo)
    if r.name == "torch":
        x.requires_grad_()

        def torch_step():
            r.xp.nn.functional.max_pool2d(x, k).backward(grad_out)
            x.grad = None

        return torch_step
    np = r.xp

    def numpy_step():  # windows of k x k as axes 3 and 5; the gradient goes where the max was
        blocks = x[:, :, :ho * k, :wo * k].reshape(n, c, ho, k, wo, k)
        y = blocks.max(axis=(3, 5))
        grad_x = np.zeros_like(x)
        routed = (blocks == y[:, :, :, None, :, None]) * grad_out[:, :, :, None, :, None]
        grad_x[:, :, :ho * k, :wo * k] = routed.reshape(n, c, ho * k, wo * k)
        return y, grad_x

    return numpy_step


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
            KernelCase("conv2d", p, conv2d, conv2d, flops=conv_flops(p), quick=quick),
            KernelCase("conv2d_fwd_bwd", p, conv2d_fwd_bwd, conv2d_fwd_bwd,
                       flops=3 * conv_flops(p), quick=quick),
        ]
        # pooling acts on the conv's output
        pool = dict(n=p["n"], c=p["o"], h=p["h"] - 2, w=p["w"] - 2, kernel=2)
        out.append(KernelCase("max_pool2d_fwd_bwd", pool, max_pool2d_fwd_bwd, max_pool2d_fwd_bwd,
                              quick=quick))
    return out
