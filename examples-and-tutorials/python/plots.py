"""The pictures the examples write: training curves, a confusion matrix and a grid of the
misclassified test images (matplotlib, without a display)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)
import numpy as np  # noqa: E402


def curves(history, path):
    """Train loss and test accuracy per epoch, side by side."""
    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(epochs, history["train_loss"], marker="o")
    left.set(xlabel="epoch", ylabel="train loss", yscale="log", title="loss")
    right.plot(epochs, np.array(history["test_accuracy"]) * 100, marker="o", color="C1")
    right.set(xlabel="epoch", ylabel="test accuracy (%)", title="accuracy")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def confusion_matrix(labels, predictions, num_classes=10):
    """counts[true, predicted] (NumPy)."""
    counts = np.zeros((num_classes, num_classes), np.int64)
    np.add.at(counts, (labels, predictions), 1)
    return counts


def confusion(labels, predictions, path, class_names=None):
    """The confusion matrix as a heat map with the counts written in."""
    counts = confusion_matrix(labels, predictions)
    names = class_names or [str(i) for i in range(len(counts))]
    fig, ax = plt.subplots(figsize=(5.5, 5))
    ax.imshow(counts, cmap="Blues")
    for (i, j), c in np.ndenumerate(counts):
        if c:
            ax.text(j, i, c, ha="center", va="center",
                    color="white" if c > counts.max() / 2 else "black", fontsize=8)
    ticks = np.arange(len(names))
    ax.set(xticks=ticks, yticks=ticks, xticklabels=names, yticklabels=names,
           xlabel="predicted", ylabel="true", title="confusion matrix (test set)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def misclassified(images, labels, predictions, path, limit=40, class_names=None):
    """Up to limit misclassified images [N, 1, H, W] (or [N, H, W]; [N, 3, H, W] in colour),
    titled 'true -> predicted'."""
    wrong = np.flatnonzero(labels != predictions)[:limit]
    names = class_names or [str(i) for i in range(10)]
    cols = 10
    rows = max(1, -(-len(wrong) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 1.1, rows * 1.3), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, wrong):
        if images.ndim == 4 and images.shape[1] == 3:
            ax.imshow(images[i].transpose(1, 2, 0))  # [H, W, 3], uint8 or in [0, 1]
        else:
            ax.imshow(images[i].reshape(images.shape[-2:]), cmap="gray_r")
        ax.set_title(f"{names[labels[i]]}->{names[predictions[i]]}", fontsize=8)
    fig.suptitle(f"{len(np.flatnonzero(labels != predictions))} misclassified test images "
                 "(true->predicted)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
