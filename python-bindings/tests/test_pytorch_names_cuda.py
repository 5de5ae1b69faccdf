"""The PyTorch names composed of ops, on a CUDA GPU: each against the same call on the CPU, and
ember.Generator drawing on the GPU (skipped without one)."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU here")

RNG = np.random.default_rng(11)


def both(array):
    """The array as a float64 tensor on the CPU and on the GPU."""
    return ember.tensor(array), ember.tensor(array, device="cuda")


def agree(cpu, gpu, tol=1e-10):
    assert gpu.device.type == "cuda"
    got, want = gpu.cpu().detach().numpy(), cpu.detach().numpy()
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def test_einsum_and_its_gradient_on_the_gpu():
    a, b = RNG.standard_normal((2, 3, 3)), RNG.standard_normal((3, 4))
    (ca, ga), (cb, gb) = both(a), both(b)
    for t in (ca, ga, cb, gb):
        t.requires_grad_(True)
    for eq in ("bii,ij->bj", "bij,jk->bik", "...ij,jk", "bij->"):
        agree(ember.einsum(eq, ca, cb) if "," in eq else ember.einsum(eq, ca),
              ember.einsum(eq, ga, gb) if "," in eq else ember.einsum(eq, ga))
    ember.einsum("bii,ij->bj", ca, cb).sum().backward()
    ember.einsum("bii,ij->bj", ga, gb).sum().backward()
    agree(ca.grad, ga.grad)
    agree(cb.grad, gb.grad)


def test_composites_on_the_gpu():
    x = np.array([1.0, np.inf, np.nan, 2.0])
    cx, gx = both(x)
    agree(ember.isclose(cx, cx + 1e-9, equal_nan=True), ember.isclose(gx, gx + 1e-9,
                                                                       equal_nan=True))
    assert ember.allclose(gx, gx, equal_nan=True)
    for c, g in zip(ember.meshgrid(cx, cx[:2], indexing="xy"),
                    ember.meshgrid(gx, gx[:2], indexing="xy")):
        agree(c, g)
    for c, g in zip(ember.where(cx > 1), ember.where(gx > 1)):
        agree(c, g)
    agree(cx.new_full((2,), 3.0), gx.new_full((2,), 3.0))
    agree(ember.sum(cx[:1], axis=0, dtype=ember.float32), ember.sum(gx[:1], axis=0,
                                                                      dtype=ember.float32))
    on_gpu = ember.as_tensor(np.ones(3), device="cuda")
    assert on_gpu.device.type == "cuda" and on_gpu.sum().item() == 3.0


def test_nn_names_on_the_gpu():
    x = RNG.standard_normal((2, 4, 9))
    cx, gx = both(x)
    for kw in (dict(stride=2, padding=1, groups=2), dict(padding="same", dilation=2),
               dict(padding=2, padding_mode="reflect")):
        m = nn.Conv1d(4, 6, 3, **kw).double()
        agree(m(cx), m.cuda()(gx))
    agree(F.group_norm(cx, 2), F.group_norm(gx, 2))
    agree(F.normalize(cx, dim=2), F.normalize(gx, dim=2))
    g = nn.GroupNorm(2, 4).cuda()
    assert g(gx.float()).device.type == "cuda"


def test_generator_and_trunc_normal_on_the_gpu():
    ember.manual_seed(0)
    want_default = ember.rand(4, device="cuda").cpu().numpy()
    ember.manual_seed(0)
    g = ember.Generator("cuda").manual_seed(7)
    a = ember.rand(1000, generator=g, device="cuda")
    np.testing.assert_array_equal(ember.rand(4, device="cuda").cpu().numpy(), want_default)
    # Uniform draws are bit-identical on the CPU and the GPU for one (seed, offset).
    cpu = ember.rand(1000, generator=ember.Generator().manual_seed(7))
    np.testing.assert_array_equal(a.cpu().numpy(), cpu.numpy())
    t = nn.init.trunc_normal_(ember.empty(10_000, device="cuda"), std=0.5, a=-1.0, b=1.0,
                              generator=g)
    values = t.cpu().numpy()
    assert t.device.type == "cuda" and values.min() >= -1.0 and values.max() <= 1.0
    assert abs(values.mean()) < 0.02
    perm = ember.randperm(10, generator=g, device="cuda").cpu().numpy()
    assert sorted(perm.tolist()) == list(range(10))
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
