"""finfo and iinfo: the numeric limits of Ember's floating and integer dtypes, as torch.finfo and
torch.iinfo (NumPy's values, and bfloat16's own: 8 exponent bits, 7 stored mantissa bits)."""

import numpy as np

from ember import _core


def _dtype(op, dtype, floating):
    try:
        d = _core.dtype(dtype)
    except (TypeError, _core.EmberError):
        d = None
    kinds = "floating (float16, bfloat16, float32, float64)" if floating else (
        "integer (uint8, int8, int16, int32, int64)")
    if d is None or d.is_floating_point != floating or d == _core.bool:
        raise _core.DTypeError(f"{op}: {dtype!r} is not a {kinds} dtype. Fix: pass one of those"
                               + ("; iinfo takes the integer dtypes" if floating else
                                  "; finfo takes the floating dtypes"))
    return d


class finfo:  # noqa: N801 (named as in PyTorch)
    """The limits of a floating dtype (float32 by default): bits, eps (the gap from 1 to the next
    value), max, min (= -max), tiny and smallest_normal (the smallest positive normal value),
    resolution (10^-digits, the decimal precision) and dtype (its name)."""

    def __init__(self, type=None):  # noqa: A002 (PyTorch's argument name)
        d = _dtype("finfo", _core.float32 if type is None else type, floating=True)
        self.dtype = d.name
        if d == _core.bfloat16:  # NumPy has no bfloat16: float32's exponent, 8 bits of mantissa
            self.bits, self.eps, self.resolution = 16, 2.0**-7, 0.01
            self.max, self.tiny = float((2 - 2.0**-7) * 2.0**127), 2.0**-126
        else:
            info = np.finfo(np.dtype(d.name))
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            # 10^-precision as a Python float (NumPy's is of the dtype: float16's is 0.0010004).
            self.resolution, self.tiny = 10.0**-info.precision, float(info.smallest_normal)
        self.min, self.smallest_normal = -self.max, self.tiny

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:  # noqa: N801
    """The limits of an integer dtype: bits, min, max and dtype (its name)."""

    def __init__(self, type):  # noqa: A002
        d = _dtype("iinfo", type, floating=False)
        info = np.iinfo(np.dtype(d.name))
        self.dtype, self.bits, self.min, self.max = d.name, info.bits, int(info.min), int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
