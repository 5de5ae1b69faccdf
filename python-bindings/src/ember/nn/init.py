"""nn.init: parameter initialisers (torch.nn.init), each autodiff-engine's init:: function (but
trunc_normal_, a rejection sampler over Ember's random draws). Each fills a tensor in place,
without recording history, and returns it. Random ones draw from the default generator, so
ember.manual_seed reproduces them, or from the ember.Generator passed as generator."""

import math

import numpy as np

from ember import _core
from ember.autograd import no_grad

calculate_gain = _core._calculate_gain


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight [out, in, k...]: in * prod(k) and out * prod(k)."""
    return _core._calculate_fan_in_and_fan_out(tensor)


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Uniform values on [a, b)."""
    return _core._uniform_(tensor, a, b, generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Normal values of the given mean and standard deviation."""
    return _core._normal_(tensor, mean, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Values of the normal distribution (mean, std) conditioned on [a, b]: exactly truncated,
    by rejection from the proposal that accepts most often (the normal itself, a uniform on
    [a, b], or an exponential tail for bounds far out on one side)."""
    if not (std > 0 and a < b):
        raise _core.ValueError(
            f"trunc_normal_: std={std}, a={a}, b={b}; expected std > 0 and a < b")
    n = tensor.numel()
    lo, hi = (a - mean) / std, (b - mean) / std  # the bounds of the standard normal
    values = np.concatenate(list(_truncated_standard_normal(n, lo, hi, generator)) or [[]])[:n]
    with no_grad():
        tensor.copy_(_core.tensor((mean + std * values).clip(a, b)).reshape(tensor.shape))
    return tensor


def _truncated_standard_normal(n, lo, hi, generator):
    """Yields float64 arrays of standard normal values in [lo, hi], n of them in all (or more)."""
    closest = 0.0 if lo < 0 < hi else min(abs(lo), abs(hi))  # the point of highest density
    mass = 0.5 * (math.erf(hi / 2**0.5) - math.erf(lo / 2**0.5))
    grid = np.linspace(lo, hi, 257) if math.isfinite(hi - lo) else None
    uniform_rate = (np.exp((closest**2 - grid**2) / 2).mean() if grid is not None else 0.0)
    tail = lo > 0 or hi < 0
    rate, proposal = max((mass, "normal"), (uniform_rate, "uniform"),
                         (0.5 if tail else 0.0, "exponential"))
    side = 1.0 if hi > 0 else -1.0  # the exponential proposal is drawn on the positive side
    start = lo if side > 0 else -hi
    alpha = (start + math.sqrt(start**2 + 4)) / 2  # Robert (1995)'s optimal rate
    left = n

    def uniform(m):
        return _core.rand(m, generator=generator, dtype=_core.float64).numpy()

    while left > 0:
        m = int(left / max(rate, 0.01) * 1.2) + 16
        if proposal == "normal":
            x = _core.randn(m, generator=generator, dtype=_core.float64).numpy()
            keep = (x >= lo) & (x <= hi)
        elif proposal == "uniform":  # accepted with density / envelope, envelope at closest
            x = lo + (hi - lo) * uniform(m)
            keep = uniform(m) < np.exp((closest**2 - x**2) / 2)
        else:  # start + Exp(alpha), accepted with exp(-(y - alpha)^2 / 2)
            y = start - np.log1p(-uniform(m)) / alpha
            x = side * y
            keep = (uniform(m) < np.exp(-((y - alpha) ** 2) / 2)) & (x >= lo) & (x <= hi)
        x = x[keep]
        left -= len(x)
        yield x


def constant_(tensor, val):
    """Every element val."""
    return _core._constant_(tensor, val)


def zeros_(tensor):
    """Every element 0."""
    return _core._constant_(tensor, 0.0)


def ones_(tensor):
    """Every element 1."""
    return _core._constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: std = gain sqrt(2 / (fan_in + fan_out))."""
    return _core._xavier_uniform_(tensor, gain, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: std = gain sqrt(2 / (fan_in + fan_out))."""
    return _core._xavier_normal_(tensor, gain, generator)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                     generator=None):
    """He uniform: std = calculate_gain(nonlinearity, a) / sqrt(fan)."""
    return _core._kaiming_uniform_(tensor, a, mode, nonlinearity, generator)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu",
                    generator=None):
    """He normal: std = calculate_gain(nonlinearity, a) / sqrt(fan)."""
    return _core._kaiming_normal_(tensor, a, mode, nonlinearity, generator)


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix times gain."""
    return _core._orthogonal_(tensor, gain, generator)


def default_init_(weight, bias=None):
    """PyTorch's initialisation of Linear and Conv2d: kaiming_uniform_(a=sqrt(5)) for the
    weight, uniform on [-1/sqrt(fan_in), 1/sqrt(fan_in)] for the bias."""
    kaiming_uniform_(weight, a=5**0.5)
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / fan_in**0.5 if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound)
