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
# # 7 · Compiled mode
#
# In eager mode every op is dispatched from Python, every buffer is allocated when the op runs
# and every saved value lives the eager way. `ember.compile` traces a whole training step once —
# forward, loss, the backward graph, the optimizer's update — into one static graph, runs a few
# *passes* over it, plans its memory, and replays it from C++ on later calls. This tutorial
# traces a step, reads what each pass did, draws the memory plan and plots what
# rematerialisation (recomputing values instead of keeping them) trades.

# %%
import re
import time

import check
import matplotlib.pyplot as plt

import ember
from ember import _core, nn

ember.manual_seed(0)
KiB = 2**10

# %% [markdown]
# ## Trace a step
# The first call runs the step eagerly while recording everything it does; later calls replay.

# %%
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                      nn.Linear(128, 10))
optimizer = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()


def train_step(x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


x, y = ember.randn(32, 64), ember.randint(0, 10, (32,))
raw = ember.compile(train_step, optimize=False)  # the traced graph as it is
step = ember.compile(train_step)                 # the same, after the passes
print("eager-traced loss", raw(x, y).item(), "compiled loss", step(x, y).item())
print("replayed:", step(x, y).item())

# %% [markdown]
# ## The graph before and after the passes
# Each pass reads the graph and writes a new one: dead-code elimination, common subexpressions,
# constant folding, in-place reuse; then the memory plan. `explain()` says what each did.

# %%
before, after = raw.graph(), step.graph()
print(f"traced: {len(before.splitlines())} lines; after the passes: {len(after.splitlines())}")
print(after)

# %%
print(step.explain())

# %% [markdown]
# ## The memory plan as a picture
# Every buffer the step allocates lives from the node that makes it to the last node that reads
# it. The planner places each at an offset of one arena so that buffers alive at the same time
# never overlap. Here the intervals are read from the compiled graph's text (outputs only), and
# placed by the same planner (`_core._plan_intervals`).

# %%
DTYPE_BYTES = {"f32": 4, "f64": 8, "i64": 8, "i32": 4, "bool": 1, "u8": 1, "f16": 2, "bf16": 2}
line_re = re.compile(r"^%(\d+):(\w+)\[([\d,]*)\] = (\w+)\((.*?)\)")
defined, sizes, uses = {}, {}, {}
nodes = [m for m in map(line_re.match, after.splitlines()) if m]
for k, m in enumerate(nodes):
    value, dtype, shape, op, args = m.groups()
    numel = 1
    for d in filter(None, shape.split(",")):
        numel *= int(d)
    defined[value], sizes[value] = k, numel * DTYPE_BYTES.get(dtype, 4)
    for used in re.findall(r"%(\d+)", args):
        uses[used] = k
values = [v for v in defined if v in uses]  # values read by a later node
starts = [defined[v] for v in values]
ends = [max(uses[v], defined[v]) for v in values]
plan = _core._plan_intervals([sizes[v] for v in values], starts, ends)

fig, ax = plt.subplots(figsize=(10, 4))
for v, s, e, off in zip(values, starts, ends, plan["offsets"]):
    ax.broken_barh([(s, e - s + 1)], (off / KiB, sizes[v] / KiB), alpha=0.7)
ax.axhline(plan["planned_peak"] / KiB, color="k", ls="--", label="planned peak")
ax.axhline(plan["naive_peak"] / KiB, color="r", ls=":", label="naive peak (no reuse)")
ax.set_xlabel("node")
ax.set_ylabel("arena offset (KiB)")
ax.set_title("each buffer: a bar from the node making it to its last read")
ax.legend()
plt.show()
print({k: f"{v / KiB:.1f} KiB" for k, v in plan.items() if k != "offsets"})

# %% [markdown]
# Eager mode's peak for the same step, from the allocator's statistics, beside the compiled
# step's (whose arena is one block of the same allocator):

# %%
def peak_of(fn):
    fn(x, y)
    ember.reset_peak_memory_stats()
    before = ember.memory_allocated()
    fn(x, y)
    return ember.max_memory_allocated() - before


eager_peak, compiled_peak = peak_of(train_step), peak_of(step)
plt.bar(["eager", "compiled"], [eager_peak / KiB, compiled_peak / KiB])
plt.ylabel("peak above the step's start (KiB)")
plt.show()

# %% [markdown]
# ## Rematerialisation: memory against time
# With `memory_budget=BYTES`, the planner recomputes forward values in the backward pass
# (linear then ReLU, from the last value still alive) until the plan fits. Smaller budgets cost
# more recomputation. A budget that cannot be met is an error naming the smallest one that can.

# %%
deep = nn.Sequential(*[m for _ in range(12) for m in (nn.Linear(256, 256), nn.ReLU())])
deep_opt = ember.optim.SGD(deep.parameters(), lr=1e-3)
xs = ember.randn(256, 256)


def deep_step(x):
    deep_opt.zero_grad()
    loss = (deep(x) ** 2).mean()
    loss.backward()
    deep_opt.step()
    return loss


def arena(compiled):
    found = re.search(r"planned peak (?:[\d.]+ [KM]iB \()?(\d+) B\)? \(the arena\)",
                      compiled.explain())
    return int(found.group(1))


def timed(compiled, calls=3):
    compiled(xs)
    start = time.perf_counter()
    for _ in range(calls):
        compiled(xs)
    return (time.perf_counter() - start) / calls * 1e3


free = ember.compile(deep_step)
free(xs)
full = arena(free)
points, tightest = [(full, timed(free))], free
for fraction in (0.9, 0.8, 0.7, 0.5):
    candidate = ember.compile(deep_step, memory_budget=int(full * fraction))
    try:
        candidate(xs)
    except ember.ValueError as e:  # the budget cannot be met: the error names the smallest
        print(e)
        continue
    tightest = candidate
    points.append((arena(candidate), timed(candidate)))
plt.plot([p[0] / KiB for p in points], [p[1] for p in points], "o-")
plt.xlabel("planned arena (KiB)")
plt.ylabel("step time (ms)")
plt.title("rematerialisation: less memory, more time")
plt.show()
print("\n".join(line for line in tightest.explain().splitlines() if "recompute" in line))

# %% [markdown]
# ## Fused kernels
# The fusion pass groups chains of elementwise ops (arithmetic, activations and their backward
# ops, `where`, `clamp`, casts) into one kernel each. Its C++ source is generated from the group
# and compiled when the plan is made (by the machine's C++ compiler, or NVRTC on a GPU; a disk
# cache makes the next process skip that). The kernel reads the group's inputs once and writes its
# result once, and the values in between never exist. Values read outside a group, matmuls,
# most reductions and in-place updates end a group; `explain()` lists each group and why its
# neighbours stayed out. `fuse=False` (or `EMBER_FUSION=0`) keeps the library's kernels.

# %%
w = ember.randn(256, 256) * 0.05
w.requires_grad_(True)
gate_opt = ember.optim.SGD([w], lr=1e-3)
xg = ember.randn(512, 256)


def gated_step(x):
    gate_opt.zero_grad()
    h = x @ w
    out = nn.functional.gelu(h * 0.5 + 1.0) * h.sigmoid() + h.tanh()  # one elementwise chain
    loss = (out @ w).mean()
    loss.backward()
    gate_opt.step()
    return loss


fused, unfused = ember.compile(gated_step), ember.compile(gated_step, fuse=False)
fused(xg), unfused(xg)
section = fused.explain().split("== fusion ==")[1].split("\n== ")[0]
print(section)
print(fused.source(0)[-900:])  # the end of group 0's kernel: its loop over elements


# %%
def per_call_ms(compiled, calls=5):
    compiled(xg)
    start = time.perf_counter()
    for _ in range(calls):
        compiled(xg)
    return (time.perf_counter() - start) / calls * 1e3


print(f"{fused.fused_groups} fused groups: {per_call_ms(fused):.2f} ms per step, "
      f"unfused {per_call_ms(unfused):.2f} ms")

# %% [markdown]
# A sum, mean or amax over the innermost dims may end a group: the kernel folds each row as it
# computes it, so `exp(x - c) * v` never exists as a whole. On the CPU it adds in the library's
# order, which gives the same bits as the unfused ops.

# %%
def row_sums(x, c, v):
    return ((x - c).exp() * v).sum(-1)


c, v = ember.randn(512, 1), ember.rand(256)
rows = ember.compile(row_sums)
same = bool((rows(xg, c, v) == row_sums(xg, c, v)).all())
print(next(line for line in rows.explain().splitlines() if "group 0:" in line))
print("equal to eager, bit for bit:", same)

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** The memory plan's lower bound is the most bytes live at any one node. Write
# `lower_bound(buffers)`: `buffers` is a list of `(bytes, first, last)`, a buffer made by node
# `first` and read for the last time by node `last` (so it is live at nodes `first`...`last`,
# both included); return the largest total of the bytes live at one node (0 for no buffers).

# %%
def lower_bound(buffers):
    return max((size for size, first, last in buffers), default=0)


check.compiled_1(lower_bound)

# %% [markdown]
# **2.** Write `make_step(model, optimizer, loss_fn)`: return a compiled training step
# `step(x, y)` (`ember.compile`) that runs one step of SGD on the batch and returns the loss.
# The check trains with it for a few steps and compares the parameters with eager mode's.

# %%
def make_step(model, optimizer, loss_fn):
    @ember.compile
    def step(x, y):
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


check.compiled_2(make_step)
