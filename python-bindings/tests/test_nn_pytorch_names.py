"""nn's PyTorch names built from existing ops: Conv1d / F.conv1d, GroupNorm / F.group_norm,
F.normalize, nn.init.trunc_normal_ and Module forward (pre-)hooks, against NumPy references and
finite differences."""

import math

import numpy as np
import pytest
from gradcheck import gradcheck

import ember
from ember import nn
from ember.nn import functional as F

RNG = np.random.default_rng(5)


def conv1d_ref(x, w, b, stride=1, padding=0, dilation=1, groups=1):
    """x [N, C, L], w [O, C / groups, k] -> [N, O, Lo], by loops over groups and taps."""
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    n, c, length = x.shape
    o, cg, k = w.shape
    lo = (length - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((n, o, lo))
    og = o // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(lo):
            taps = xs[:, :, i * stride:i * stride + dilation * (k - 1) + 1:dilation]  # [N, cg, k]
            out[:, g * og:(g + 1) * og, i] = np.einsum("nck,ock->no", taps, w[g * og:(g + 1) * og])
    return out + (b[None, :, None] if b is not None else 0)


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (3, 1, 2, 2), (1, 0, 1, 4)])
def test_conv1d_matches_numpy(stride, padding, dilation, groups):
    x = RNG.standard_normal((2, 4, 11))
    w, b = RNG.standard_normal((4, 4 // groups, 3)), RNG.standard_normal(4)
    out = F.conv1d(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride, padding, dilation,
                   groups)
    np.testing.assert_allclose(out.numpy(), conv1d_ref(x, w, b, stride, padding, dilation, groups),
                               rtol=1e-10, atol=1e-10)


def test_conv1d_same_valid_unbatched_and_gradients():
    x, w = RNG.standard_normal((2, 3, 7)), RNG.standard_normal((5, 3, 4))
    same = F.conv1d(ember.tensor(x), ember.tensor(w), padding="same", dilation=2)
    assert same.shape == (2, 5, 7)
    # PyTorch's 'same': total padding dilation (k - 1) = 6, split 3 left and 3 right.
    np.testing.assert_allclose(same.numpy(), conv1d_ref(x, w, None, 1, 3, 2), rtol=1e-10)
    valid = F.conv1d(ember.tensor(x), ember.tensor(w), padding="valid")
    np.testing.assert_allclose(valid.numpy(), conv1d_ref(x, w, None), rtol=1e-10)
    single = F.conv1d(ember.tensor(x[0]), ember.tensor(w))
    np.testing.assert_allclose(single.numpy(), conv1d_ref(x[:1], w, None)[0], rtol=1e-10)
    gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=1),
              x[:1, :, :6], w[:2] / 2, RNG.standard_normal(2))
    # A non-contiguous input: [N, L, C] transposed to [N, C, L].
    gradcheck(lambda x, w: F.conv1d(x.mT, w, groups=3), np.swapaxes(x[:1, :, :5], 1, 2),
              RNG.standard_normal((3, 1, 2)))
    assert F.conv1d(ember.tensor(x), ember.tensor(w[:, :, :1])).shape == (2, 5, 7)
    assert F.conv1d(ember.tensor(x[:, :, :4]), ember.tensor(w)).shape == (2, 5, 1)
    with pytest.raises(ember.ShapeError, match=r"conv1d: input is \[2, 3, 1, 7\]"):
        F.conv1d(ember.zeros(2, 3, 1, 7), ember.zeros(5, 3, 4))


def test_conv1d_module():
    ember.manual_seed(0)
    m = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2, bias=True)
    assert m.weight.shape == (6, 2, 3) and m.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 3)  # PyTorch's default init: fan_in = in / groups * k
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    x = RNG.standard_normal((3, 4, 9))
    out = m(ember.tensor(x, dtype=ember.float32))
    ref = conv1d_ref(x, m.weight.detach().numpy().astype(np.float64),
                     m.bias.detach().numpy().astype(np.float64), 2, 1, 1, 2)
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    assert m.weight.grad.shape == (6, 2, 3)
    assert repr(m) == "Conv1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), groups=2)"
    assert repr(nn.Conv1d(1, 2, 3, padding_mode="reflect", bias=False)) == (
        "Conv1d(1, 2, kernel_size=(3,), stride=(1,), bias=False, padding_mode=reflect)")
    assert nn.Conv1d(2, 2, 3, bias=False).bias is None
    with pytest.raises(ember.ShapeError, match="expected \\[N, 4, L\\]"):
        m(ember.zeros(3, 5, 9))


@pytest.mark.parametrize("mode, np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                           ("circular", "wrap")])
def test_conv1d_padding_modes(mode, np_mode):
    m = nn.Conv1d(2, 3, 3, padding=2, padding_mode=mode).double()
    x = RNG.standard_normal((1, 2, 6))
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    padded = np.pad(x, ((0, 0), (0, 0), (2, 2)), mode=np_mode)
    np.testing.assert_allclose(m(ember.tensor(x)).detach().numpy(), conv1d_ref(padded, w, b),
                               rtol=1e-10)
    same = nn.Conv1d(2, 3, 4, padding="same", padding_mode=mode).double()
    assert same(ember.tensor(x)).shape == (1, 3, 6)
    with pytest.raises(ember.ValueError, match="padding_mode"):
        nn.Conv1d(2, 3, 3, padding_mode="mirror")


def group_norm_ref(x, groups, w, b, eps):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = [1, c] + [1] * (x.ndim - 2)
    return y * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((3, 4, 2, 3), 2), ((2, 4), 4),
                                           ((1, 3, 7), 1)])
def test_group_norm_matches_numpy(shape, groups):
    x, w, b = RNG.standard_normal(shape), RNG.standard_normal(shape[1]), RNG.standard_normal(
        shape[1])
    out = F.group_norm(ember.tensor(x), groups, ember.tensor(w), ember.tensor(b), eps=1e-5)
    np.testing.assert_allclose(out.numpy(), group_norm_ref(x, groups, w, b, 1e-5), rtol=1e-8,
                               atol=1e-10)


def test_group_norm_of_strided_and_empty_inputs():
    x = RNG.standard_normal((5, 4, 2))
    w, b = np.ones(4), np.zeros(4)
    strided = ember.tensor(np.swapaxes(x, 1, 2).copy()).mT  # [5, 4, 2], not contiguous
    assert not strided.is_contiguous()
    np.testing.assert_allclose(F.group_norm(strided, 2).numpy(), group_norm_ref(x, 2, w, b, 1e-5),
                               rtol=1e-8, atol=1e-10)
    assert F.group_norm(ember.zeros(0, 4, 3), 2).shape == (0, 4, 3)


def test_group_norm_gradients_and_module():
    gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), RNG.standard_normal((2, 4, 3)),
              RNG.standard_normal(4), RNG.standard_normal(4), atol=1e-5)
    m = nn.GroupNorm(2, 4)
    assert m.weight.tolist() == [1.0] * 4 and m.bias.tolist() == [0.0] * 4
    x = RNG.standard_normal((2, 4, 5))
    np.testing.assert_allclose(m(ember.tensor(x, dtype=ember.float32)).detach().numpy(),
                               group_norm_ref(x, 2, np.ones(4), np.zeros(4), 1e-5), rtol=1e-4,
                               atol=1e-5)
    assert nn.GroupNorm(2, 4, affine=False).weight is None
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    no_bias = nn.GroupNorm(2, 4, bias=False)
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ["weight"]
    with pytest.raises(ember.ValueError, match="not divisible"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ember.ShapeError, match=r"expected \[N, 4, \*\]"):
        m(ember.zeros(2, 3, 5))
    with pytest.raises(ember.ShapeError, match="divisible"):
        F.group_norm(ember.zeros(2, 5), 2)


def test_normalize_matches_numpy_and_its_gradient():
    x = RNG.standard_normal((3, 4))
    for p, dim in [(2.0, 1), (1.0, 0), (3.0, -1)]:
        norm = np.sum(np.abs(x) ** p, axis=dim, keepdims=True) ** (1 / p)
        np.testing.assert_allclose(F.normalize(ember.tensor(x), p=p, dim=dim).numpy(),
                                   x / np.maximum(norm, 1e-12), rtol=1e-12)
        gradcheck(lambda t, p=p, dim=dim: F.normalize(t, p, dim), x)
    strided = ember.tensor(x).T
    np.testing.assert_allclose(F.normalize(strided, dim=0).numpy(),
                               x.T / np.linalg.norm(x.T, axis=0, keepdims=True), rtol=1e-12)
    zeros = F.normalize(ember.zeros(2, 3))  # divided by eps, not by 0
    assert zeros.tolist() == [[0.0] * 3] * 2


def truncated_moments(mean, std, a, b):
    """Mean and variance of the normal (mean, std) conditioned on [a, b]."""
    def pdf(z):
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi) if math.isfinite(z) else 0.0

    def cdf(z):
        return 0.5 * math.erfc(-z / math.sqrt(2))

    lo, hi = (a - mean) / std, (b - mean) / std
    mass = cdf(hi) - cdf(lo)
    ratio = (pdf(lo) - pdf(hi)) / mass
    lo_pdf = lo * pdf(lo) if math.isfinite(lo) else 0.0
    hi_pdf = hi * pdf(hi) if math.isfinite(hi) else 0.0
    var = std**2 * (1 + (lo_pdf - hi_pdf) / mass - ratio**2)
    return mean + std * ratio, var


@pytest.mark.parametrize("mean, std, a, b", [
    (0.0, 1.0, -2.0, 2.0),       # PyTorch's default: the normal proposal
    (0.0, 0.02, -2.0, 2.0),      # a ViT's: the bounds are 100 std out
    (1.0, 2.0, 2.0, 3.0),        # a narrow window in the tail: the uniform proposal
    (0.0, 1.0, 3.0, math.inf),   # a one-sided far tail: the exponential proposal
    (0.0, 1.0, -math.inf, -4.0),  # and its mirror
    (5.0, 1.0, -0.1, 0.1),       # far from the mean on the other side
])
def test_trunc_normal_has_the_truncated_distribution(mean, std, a, b):
    ember.manual_seed(1234)
    t = nn.init.trunc_normal_(ember.empty(200_000, dtype=ember.float64), mean, std, a, b)
    x = t.numpy()
    assert x.min() >= a and x.max() <= b
    want_mean, want_var = truncated_moments(mean, std, a, b)
    n = len(x)
    # The sample mean within 5 standard errors; the variance within 5% (fixed seed: no flakes).
    assert abs(x.mean() - want_mean) < 5 * math.sqrt(want_var / n)
    assert abs(x.var() / want_var - 1) < 0.05
    # Kolmogorov-Smirnov distance to the truncated CDF, far below a broken sampler's.
    xs = np.sort(x)[:: 100]

    def cdf(z):
        return 0.5 * math.erfc(-(z - mean) / std / math.sqrt(2))

    lo, hi = cdf(a), cdf(b)
    target = (np.array([cdf(z) for z in xs]) - lo) / (hi - lo)
    empirical = np.arange(len(xs)) * 100 / n
    assert np.abs(target - empirical).max() < 0.01


def test_trunc_normal_fills_in_place_and_checks_its_arguments():
    w = nn.Parameter(ember.zeros(3, 4))
    assert nn.init.trunc_normal_(w, std=0.5) is w
    assert w.requires_grad and float(w.abs().max()) <= 2.0 and float(w.abs().sum()) > 0
    assert nn.init.trunc_normal_(ember.empty(0)).shape == (0,)
    ember.manual_seed(3)
    a = nn.init.trunc_normal_(ember.empty(5)).numpy()
    ember.manual_seed(3)
    np.testing.assert_array_equal(nn.init.trunc_normal_(ember.empty(5)).numpy(), a)
    with pytest.raises(ember.ValueError, match="a < b"):
        nn.init.trunc_normal_(ember.empty(2), a=1.0, b=-1.0)


# ---- forward hooks ----

def test_forward_pre_hook_and_forward_hook_replace_args_and_output():
    lin = nn.Linear(2, 2)
    seen = []
    h1 = lin.register_forward_pre_hook(lambda m, args: seen.append(("pre", m, args)))
    h2 = lin.register_forward_pre_hook(lambda m, args: args[0] * 0)  # not a tuple: wrapped
    h3 = lin.register_forward_hook(lambda m, args, out: seen.append(("post", args[0], out)))
    h4 = lin.register_forward_hook(lambda m, args, out: out + 100)
    x = ember.ones(1, 2)
    out = lin(x)
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 100,
                               rtol=1e-6)
    assert seen[0][0] == "pre" and seen[0][1] is lin and seen[0][2][0] is x
    assert seen[1][0] == "post" and seen[1][1].tolist() == [[0.0, 0.0]]
    for h in (h1, h2, h3, h4):
        h.remove()
    h4.remove()  # removing twice is harmless
    np.testing.assert_allclose(lin(x).detach().numpy(),
                               (x @ lin.weight.T + lin.bias).detach().numpy())
    assert len(seen) == 2


def test_hook_order_prepend_kwargs_and_handles_as_context_managers():
    calls = []

    class Add(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Add()
    m.register_forward_hook(lambda mod, args, out: calls.append("a"))
    m.register_forward_hook(lambda mod, args, out: calls.append("b"), prepend=True)
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: (args, {**kwargs, "scale": 3.0}), with_kwargs=True)
    m.register_forward_hook(
        lambda mod, args, kwargs, out: calls.append(kwargs["scale"]), with_kwargs=True)
    assert m(ember.ones(1)).item() == 3.0
    assert calls == ["b", "a", 3.0]
    with m.register_forward_hook(lambda mod, args, out: out * 0):
        assert m(ember.ones(1)).item() == 0.0
    assert m(ember.ones(1)).item() == 3.0


def test_hooks_in_submodules_and_bad_pre_hook_results():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    features = {}
    model[1].register_forward_hook(lambda m, args, out: features.update(relu=out))
    y = model(ember.randn(5, 3))
    assert features["relu"].shape == (5, 4) and y.shape == (5, 2)
    model[0].register_forward_pre_hook(lambda m, args, kwargs: "oops", with_kwargs=True)
    with pytest.raises(TypeError, match="None or \\(args, kwargs\\)"):
        model(ember.randn(5, 3))
