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
# # 3 · Automatic differentiation
#
# Every op on a tensor with `requires_grad=True` runs at once *and* is recorded. `backward()`
# asks the engine for the **backward graph** of what was recorded — built from one gradient rule
# per op, each of which only adds nodes — and runs it. Because the backward graph is made of
# ordinary ops, it can be printed, and differentiated again.

# %%
import shutil

import check
import numpy as np

import ember
from ember import nn

device = "cuda" if ember.cuda.is_available() else "cpu"

# %% [markdown]
# ## A small function and its graphs
# $f(x, w) = \sum \tanh(x \cdot w) \cdot x$

# %%
x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True, device=device)
w = ember.tensor([1.5, 0.3, -0.7], requires_grad=True, device=device)
f = ((x * w).tanh() * x).sum()
print("f =", f.item())

# %% [markdown]
# `f.graph()` prints the forward graph (one typed line per node, `%id:dtype[shape] = op(...)`)
# and then the backward graph. The leaves come first: `param` for those that require grad.
# In the backward part, the line where a rule's result for one input is made says so
# (`# d/d %3 via tanh`: part of the gradient of `%3`, made by the rule of `tanh`); the lines a
# rule needs on the way say nothing; and each final gradient is marked (`# grad of %0`).
# `backward()` frees the values the graph saved, but not its structure: it still prints.

# %%
graph = f.graph()
f.backward()
print(f.graph())
print("df/dx =", x.grad)
print("df/dw =", w.grad)

# %% [markdown]
# With Graphviz's `dot` installed the same graph is drawn (backward nodes shaded), in the
# format the file's extension names (`.svg`, `.png`, `.pdf`); without it, `to_dot()` still
# gives the DOT text.

# %%
if shutil.which("dot"):
    from IPython.display import SVG, display

    display(SVG(graph.render("autodiff_graph.svg")))
else:
    print(graph.to_dot()[:400], "...")

# %% [markdown]
# ## A model's graph
# A module names its parameters and buffers (`0.weight`, as in `named_parameters()`), and the
# printed graph uses those names, so the gradient of each weight can be found by name.

# %%
ember.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
loss = model(ember.randn(5, 3, device=device)).square().mean()
print(loss.graph())

# %% [markdown]
# ## Checking a gradient against finite differences
# The derivative along each coordinate is close to $(f(x + h e_i) - f(x - h e_i)) / 2h$. In
# float64 with $h = 10^{-6}$ the two agree to about $10^{-9}$.

# %%
def fn(x, w):
    return ((x * w).tanh() * x).sum()


x64 = x.detach().double().requires_grad_()
w64 = w.detach().double()
fn(x64, w64).backward()
h = 1e-6
numeric = []
for i in range(3):
    step = ember.zeros(3, dtype=ember.float64, device=device)
    step[i] = h
    with ember.no_grad():
        numeric.append((fn(x64 + step, w64) - fn(x64 - step, w64)).item() / (2 * h))
print("autodiff   ", x64.grad.cpu().numpy())
print("differences", np.array(numeric))
print("max error  ", np.abs(x64.grad.cpu().numpy() - numeric).max())

# %% [markdown]
# ## A second derivative
# `ember.autograd.grad(..., create_graph=True)` records the backward pass itself, so its result
# can be differentiated again. For $g(x) = x^3$: $g' = 3x^2$ and $g'' = 6x$.

# %%
x = ember.tensor(2.0, requires_grad=True, device=device)
g = x * x * x
(dg,) = ember.autograd.grad(g, x, create_graph=True)
(d2g,) = ember.autograd.grad(dg, x)
print(f"g'(2) = {dg.item()} (3x^2 = 12),  g''(2) = {d2g.item()} (6x = 12)")

# %% [markdown]
# ## The "value used twice" trap
# In $y = x \cdot x$ the value $x$ is used twice; its gradient is the **sum** of what each use
# sends back, $x + x = 2x$. A hand-written tape that *assigns* gradients instead of adding them
# gets $x$ — the classic bug. Ember's driver does the summing, and the backward graph shows it
# as an `add` node labelled "sum over its 2 uses".

# %%
x = ember.tensor(3.0, requires_grad=True, device=device)
y = x * x
print(y.graph())
y.backward()
print("dy/dx =", x.grad.item(), "(2x = 6)")

# %% [markdown]
# The same rule has a second face in user code: `.grad` **accumulates** across `backward()`
# calls, which is what gradient accumulation wants and what a training loop that forgets
# `optimizer.zero_grad()` gets by accident.

# %%
x = ember.tensor(3.0, requires_grad=True, device=device)
for step in range(3):
    (x * x).backward()
    print(f"after backward #{step + 1}: x.grad = {x.grad.item()}")
x.grad = None  # what zero_grad() does
(x * x).backward()
print("after clearing:", x.grad.item())

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `second_derivative(f, x)`: $f''(x)$ at a number `x`, for `f` written with
# Ember's ops, using `ember.autograd.grad` twice.

# %%
def second_derivative(f, x):
    t = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    (first,) = ember.autograd.grad(f(t), t)
    return first.item()  # the first derivative: not yet the second


check.autodiff_1(second_derivative)

# %% [markdown]
# **2.** Write `numeric_gradient(f, x, h)`: the gradient of a scalar function `f` of a tensor
# at a float64 NumPy array `x`, by central differences with step `h` (as above, but for any
# `f`). The check compares it with `backward()`.

# %%
def numeric_gradient(f, x, h):
    return np.zeros_like(x)


check.autodiff_2(numeric_gradient)

# %% [markdown]
# **3.** Reading a graph: write `parameter_names(text)`, the names of the parameters that a
# printed graph lists at its top, in order (a model's buffers are listed too, as `buffer`,
# and are not parameters).

# %%
def parameter_names(text):
    return [line.split()[-1] for line in text.splitlines() if line.startswith("input")]


check.autodiff_3(parameter_names)
