"""Answers to the tutorials' exercises, one per check of check.py (same names). The tests run
each through its check, so an exercise whose check or answer went stale fails there. Try the
exercises before reading on."""

import math
import re

import numpy as np

import ember

# ---- 1 · tensors ----


def tensors_1(shape):
    strides, step = [], 1
    for size in reversed(shape):  # the last dim is adjacent in memory
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def tensors_2(x):
    return x[:, -1]  # basic indexing makes a view


# ---- 2 · backprop from scratch ----


class Value:
    """The notebook's scalar Value with tanh() added."""

    def __init__(self, data, parents=()):
        self.data = float(data)
        self.grad = 0.0
        self.parents = parents
        self.backward_step = lambda: None

    def _make(self, data, parents, local_grads):
        """A result of this op, whose backward step adds local_grad * out.grad to each parent."""
        out = Value(data, parents)

        def backward_step():
            for parent, local in zip(parents, local_grads):
                parent.grad += local * out.grad

        out.backward_step = backward_step
        return out

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self._make(self.data + other.data, (self, other), (1.0, 1.0))

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self._make(self.data * other.data, (self, other), (other.data, self.data))

    def exp(self):
        e = math.exp(self.data)
        return self._make(e, (self,), (e,))

    def tanh(self):
        t = math.tanh(self.data)
        return self._make(t, (self,), (1 - t * t,))

    __radd__ = __add__
    __rmul__ = __mul__

    def backward(self):
        order, seen = [], set()

        def visit(v):
            if id(v) not in seen:
                seen.add(id(v))
                for p in v.parents:
                    visit(p)
                order.append(v)

        visit(self)
        self.grad = 1.0
        for v in reversed(order):
            v.backward_step()


backprop_1 = Value


def backprop_2(w, grad_fn, steps, lr=0.01, alpha=0.99, eps=1e-8):
    w = np.array(w, dtype=np.float64)
    square = np.zeros_like(w)
    for _ in range(steps):
        g = grad_fn(w)
        square = alpha * square + (1 - alpha) * g * g
        w = w - lr * g / (np.sqrt(square) + eps)
    return w


# ---- 3 · automatic differentiation ----


def autodiff_1(f, x):
    t = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    (first,) = ember.autograd.grad(f(t), t, create_graph=True)
    (second,) = ember.autograd.grad(first, t)
    return second.item()


def autodiff_2(f, x, h):
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(ember.tensor(x + step)).item() - f(ember.tensor(x - step)).item()) / (2 * h)
    return grad


def autodiff_3(text):
    # "param %1:f32[4,3]  0.weight": the header lines of the parameters
    return re.findall(r"^param %\d+:\S+  (\S+)$", text, flags=re.MULTILINE)


# ---- 4 · kernels ----


def kernels_1(m, k, n, bytes_per_element=4):
    flops = 2 * m * k * n  # a multiply and an add per term of each of m * n dot products
    return flops / (bytes_per_element * (m * k + k * n + m * n))  # read A and B, write C


def kernels_2(intensity, bandwidth, peak):
    return np.minimum(bandwidth * np.asarray(intensity), peak)


# ---- 5 · an MLP ----


def mlp_1(logits, labels):
    return (logits.argmax(1) == labels).float().mean().item()


def mlp_2(true, predicted, classes):
    counts = np.zeros((classes, classes), np.int64)
    np.add.at(counts, (np.asarray(true, np.int64), np.asarray(predicted, np.int64)), 1)
    return counts


# ---- 6 · a CNN ----


def cnn_1(size, kernel, stride=1, padding=0, dilation=1):
    span = dilation * (kernel - 1) + 1  # the input a dilated kernel covers
    return (size + 2 * padding - span) // stride + 1


def cnn_2(x, k):
    n, c, h, w = x.shape
    ho, wo = h // k, w // k  # incomplete windows at the edges are dropped
    windows = x[:, :, :ho * k, :wo * k].reshape(n, c, ho, k, wo, k)
    return windows.max(axis=(3, 5))


# ---- 7 · memory ----


def memory_1(snapshot):
    allocated = cached = 0
    for segment in snapshot:
        for block in segment["blocks"]:
            if block["state"] == "allocated":
                allocated += block["size"]
            else:
                cached += block["size"]
    return allocated, cached


def memory_2(model, loss_fn, x, y, micro):
    parts = len(x) // micro
    for xb, yb in zip(x.split(micro), y.split(micro)):
        (loss_fn(model(xb), yb) / parts).backward()


# ---- 8 · compiled steps ----


def compiled_1(buffers):
    nodes = {k for _, first, last in buffers for k in range(first, last + 1)}
    return max((sum(size for size, first, last in buffers if first <= k <= last)
                for k in nodes), default=0)


def compiled_2(model, optimizer, loss_fn):
    @ember.compile
    def step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


# ---- 9 · attention ----


def attention_1(L, S):
    return ember.tril(ember.ones(L, S)).bool()


def attention_2(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return scores.softmax(-1) @ v
