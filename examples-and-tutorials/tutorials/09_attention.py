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
# # 8 · Attention
#
# Attention lets every position of a sequence read from every other: each position asks a
# *query*, every position offers a *key* and a *value*, and each query receives the values
# weighted by how well its key matches. This tutorial writes it from primitive ops, draws the
# causal mask a language model uses, checks that Ember's fused
# `F.scaled_dot_product_attention` gives the same numbers, measures the memory each needs as the
# sequence grows, and trains a tiny character-level GPT to write a few lines.

# %%
import math

import check
import matplotlib.pyplot as plt
import numpy as np

import ember
import ember.nn.functional as F
from ember import nn

device = "cuda" if ember.cuda.is_available() else "cpu"
ember.manual_seed(0)
MiB = 2**20

# %% [markdown]
# ## Attention from primitives
# For queries `q [B, H, T, D]` (batch, heads, positions, channels per head), keys `k` and values
# `v` of the same shape:
#
# $$\mathrm{attention}(q, k, v) = \mathrm{softmax}\!\left(\frac{q k^\top}{\sqrt{D}} + M\right) v$$
#
# The scores `q kᵀ` are a `[T, T]` matrix per head: row `i` says how much position `i` attends
# to each position. Dividing by √D keeps their spread independent of D, so the softmax does not
# saturate. `M` is a mask: −∞ where a position may not look.

# %%
def attention(q, k, v, causal=False):
    T, D = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # [B, H, T, T]
    if causal:  # position i sees positions 0..i only: the future is masked out
        future = ember.triu(ember.ones(T, T, dtype=ember.bool, device=q.device), 1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores, -1)  # each row sums to 1
    return weights @ v, weights


B, H, T, D = 2, 4, 12, 16
q, k, v = (ember.randn(B, H, T, D, device=device) for _ in range(3))
out, weights = attention(q, k, v, causal=True)
print(out.shape, weights.sum(-1)[0, 0])

# %% [markdown]
# ## The causal mask as a picture
# A language model predicts position `i + 1` from positions `0..i`, so position `i` must not
# attend to anything after it: the mask is upper-triangular, and the attention weights are
# lower-triangular. Left: the mask (dark: hidden). Right: the weights of head 0.

# %%
mask = ember.triu(ember.ones(T, T, dtype=ember.bool), 1).numpy()
fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8))
left.imshow(mask, cmap="Greys")
left.set(title="causal mask (True = hidden)", xlabel="key position", ylabel="query position")
im = right.imshow(weights[0, 0].cpu().numpy(), cmap="viridis")
right.set(title="attention weights, head 0", xlabel="key position")
fig.colorbar(im, ax=right, shrink=0.8)
plt.show()

# %% [markdown]
# ## The same numbers from the fused op
# `F.scaled_dot_product_attention` (PyTorch's signature) computes the same function without ever
# holding the `[T, T]` scores: it walks over blocks of keys and keeps, per query, a running
# maximum and a running sum of the softmax (flash-attention's *online softmax*), rescaling what
# it has accumulated whenever a larger score arrives. Its output and gradients match the
# formula's to float32 rounding.

# %%
qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
fused = F.scaled_dot_product_attention(qg, kg, vg, is_causal=True)
fused.sum().backward()

qr, kr, vr = (t.clone().requires_grad_() for t in (q, k, v))
reference, _ = attention(qr, kr, vr, causal=True)
reference.sum().backward()

for name, a, b in (("output", fused, reference), ("d q", qg.grad, qr.grad),
                   ("d k", kg.grad, kr.grad), ("d v", vg.grad, vr.grad)):
    print(f"{name:6s} largest difference {(a - b).abs().max().item():.2e}")

# %% [markdown]
# ## Memory: O(T²) against O(T)
# The formula keeps the scores and the weights (`[B, H, T, T]` each) for backward; the fused op
# keeps only the output and one number per query (the log of its softmax sum), from which
# backward recomputes each block of weights when it needs it. We measure the peak memory of a
# forward and backward pass as the sequence grows.

# %%
def peak_of(fn, T, B=1, H=4, D=32):
    q, k, v = (ember.randn(B, H, T, D, device=device, requires_grad=True) for _ in range(3))
    ember.reset_peak_memory_stats(device)
    before = ember.memory_allocated(device)
    fn(q, k, v).sum().backward()
    return (ember.max_memory_allocated(device) - before) / MiB


lengths = [128, 256, 512, 1024, 2048]
formula = [peak_of(lambda q, k, v: attention(q, k, v, causal=True)[0], T) for T in lengths]
fused_peaks = [peak_of(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                       T) for T in lengths]
for T, a, b in zip(lengths, formula, fused_peaks):
    print(f"T={T:5d}  formula {a:8.1f} MiB   fused {b:6.1f} MiB")

fig, ax = plt.subplots(figsize=(5.5, 3.5))
ax.plot(lengths, formula, marker="o", label="from primitives: O(T²)")
ax.plot(lengths, fused_peaks, marker="o", label="fused: O(T)")
ax.set(xscale="log", yscale="log", xlabel="sequence length T",
       ylabel="peak memory of forward + backward (MiB)")
ax.legend()
ax.grid(alpha=0.3)
plt.show()

# %% [markdown]
# Doubling T quadruples the formula's peak (the scores) but only doubles the fused op's
# (q, k, v, the output and their gradients): at T = 2048 the scores alone are
# 4 heads × 2048² × 4 bytes = 64 MiB per copy.
#
# ## A tiny GPT that writes
# A block of a GPT is attention (with the causal mask) followed by a small MLP, each wrapped in
# a layer norm and a residual connection. We train two blocks on Python's own reference
# documentation (`pydoc_data.topics`, shipped with every Python) for 200 steps, then
# let it continue a prompt one character at a time. It learns words and the shape of the text,
# not yet meaning; `examples-and-tutorials/python/train_gpt.py` trains a larger one.

# %%
import pydoc_data.topics  # noqa: E402

text = "".join(pydoc_data.topics.topics[key] for key in sorted(pydoc_data.topics.topics))
alphabet = sorted(set(text))
index = {c: i for i, c in enumerate(alphabet)}
data = np.array([index[c] for c in text[:200_000]], np.int64)


class Block(nn.Module):
    def __init__(self, C, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))

    def forward(self, x):  # [B, T, C]
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, heads, T, C / heads]
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, block_size, C=64, heads=4, layers=2):
        super().__init__()
        self.block_size = block_size
        self.token, self.position = nn.Embedding(vocab, C), nn.Embedding(block_size, C)
        self.blocks = nn.Sequential(*(Block(C, heads) for _ in range(layers)))
        self.norm, self.head = nn.LayerNorm(C), nn.Linear(C, vocab)

    def forward(self, idx):  # [B, T] -> [B, T, vocab]
        x = self.token(idx) + self.position(ember.arange(idx.shape[1], device=idx.device))
        return self.head(self.norm(self.blocks(x)))


block_size, steps = 32, 200
model = TinyGPT(len(alphabet), block_size).to(device)
optimizer = ember.optim.AdamW(model.parameters(), lr=3e-3)
rng = np.random.default_rng(0)
losses = []
for step in range(steps):
    rows = rng.integers(0, len(data) - block_size - 1, 32)[:, None] + np.arange(block_size)
    x, y = ember.tensor(data[rows]).to(device), ember.tensor(data[rows + 1]).to(device)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x).reshape(-1, len(alphabet)), y.reshape(-1))
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(f"loss {np.mean(losses[:20]):.2f} -> {np.mean(losses[-20:]):.2f} "
      f"(a uniform guess: ln {len(alphabet)} = {math.log(len(alphabet)):.2f})")

# %%
@ember.no_grad()
def sample(prompt, n=240, temperature=0.8):
    tokens = [alphabet.index(c) for c in prompt]
    for _ in range(n):
        context = ember.tensor([tokens[-block_size:]], device=device)
        p = F.softmax(model(context)[0, -1] / temperature, -1).cpu().numpy().astype(np.float64)
        tokens.append(int(rng.choice(len(p), p=p / p.sum())))
    return "".join(alphabet[t] for t in tokens)


model.eval()
print(sample("The "))

# %% [markdown]
# ## Exercises
# Each exercise ends with a cell that checks your answer (`check.py`, beside the notebooks):
# it prints ✓, or ✗ and what is wrong. The cells below start from a wrong answer; fix them.
#
# **1.** Write `causal_mask(L, S)`: the `[L, S]` boolean mask (True where query `i` may attend
# to key `j`) that `is_causal=True` means, aligned top-left as PyTorch does when `L != S`.

# %%
def causal_mask(L, S):
    return ember.tril(ember.ones(L, S), -1).bool()


check.attention_1(causal_mask)

# %% [markdown]
# **2.** Write `attention(q, k, v)` from primitive ops: `softmax(q kᵀ / √E) v`, with `E` the
# size of the last dim of `q`, over any leading batch dims.

# %%
def attention(q, k, v):
    return (q @ k.transpose(-2, -1)).softmax(-1) @ v


check.attention_2(attention)
