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
# # 2 · Backprop and optimizers from scratch
#
# Before using `backward()` and `optimizer.step()`, we write both ourselves: an automatic
# differentiation of scalars in a few dozen lines of Python, then SGD, SGD with momentum and
# Adam in NumPy. Each result is then computed again by Ember and the two are asserted equal, so
# what the library does is no longer a mystery.

# %%
import math

import check
import matplotlib.pyplot as plt
import numpy as np

import ember

# %% [markdown]
# ## A scalar that remembers how it was made
# Each `Value` holds a number (`data`), the derivative of the final result with respect to it
# (`grad`, filled in by `backward`), the values it was computed from (`parents`) and a small
# function that, given its own `grad`, adds its share to each parent's `grad` — the chain rule
# for one op. The forward value and its backward function sit side by side in each op.

# %%
class Value:
    def __init__(self, data, parents=()):
        self.data = float(data)
        self.grad = 0.0
        self.parents = parents
        self.backward_step = lambda: None  # a leaf sends nothing further back

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other))

        def backward_step():  # d(a + b)/da = 1, d(a + b)/db = 1
            self.grad += out.grad
            other.grad += out.grad

        out.backward_step = backward_step
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other))

        def backward_step():  # d(a b)/da = b, d(a b)/db = a
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out.backward_step = backward_step
        return out

    def exp(self):
        out = Value(math.exp(self.data), (self,))

        def backward_step():  # d exp(a)/da = exp(a)
            self.grad += out.data * out.grad

        out.backward_step = backward_step
        return out

    __radd__ = __add__
    __rmul__ = __mul__

    def backward(self):
        """Sets grad of every value this one was computed from to d(self)/d(value)."""
        order, seen = [], set()

        def visit(v):  # parents before children: a topological order
            if id(v) not in seen:
                seen.add(id(v))
                for p in v.parents:
                    visit(p)
                order.append(v)

        visit(self)
        self.grad = 1.0  # d(self)/d(self)
        for v in reversed(order):  # each value's grad is complete before it is passed on
            v.backward_step()


# %% [markdown]
# Why `+=` and not `=`: a value used twice (like `a` in $a \cdot a$) receives a share from each
# use, and its derivative is their **sum**. Here is $f(a, b) = a \cdot b + e^{a} \cdot a$ with
# its derivatives by hand: $\partial f / \partial a = b + e^a (1 + a)$ and
# $\partial f / \partial b = a$.

# %%
a, b = Value(0.5), Value(-1.5)
f = a * b + a.exp() * a
f.backward()
print(f"f = {f.data:.6f}   df/da = {a.grad:.6f}   df/db = {b.grad:.6f}")
print(f"by hand:       df/da = {-1.5 + math.exp(0.5) * 1.5:.6f}   df/db = {0.5:.6f}")

# %% [markdown]
# The same function in Ember, on 0-d tensors: the same numbers (Ember computes in float64 here,
# as Python's floats do).

# %%
ea = ember.tensor(0.5, dtype=ember.float64, requires_grad=True)
eb = ember.tensor(-1.5, dtype=ember.float64, requires_grad=True)
ef = ea * eb + ea.exp() * ea
ef.backward()
print(f"ember: f = {ef.item():.6f}   df/da = {ea.grad.item():.6f}   df/db = {eb.grad.item():.6f}")
assert math.isclose(ef.item(), f.data, rel_tol=1e-12)
assert math.isclose(ea.grad.item(), a.grad, rel_tol=1e-12)
assert math.isclose(eb.grad.item(), b.grad, rel_tol=1e-12)

# %% [markdown]
# Ember's `backward()` does what `Value.backward` does, with two differences: the unit is a
# tensor, not a number, and the backward steps are not Python closures but nodes of a
# *backward graph* (tutorial 3 prints it), so they can be run fast, reused and differentiated
# again.
#
# ## Optimizers by hand
# A small problem to optimise: fit $y \approx X w$ by least squares. The loss is
# $L(w) = \frac{1}{N} \lVert X w - y \rVert^2$ and its gradient, worked out by hand, is
# $\nabla L = \frac{2}{N} X^\top (X w - y)$.

# %%
rng = np.random.default_rng(0)
X = rng.standard_normal((64, 3))  # [N, 3]
y = X @ np.array([2.0, -1.0, 0.5]) + 0.1 * rng.standard_normal(64)  # [N]
w0 = np.zeros(3)


def loss_and_grad(w):
    residual = X @ w - y
    return np.mean(residual**2), 2 / len(y) * X.T @ residual


# %% [markdown]
# Three update rules, each written as PyTorch (and Ember) define them. With $g$ the gradient
# and $t$ the step number (from 1):
#
# - **SGD**: $w \leftarrow w - \eta g$.
# - **Momentum**: a velocity $v \leftarrow \mu v + g$ (the first step sets $v = g$), then
#   $w \leftarrow w - \eta v$: steps keep going in the direction they have been going.
# - **Adam**: running means of the gradient and of its square,
#   $m \leftarrow \beta_1 m + (1 - \beta_1) g$ and
#   $s \leftarrow \beta_2 s + (1 - \beta_2) g^2$, corrected for starting at zero,
#   $\hat m = m / (1 - \beta_1^t)$ and $\hat s = s / (1 - \beta_2^t)$; then
#   $w \leftarrow w - \eta \hat m / (\sqrt{\hat s} + \epsilon)$: each coordinate gets its own
#   step size.

# %%
def sgd(steps, lr=0.1):
    w, losses = w0.copy(), []
    for _ in range(steps):
        loss, g = loss_and_grad(w)
        losses.append(loss)
        w = w - lr * g
    return w, losses


def momentum(steps, lr=0.1, mu=0.9):
    w, v, losses = w0.copy(), None, []
    for _ in range(steps):
        loss, g = loss_and_grad(w)
        losses.append(loss)
        v = g if v is None else mu * v + g
        w = w - lr * v
    return w, losses


def adam(steps, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8):
    w, m, s, losses = w0.copy(), np.zeros(3), np.zeros(3), []
    for t in range(1, steps + 1):
        loss, g = loss_and_grad(w)
        losses.append(loss)
        m = beta1 * m + (1 - beta1) * g
        s = beta2 * s + (1 - beta2) * g**2
        m_hat, s_hat = m / (1 - beta1**t), s / (1 - beta2**t)
        w = w - lr * m_hat / (np.sqrt(s_hat) + eps)
    return w, losses


steps = 30
by_hand = {"SGD": sgd(steps), "momentum": momentum(steps), "Adam": adam(steps)}
for name, (w, losses) in by_hand.items():
    plt.semilogy(range(1, steps + 1), losses, marker=".", label=name)
plt.xlabel("step")
plt.ylabel("loss")
plt.legend()
plt.grid(alpha=0.3, which="both")
plt.show()
for name, (w, losses) in by_hand.items():
    print(f"{name:9s} w = {np.round(w, 4)}  final loss {losses[-1]:.5f}")

# %% [markdown]
# Momentum overshoots and comes back (the bumps of its curve); Adam moves every coordinate by
# about $\eta$ at first, whatever the size of its gradient, then slows as $\hat m$ shrinks.
#
# ## The same numbers from Ember
# The same problem with Ember's tensors: the loss is computed by ops, its gradient by
# `backward()`, and the update by `ember.optim`. Each optimizer's weights after 30 steps equal
# ours (both in float64).

# %%
def with_ember(make_optimizer, steps):
    Xt, yt = ember.tensor(X), ember.tensor(y)
    w = ember.tensor(w0, requires_grad=True)
    optimizer = make_optimizer([w])
    for _ in range(steps):
        loss = ((Xt @ w - yt) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return w.detach().numpy()


optimizers = {
    "SGD": lambda params: ember.optim.SGD(params, lr=0.1),
    "momentum": lambda params: ember.optim.SGD(params, lr=0.1, momentum=0.9),
    "Adam": lambda params: ember.optim.Adam(params, lr=0.1),
}
for name, make in optimizers.items():
    w_ember = with_ember(make, steps)
    difference = np.abs(w_ember - by_hand[name][0]).max()
    print(f"{name:9s} ember w = {np.round(w_ember, 4)}  largest difference {difference:.1e}")
    assert difference < 1e-12, name

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Give `Value` a `tanh()` method: $\tanh' (a) = 1 - \tanh^2(a)$. The check builds
# expressions with `+`, `*`, `exp` and `tanh` and compares their derivatives with finite
# differences.

# %%
def tanh(self):
    out = Value(math.tanh(self.data), (self,))

    def backward_step():
        self.grad += 0.0 * out.grad  # replace 0.0 by the derivative of tanh at self.data

    out.backward_step = backward_step
    return out


Value.tanh = tanh  # a method of every Value from now on

# %%
check.backprop_1(Value)

# %% [markdown]
# **2.** Write RMSprop (PyTorch's form, no momentum): $s \leftarrow \alpha s + (1 - \alpha)
# g^2$ starting from $s = 0$, then $w \leftarrow w - \eta g / (\sqrt{s} + \epsilon)$. Your
# function gets the starting weights, a function giving the gradient at `w`, and the options;
# the check compares the weights after each step with `ember.optim.RMSprop`'s.

# %%
def rmsprop(w, grad_fn, steps, lr=0.01, alpha=0.99, eps=1e-8):
    w = np.array(w, dtype=np.float64)
    for _ in range(steps):
        g = grad_fn(w)
        w = w - lr * g  # replace by RMSprop's update
    return w


# %%
check.backprop_2(rmsprop)
