"""Activation layers: each calls its bound op."""

from ember import _core
from ember.nn.module import Module


class ReLU(Module):
    """max(x, 0)."""

    def forward(self, x):
        return _core.relu(x)


class LeakyReLU(Module):
    """x > 0 ? x : negative_slope x."""

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return _core.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class GELU(Module):
    """x Phi(x); approximate 'none' (erf) or 'tanh'."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return _core.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate='{self.approximate}'"


class SiLU(Module):
    """x sigmoid(x)."""

    def forward(self, x):
        return _core.silu(x)


class Sigmoid(Module):
    """1 / (1 + e^-x)."""

    def forward(self, x):
        return _core.sigmoid(x)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, x):
        return _core.tanh(x)


class Softmax(Module):
    """softmax along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _core.softmax(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax) along dim."""

    def forward(self, x):
        return _core.log_softmax(x, self.dim)
