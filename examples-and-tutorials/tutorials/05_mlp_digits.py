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
# # 5 · Training an MLP on the digits
#
# The whole training recipe on a small, real data set: scikit-learn's 1 797 handwritten digits
# (8 × 8 pixels, values 0–16, bundled with scikit-learn). Data loader, model, loss, optimizer,
# training loop, curves, confusion matrix and the examples it gets wrong. The same steps, with a
# CNN and a command line, are `python/train_digits.py`.

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

# %% [markdown]
# ## The data
# Three parts, each split fixed and stratified (every digit in the same proportion): 20 % of
# the images are the **test** set, looked at once, at the very end; 15 % of the rest are the
# **validation** set, which we watch during training to choose things (how many epochs, the
# learning rate); the model learns from the remaining **training** set. Choosing by the test
# set would make its accuracy an optimistic estimate: it would no longer be unseen data.
# Pixels are scaled to [0, 1], then standardised with the *training* set's mean and standard
# deviation (the other sets must not leak into training).

# %%
digits = load_digits()
images = digits.images.astype(np.float32) / 16  # [1797, 8, 8]
x_rest, x_test, y_rest, y_test = train_test_split(
    images, digits.target, test_size=0.2, stratify=digits.target, random_state=0)
x_train, x_val, y_train, y_val = train_test_split(
    x_rest, y_rest, test_size=0.15, stratify=y_rest, random_state=0)
mean, std = x_train.mean(), x_train.std()
x_train, x_val, x_test = (x_train - mean) / std, (x_val - mean) / std, (x_test - mean) / std
print("train", x_train.shape, "validation", x_val.shape, "test", x_test.shape)

fig, axes = plt.subplots(1, 10, figsize=(10, 1.3))
for ax, img, label in zip(axes, x_train, y_train):
    ax.imshow(img, cmap="gray_r")
    ax.set_title(label)
    ax.axis("off")
plt.show()

# %% [markdown]
# A `TensorDataset` pairs images with labels; the `DataLoader` shuffles them each epoch (from
# ember's seeded generator) and stacks them into batches.

# %%
train_loader = DataLoader(TensorDataset(x_train, y_train.astype(np.int64)), batch_size=32,
                          shuffle=True)
images_batch, labels_batch = next(iter(train_loader))
print("a batch:", images_batch.shape, images_batch.dtype, labels_batch.shape, labels_batch.dtype)

# %% [markdown]
# ## Model, loss, optimizer
# Flatten 8 × 8 into 64 inputs, two hidden layers with ReLU, 10 outputs (one score, a *logit*,
# per class). `CrossEntropyLoss` takes logits and class indices.

# %%
model = nn.Sequential(
    nn.Flatten(),  # [N, 8, 8] -> [N, 64]
    nn.Linear(64, 128), nn.ReLU(),
    nn.Linear(128, 64), nn.ReLU(),
    nn.Linear(64, 10),  # -> [N, 10]
).to(device)
print(model)
loss_fn = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=3e-3)

# %% [markdown]
# ## The training loop
# Per batch: forward, loss, clear old gradients, backward, update. After each epoch the model
# is evaluated on the validation set in `eval()` mode and without recording history.

# %%
def predict(x):
    model.eval()
    with ember.no_grad():
        return model(ember.tensor(x).to(device)).argmax(1).cpu().numpy()


epochs = range(1, 16)
history = {"loss": [], "accuracy": []}
for epoch in epochs:
    model.train()
    losses = []
    for xb, yb in train_loader:
        loss = loss_fn(model(xb.to(device)), yb.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    history["loss"].append(np.mean(losses))
    history["accuracy"].append(np.mean(predict(x_val) == y_val))
    print(f"epoch {epoch:2d}  train loss {history['loss'][-1]:.4f}  "
          f"validation accuracy {history['accuracy'][-1]:.2%}")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
left.plot(epochs, history["loss"], marker="o")
left.set(xlabel="epoch", ylabel="train loss (epoch mean)", yscale="log", xticks=epochs[::2])
right.plot(epochs, np.array(history["accuracy"]) * 100, marker="o", color="C1")
right.set(xlabel="epoch", ylabel="validation accuracy (%)", xticks=epochs[::2])
plt.show()

# %% [markdown]
# ## On the test set, once
# Training is over and nothing more will be chosen, so the test set is used now, once. The
# confusion matrix counts, for each true class (row), what the model predicted (column).

# %%
predictions = predict(x_test)
print(f"test accuracy {np.mean(predictions == y_test):.2%}")
confusion = np.zeros((10, 10), np.int64)
np.add.at(confusion, (y_test, predictions), 1)
plt.imshow(confusion, cmap="Blues")
for (i, j), c in np.ndenumerate(confusion):
    if c:
        plt.text(j, i, c, ha="center", va="center", fontsize=7,
                 color="white" if c > confusion.max() / 2 else "black")
plt.xlabel("predicted")
plt.ylabel("true")
plt.xticks(range(10))
plt.yticks(range(10))
plt.show()

# %%
wrong = np.flatnonzero(predictions != y_test)
print(f"{len(wrong)} of {len(y_test)} test digits misclassified")
fig, axes = plt.subplots(1, max(len(wrong[:10]), 1), figsize=(10, 1.5), squeeze=False)
for ax in axes.flat:
    ax.axis("off")
for ax, i in zip(axes.flat, wrong[:10]):
    ax.imshow(x_test[i], cmap="gray_r")
    ax.set_title(f"{y_test[i]}→{predictions[i]}")
plt.show()

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `accuracy(logits, labels)` with Ember's ops: the fraction of rows of `logits`
# (`[N, classes]`) whose largest entry is at the row's label (`[N]`, int64), as a float.

# %%
def accuracy(logits, labels):
    return (logits.argmax(1) == labels).float().sum().item()


check.mlp_1(accuracy)

# %% [markdown]
# **2.** Write `confusion_matrix(true, predicted, classes)` in NumPy: a `[classes, classes]`
# array whose entry `[i, j]` counts the examples of class `i` predicted as `j`.

# %%
def confusion_matrix(true, predicted, classes):
    return np.zeros((classes, classes), np.int64)


check.mlp_2(confusion_matrix)
