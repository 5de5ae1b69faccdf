"""CIFAR-10 for the examples: the Python batches read by ember.data.load_cifar10, the training
set's channel statistics, and two layers that prepare a batch on its device with Ember ops:
Normalize (uint8 pixels to standardised floats) and RandomCropFlip (pad, a random crop per
image and a random horizontal flip, in training mode only).

The images stay uint8 on the host (150 MB for all 50 000); each batch becomes float on the
device, inside the model, so evaluation and training feed the same raw pixels."""

import numpy as np

import ember
from ember import nn

# The ten classes in label order, shortened (airplane, automobile) to fit the plots' labels.
CLASSES = ["plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def load(directory, subset=0):
    """(x_train, y_train, x_test, y_test): images uint8 [N, 3, 32, 32], labels int64 [N], from
    data_batch_1 .. 5 and test_batch in directory; the first subset training images when given.
    A missing or damaged file raises ember.data.DataNotFoundError or DataFormatError."""
    x_train, y_train = ember.data.load_cifar10(directory, train=True)
    x_test, y_test = ember.data.load_cifar10(directory, train=False)
    if subset:
        x_train, y_train = x_train[:subset], y_train[:subset]
    return x_train, y_train, x_test, y_test


def channel_stats(images):
    """The mean and standard deviation of each channel of uint8 images [N, 3, H, W], scaled to
    [0, 1]: two float32 arrays [3]."""
    x = images.astype(np.float32) / 255
    return x.mean(axis=(0, 2, 3)), x.std(axis=(0, 2, 3))


class Normalize(nn.Module):
    """uint8 pixels [N, C, H, W] -> (x / 255 - mean) / std per channel, float32."""

    def __init__(self, mean, std):
        super().__init__()
        shape = (1, -1, 1, 1)  # [1, C, 1, 1]: broadcasts over [N, C, H, W]
        self.register_buffer("mean", ember.tensor(np.reshape(mean, shape).astype(np.float32)))
        self.register_buffer("std", ember.tensor(np.reshape(std, shape).astype(np.float32)))

    def forward(self, x):
        return (x.float() / 255 - self.mean) / self.std


def random_crop_flip(x, pad=4):
    """Pads x [N, C, H, W] with pad zeros on each side, then takes from every image a crop of
    H x W at a random offset and mirrors it left-right with probability 1/2. The offsets and
    flips come from ember's generator (ember.manual_seed fixes them). Two gathers do it all: one
    picks each image's rows, the other its columns, read backwards for a flipped image."""
    n, c, h, w = x.shape
    device = x.device
    offsets = ember.randint(0, 2 * pad + 1, (n, 2), device=device)  # [N, 2]: top, left
    flip = ember.rand(n, 1, device=device) < 0.5  # [N, 1]
    rows = offsets[:, 0:1] + ember.arange(h, device=device)  # [N, H]
    j = ember.arange(w, device=device)  # [W]
    cols = offsets[:, 1:2] + ember.where(flip, w - 1 - j, j)  # [N, W]
    padded = ember.pad(x, (pad, pad, pad, pad))  # [N, C, H + 2 pad, W + 2 pad]
    rows = ember.broadcast_to(rows[:, None, :, None], (n, c, h, w + 2 * pad))
    x = ember.gather(padded, 2, rows)  # [N, C, H, W + 2 pad]
    cols = ember.broadcast_to(cols[:, None, None, :], (n, c, h, w))
    return ember.gather(x, 3, cols)  # [N, C, H, W]


class RandomCropFlip(nn.Module):
    """random_crop_flip in training mode; the identity in eval mode."""

    def __init__(self, pad=4):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        return random_crop_flip(x, self.pad) if self.training else x

    def extra_repr(self):
        return f"pad={self.pad}"
