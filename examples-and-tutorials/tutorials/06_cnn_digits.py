# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 6 · A CNN on the digits
#
# What a convolution computes (by hand, with NumPy loops, on a tiny input) against
# `ember.conv2d`; what batch norm and max pooling do to a feature map; then the small CNN of
# `python/train_digits.py` trained for a few epochs, and the filters it learned.

# %%
import check
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember
from ember import nn, optim
from ember.data import DataLoader, TensorDataset

device = "cuda" if ember.cuda.is_available() else "cpu"
ember.manual_seed(0)
rng = np.random.default_rng(0)

# %% [markdown]
# ## Convolution by hand
# A conv layer slides each of its `O` filters (`C × kH × kW` numbers) over the input and takes,
# at every position, the dot product of the filter with the patch under it, plus a bias:
#
# $$y[n, o, i, j] = b[o] + \sum_{c, u, v} x[n, c, i + u, j + v]\, w[o, c, u, v]$$
#
# (deep-learning libraries call this cross-correlation "convolution": the filter is not
# flipped). Below, four nested loops (over the images `n`, the filters `o`, the output rows `i`
# and columns `j`) and, inside them, NumPy's sum over the patch (`c`, `u`, `v`), checked
# against Ember's kernel:

# %%
x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)  # [N, C, H, W]
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)  # [O, C, kH, kW]
b = rng.standard_normal(4).astype(np.float32)  # [O]

n_, c_, h, wd = x.shape
o_, _, kh, kw = w.shape
by_hand = np.zeros((n_, o_, h - kh + 1, wd - kw + 1), np.float32)  # [2, 4, 4, 3]
for n in range(n_):
    for o in range(o_):
        for i in range(h - kh + 1):
            for j in range(wd - kw + 1):
                by_hand[n, o, i, j] = b[o] + np.sum(x[n, :, i:i + kh, j:j + kw] * w[o])

by_ember = ember.conv2d(ember.tensor(x), ember.tensor(w), ember.tensor(b)).numpy()
print("output shape", by_ember.shape, "max difference", np.abs(by_hand - by_ember).max())

# %% [markdown]
# `padding` adds zeros around the input, `stride` skips positions: the output is
# $\lfloor (H + 2p - k) / s \rfloor + 1$ high.

# %%
print(ember.conv2d(ember.tensor(x), ember.tensor(w), padding=1).shape)
print(ember.conv2d(ember.tensor(x), ember.tensor(w), stride=2, padding=1).shape)

# %% [markdown]
# ## Batch norm and pooling
# `BatchNorm2d` normalises every channel over the batch and the positions to mean 0 and
# variance 1 (then scales and shifts by learned weights); `MaxPool2d(2)` keeps the largest of
# every 2 × 2 block, halving height and width.

# %%
features = ember.tensor(rng.standard_normal((8, 2, 6, 6)).astype(np.float32) * 5 + 3)
normed = nn.BatchNorm2d(2)(features)  # training mode: the batch's statistics
per_channel = normed.detach().numpy().transpose(1, 0, 2, 3).reshape(2, -1)
print("before: mean", features.mean().item(), " after: per-channel mean",
      per_channel.mean(1).round(4), "std", per_channel.std(1).round(4))

block = ember.arange(16.0).reshape(1, 1, 4, 4)
print(block[0, 0])
print(nn.MaxPool2d(2)(block)[0, 0])

# %% [markdown]
# ## The CNN, trained
# The digits are resized from 8 × 8 to 28 × 28 here (bilinear, in NumPy) as in
# `python/train_digits.py`; three epochs already reach about 97 %.

# %%
def resize(images, size):
    """Bilinear resize of [N, H, W] to [N, size, size], sampling at pixel centres."""
    src = images.shape[1]
    pos = np.clip((np.arange(size) + 0.5) * src / size - 0.5, 0, src - 1)
    lo = np.floor(pos).astype(int)
    hi, frac = np.minimum(lo + 1, src - 1), (pos - lo).astype(np.float32)
    rows = images[:, lo] * (1 - frac)[:, None] + images[:, hi] * frac[:, None]
    return rows[:, :, lo] * (1 - frac) + rows[:, :, hi] * frac


digits = load_digits()
images = resize(digits.images.astype(np.float32) / 16, 28)[:, None]  # [1797, 1, 28, 28]
x_train, x_test, y_train, y_test = train_test_split(
    images, digits.target, test_size=0.2, stratify=digits.target, random_state=0)
mean, std = x_train.mean(), x_train.std()
x_train, x_test = (x_train - mean) / std, (x_test - mean) / std

model = nn.Sequential(
    nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),  # -> [N, 16, 13, 13]
    nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),  # -> [N, 32, 5, 5]
    nn.Flatten(), nn.Linear(800, 10),  # -> [N, 10]
).to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
loader = DataLoader(TensorDataset(x_train, y_train.astype(np.int64)), batch_size=32,
                    shuffle=True)

for epoch in range(1, 4):
    model.train()
    losses = []
    for xb, yb in loader:
        loss = loss_fn(model(xb.to(device)), yb.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with ember.no_grad():
        predicted = model(ember.tensor(x_test).to(device)).argmax(1).cpu().numpy()
    # The mean over the epoch's batches: one batch's loss jumps up and down with its images.
    print(f"epoch {epoch}: train loss {np.mean(losses):.4f} (epoch mean), test accuracy "
          f"{np.mean(predicted == y_test):.2%}")

# %% [markdown]
# ## What the first layer learned
# The 16 filters of the first conv layer (3 × 3 each), and what they make of one digit. The
# filters share one colour range, symmetric about zero, so white is a weight of 0, red a
# negative weight and blue a positive one, equally strong colours equally large weights.

# %%
filters = model[0].weight.detach().cpu().numpy()[:, 0]  # [16, 3, 3]
fig, axes = plt.subplots(2, 16, figsize=(14, 2.2))
with ember.no_grad():
    maps = model[:3](ember.tensor(x_test[:1]).to(device)).cpu().numpy()[0]  # [16, 26, 26]
limit = np.abs(filters).max()
for k in range(16):
    shown = axes[0, k].imshow(filters[k], cmap="RdBu", vmin=-limit, vmax=limit)
    axes[1, k].imshow(maps[k], cmap="gray")
for ax in axes.flat:
    ax.axis("off")
fig.colorbar(shown, ax=axes[0].tolist(), shrink=0.8, label="weight")
plt.show()

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `conv_output_size(size, kernel, stride, padding, dilation)`: the height of a
# convolution's output. With dilation $d$ a kernel's taps are $d$ apart, so it covers
# $d (k - 1) + 1$ input rows. The check compares with `ember.conv2d`.

# %%
def conv_output_size(size, kernel, stride=1, padding=0, dilation=1):
    return size - kernel + 1


check.cnn_1(conv_output_size)

# %% [markdown]
# **2.** Write `max_pool(x, k)` in NumPy: the maximum of every k × k window of a
# `[N, C, H, W]` array, windows k apart, dropping rows and columns that do not fill a window
# (as `MaxPool2d(k)` does). Hint: a reshape to `[N, C, H // k, k, W // k, k]` needs no loop.

# %%
def max_pool(x, k):
    return x[:, :, ::k, ::k]


check.cnn_2(max_pool)
