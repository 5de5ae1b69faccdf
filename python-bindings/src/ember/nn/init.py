"""nn.init: parameter initialisers (torch.nn.init), each autodiff-engine's init:: function. Each
fills a tensor in place, without recording history, and returns it. Random ones draw from the
default generator, so ember.manual_seed reproduces them."""

from ember import _core

calculate_gain = _core._calculate_gain


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight [out, in, k...]: in * prod(k) and out * prod(k)."""
    return _core._calculate_fan_in_and_fan_out(tensor)


def uniform_(tensor, a=0.0, b=1.0):
    """Uniform values on [a, b)."""
    return _core._uniform_(tensor, a, b)


def normal_(tensor, mean=0.0, std=1.0):
    """Normal values of the given mean and standard deviation."""
    return _core._normal_(tensor, mean, std)


def constant_(tensor, val):
    """Every element val."""
    return _core._constant_(tensor, val)


def zeros_(tensor):
    """Every element 0."""
    return _core._constant_(tensor, 0.0)


def ones_(tensor):
    """Every element 1."""
    return _core._constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0):
    """Glorot uniform: std = gain sqrt(2 / (fan_in + fan_out))."""
    return _core._xavier_uniform_(tensor, gain)


def xavier_normal_(tensor, gain=1.0):
    """Glorot normal: std = gain sqrt(2 / (fan_in + fan_out))."""
    return _core._xavier_normal_(tensor, gain)


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He uniform: std = calculate_gain(nonlinearity, a) / sqrt(fan)."""
    return _core._kaiming_uniform_(tensor, a, mode, nonlinearity)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He normal: std = calculate_gain(nonlinearity, a) / sqrt(fan)."""
    return _core._kaiming_normal_(tensor, a, mode, nonlinearity)


def orthogonal_(tensor, gain=1.0):
    """A (semi-)orthogonal matrix times gain."""
    return _core._orthogonal_(tensor, gain)


def default_init_(weight, bias=None):
    """PyTorch's initialisation of Linear and Conv2d: kaiming_uniform_(a=sqrt(5)) for the
    weight, uniform on [-1/sqrt(fan_in), 1/sqrt(fan_in)] for the bias."""
    kaiming_uniform_(weight, a=5**0.5)
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / fan_in**0.5 if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound)
