"""scikit-learn's 1 797 handwritten digits (8 x 8, values 0-16), bundled with scikit-learn so that
no download is needed: a fixed, stratified train/test split, optionally resized to 28 x 28 (the
size of MNIST) and normalised with the training set's mean and standard deviation.

This is data preparation, so it is plain NumPy; everything the models compute is Ember's."""

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def resize_bilinear(images, size):
    """Bilinear resize of images [N, H, W] to [N, size, size], sampling at pixel centres (the
    convention of PIL and of align_corners=False)."""
    n, h, w = images.shape

    def axis(src, dst):
        # the source coordinate of every destination pixel centre, clamped to the image
        x = np.clip((np.arange(dst) + 0.5) * src / dst - 0.5, 0, src - 1)
        lo = np.floor(x).astype(np.int64)
        hi = np.minimum(lo + 1, src - 1)
        return lo, hi, (x - lo).astype(np.float32)

    y0, y1, fy = axis(h, size)
    x0, x1, fx = axis(w, size)
    rows = images[:, y0] * (1 - fy)[None, :, None] + images[:, y1] * fy[None, :, None]
    return rows[:, :, x0] * (1 - fx) + rows[:, :, x1] * fx  # [N, size, size]


def load_digits_split(size=28, test_fraction=0.2, seed=0):
    """(x_train, y_train, x_test, y_test): images float32 [N, 1, size, size] (size 8 keeps the
    original pixels), normalised with the training set's statistics, and labels int64 [N].
    The split is stratified by class and fixed by seed."""
    digits = load_digits()
    images = digits.images.astype(np.float32) / 16.0  # [1797, 8, 8] in [0, 1]
    if size != 8:
        images = resize_bilinear(images, size)
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=test_fraction, stratify=labels, random_state=seed
    )
    mean, std = x_train.mean(), x_train.std()
    x_train, x_test = ((x - mean) / std for x in (x_train, x_test))
    return x_train[:, None], y_train, x_test[:, None], y_test
