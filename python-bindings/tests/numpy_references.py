"""NumPy references that more than one test file checks ember against."""

import numpy as np


def conv2d_ref(x, w, b, stride=1, pad=0):
    """conv2d of x [N, C, H, W] with w [O, C, kh, kw] and bias b [O]: square stride and zero
    padding, one window at a time."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    batch, _, height, width = x.shape
    out_channels, _, kh, kw = w.shape
    Ho, Wo = (height - kh) // stride + 1, (width - kw) // stride + 1
    out = np.zeros((batch, out_channels, Ho, Wo))
    for i in range(Ho):
        for j in range(Wo):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + b[None, :, None, None]
