"""A GPT (decoder-only transformer), small enough to read in one sitting: token and position
embeddings, pre-norm blocks of causal self-attention and an MLP, a final norm and a head tied to
nothing. The shapes are in the comments: B batch, T positions, C channels, H heads, D = C / H."""

import math

import numpy as np

import ember
import ember.nn.functional as F
from ember import nn


class CausalSelfAttention(nn.Module):
    """Every position attends to itself and the positions before it, in H heads at once."""

    def __init__(self, channels, heads, dropout):
        super().__init__()
        if channels % heads:
            raise ember.ValueError(f"CausalSelfAttention: channels ({channels}) must be a "
                                   f"multiple of heads ({heads})")
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(channels, 3 * channels)  # queries, keys and values in one GEMM
        self.proj = nn.Linear(channels, channels)
        self.proj_dropout = nn.Dropout(dropout)

    def forward(self, x):  # x [B, T, C]
        B, T, C = x.shape  # noqa: N806 (the shape's usual names)
        q, k, v = self.qkv(x).split(C, dim=2)  # each [B, T, C]
        # [B, T, C] -> [B, H, T, D]: the heads become a batch dim
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        p = self.dropout if self.training else 0.0
        # softmax(q k^T / sqrt(D), future masked) v, fused: the [T, T] scores are never stored
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # [B, H, T, D]
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj_dropout(self.proj(y))


class Block(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x)): the pre-norm residual block of GPT-2."""

    def __init__(self, channels, heads, dropout):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels)
        self.attention = CausalSelfAttention(channels, heads, dropout)
        self.norm2 = nn.LayerNorm(channels)
        self.mlp = nn.Sequential(nn.Linear(channels, 4 * channels), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * channels, channels), nn.Dropout(dropout))

    def forward(self, x):  # [B, T, C] -> [B, T, C]
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    """Logits of the next token at every position: [B, T] int64 -> [B, T, vocab]."""

    def __init__(self, vocab, block_size, layers=4, channels=128, heads=4, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.token = nn.Embedding(vocab, channels)
        self.position = nn.Embedding(block_size, channels)
        self.blocks = nn.ModuleList(Block(channels, heads, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, vocab, bias=False)
        self._init_weights(layers)

    def _init_weights(self, layers):
        """GPT-2's: normal(0, 0.02) everywhere, the projections into the residual stream scaled
        down by sqrt(2 * layers) so that the stream's variance does not grow with depth."""
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "2.weight")) \
                    else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx):  # idx [B, T]
        T = idx.shape[1]  # noqa: N806
        if T > self.block_size:
            raise ember.ValueError(f"GPT: {T} positions, but the model was built for at most "
                                   f"block_size={self.block_size}; pass the last {self.block_size}")
        positions = ember.arange(T, device=idx.device)
        x = self.token(idx) + self.position(positions)  # [B, T, C]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))  # [B, T, vocab]

    @ember.no_grad()
    def generate(self, idx, new_tokens, temperature=1.0, rng=None):
        """idx [1, T] followed by new_tokens tokens drawn one at a time from the softmax of the
        last position's logits / temperature (rng: a numpy Generator, for repeatable draws)."""
        rng = rng or np.random.default_rng()
        self.eval()
        tokens = idx.cpu().numpy()[0].tolist()
        for _ in range(new_tokens):
            context = ember.tensor([tokens[-self.block_size:]], device=idx.device)
            logits = self(context)[0, -1].float() / temperature  # [vocab]
            p = F.softmax(logits, -1).cpu().numpy().astype(np.float64)
            tokens.append(int(rng.choice(len(p), p=p / p.sum())))
        return tokens
