"""ember.autocast: the context manager and decorator over autodiff-engine's per-thread autocast
state. The cast policy itself lives in C++ (autodiff-engine's autocast.h), where every eager op
passes, so Python, C++ callers and recorded graphs all see the same casts."""

import functools

from ember import _core

_DEVICE_TYPES = ("cpu", "cuda")


def autocast_policy(op):
    """What autocast does to an op's floating inputs: 'lower' (to the region's dtype: matmul,
    linear, conv2d, scaled_dot_product_attention), 'float32' (softmax, reductions, norms,
    losses, exp/log/pow), 'float32_math' (cross_entropy: float16/bfloat16 logits read as they are,
    the loss computed and returned in float32, the gradient in the logits' dtype), 'widest' (cat,
    stack) or 'keep' (everything else)."""
    return _core._autocast_policy(op)


class autocast:  # noqa: N801 (named as in PyTorch)
    """Mixed precision for the ops inside, on one device type ('cpu' or 'cuda'):

        with ember.autocast("cpu"):                       # bfloat16 by default
            logits = model(x)                             # linear layers in bfloat16
            loss = F.cross_entropy(logits, y)             # float32
        loss.backward()                                   # in the dtypes forward chose

    A context manager or a decorator; nestable, and ``enabled=False`` inside an autocast region
    turns it off there. Each cast is a recorded ``to_dtype`` op: ``loss.graph()`` shows it, and
    backward converts the gradient back through it. ``dtype`` is ember.bfloat16 (the default,
    on either device; PyTorch picks float16 on CUDA) or ember.float16 (pair it with
    ember.amp.GradScaler). The state belongs to the calling thread."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if device_type not in _DEVICE_TYPES:
            raise _core.ValueError(
                f"ember.autocast: device_type must be one of {_DEVICE_TYPES}, not "
                f"{device_type!r} (a device type, without an index such as ':0')")
        self.device_type = device_type
        self.fast_dtype = _core.bfloat16 if dtype is None else dtype
        if self.fast_dtype not in (_core.bfloat16, _core.float16):
            raise _core.DTypeError(
                f"ember.autocast: dtype must be ember.bfloat16 or ember.float16, not "
                f"{self.fast_dtype}; autocast lowers matrix products to one of those")
        self.enabled = bool(enabled)
        self._saved = []

    def __enter__(self):
        self._saved.append(_core._autocast_state(self.device_type))
        _core._set_autocast_state(self.device_type, self.enabled, self.fast_dtype)
        return self

    def __exit__(self, *exc):
        enabled, dtype = self._saved.pop()
        _core._set_autocast_state(self.device_type, enabled, dtype)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self.enabled):
                return fn(*args, **kwargs)

        return wrapper


def is_autocast_enabled(device_type="cpu"):
    """Whether autocast is on for the device type on this thread."""
    return _core._autocast_state(device_type)[0]


def get_autocast_dtype(device_type="cpu"):
    """The low dtype autocast uses on the device type (its last setting when off)."""
    return _core._autocast_state(device_type)[1]
