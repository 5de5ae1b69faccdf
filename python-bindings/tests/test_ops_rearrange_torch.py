"""The exposed ops against PyTorch itself, where it is installed: the cases whose exact rules
NumPy does not share (NaN and -0.0 in sort, interpolate's coordinate transforms, bincount's
result dtypes, round with decimals)."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch", reason="PyTorch is not installed (an optional reference)")
RNG = np.random.default_rng(3)


def assert_same(got, want, tol=0.0):
    got, want = got.detach().numpy(), want.detach().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_and_topk_with_nan_inf_and_signed_zero(descending):
    a = np.array([[3.0, np.nan, 1.0, 3.0, -0.0, 0.0], [2.0, 2.0, np.inf, -np.inf, 1.0, np.nan]],
                 dtype=np.float32)
    got = ember.sort(ember.tensor(a), 1, descending)
    want = torch.sort(torch.tensor(a), dim=1, descending=descending, stable=True)
    assert_same(got.values, want.values)
    assert_same(got.indices, want.indices)
    got = ember.topk(ember.tensor(a), 3, largest=not descending)
    assert_same(got.values, torch.topk(torch.tensor(a), 3, largest=not descending).values)


@pytest.mark.parametrize("kw", [dict(size=(7, 9)), dict(size=3), dict(scale_factor=2),
                                dict(scale_factor=(1.7, 0.6)), dict(size=(2, 11))])
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("bilinear", False),
                                                ("bilinear", True)])
def test_interpolate_and_its_gradient(kw, mode, align_corners):
    a = RNG.standard_normal((2, 3, 5, 4))
    x, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    got = F.interpolate(x, mode=mode, align_corners=align_corners, **kw)
    want = torch.nn.functional.interpolate(t, mode=mode, align_corners=align_corners, **kw)
    assert_same(got, want, 1e-12)
    w = RNG.standard_normal(want.shape)
    (got * ember.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    assert_same(x.grad, t.grad, 1e-12)


@pytest.mark.parametrize("weights", [None, np.float32, np.float64, np.int64])
def test_bincount_dtypes(weights):
    a = RNG.integers(0, 6, 20)
    w = None if weights is None else (RNG.standard_normal(20) * 3).astype(weights)
    got = ember.bincount(ember.tensor(a), None if w is None else ember.tensor(w), minlength=8)
    want = torch.bincount(torch.tensor(a), None if w is None else torch.tensor(w), minlength=8)
    assert_same(got, want, 1e-6)


def test_round_with_decimals_and_unique():
    a = (RNG.standard_normal((3, 4)) * 10).astype(np.float32)
    for decimals in (-1, 0, 2):
        assert_same(ember.round(ember.tensor(a), decimals=decimals),
                    torch.round(torch.tensor(a), decimals=decimals))
    u = RNG.integers(0, 5, (3, 7))
    got = ember.unique(ember.tensor(u), return_inverse=True, return_counts=True)
    want = torch.unique(torch.tensor(u), return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert_same(g, w)
