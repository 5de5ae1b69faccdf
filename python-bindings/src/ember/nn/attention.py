"""MultiheadAttention, as torch.nn.MultiheadAttention: project query, key and value, split the
embedding into heads, attend with the fused scaled_dot_product_attention (or, when the attention
weights are asked for, with the formula written out, since the fused op never holds them), merge
the heads and project out."""

import math

from ember import _core
from ember.nn import functional, init
from ember.nn.layers import Linear
from ember.nn.module import Module, describe
from ember.nn.parameter import Parameter


class MultiheadAttention(Module):
    """Attention of num_heads heads of embed_dim // num_heads each. Inputs are
    [L, N, E] (or [N, L, E] with batch_first=True, or unbatched [L, E]); key and value have S
    positions and kdim / vdim features (embed_dim unless given).

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) returns (output, weights) with PyTorch's masks:
    key_padding_mask [N, S] and attn_mask [L, S] or [N * num_heads, L, S], bool (True: the
    position is *not* attended) or float (added to the scores). is_causal with no attn_mask
    applies the causal rule (query i sees keys j <= i); with an attn_mask it is PyTorch's hint
    that attn_mask already is causal. weights (need_weights=True, the default) are the attention
    probabilities after dropout, averaged over heads [N, L, S] (or per head [N, num_heads, L, S]);
    they cost O(L S) memory, so pass need_weights=False for the fused kernel."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise _core.NotSupportedError(
                "nn.MultiheadAttention: add_bias_kv and add_zero_attn are not supported; append "
                "the extra key/value positions to key and value yourself")
        if num_heads <= 0 or embed_dim % num_heads != 0:
            raise _core.ValueError(
                f"nn.MultiheadAttention: embed_dim {embed_dim} must be divisible by num_heads "
                f"{num_heads} (each head gets embed_dim // num_heads features)")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self.batch_first = batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim

        def weight(rows, cols):
            return Parameter(_core.empty(rows, cols, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = weight(3 * embed_dim, embed_dim)
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.in_proj_weight = None
            self.q_proj_weight = weight(embed_dim, embed_dim)
            self.k_proj_weight = weight(embed_dim, self.kdim)
            self.v_proj_weight = weight(embed_dim, self.vdim)
        self.in_proj_bias = (
            Parameter(_core.empty(3 * embed_dim, dtype=dtype, device=device)) if bias else None
        )
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        """PyTorch's: Xavier-uniform projections, zero biases."""
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight,
                  self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _projections(self):
        """(w_q, w_k, w_v) and (b_q, b_k, b_v): the in-projection's rows for each."""
        e = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        biases = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return weights, biases

    def _check(self, name, x, features, batched):
        want = 3 if batched else 2
        if x.ndim != want or x.shape[-1] != features:
            layout = ("[N, L, E]" if self.batch_first else "[L, N, E]") if batched else "[L, E]"
            raise _core.ShapeError(
                f"nn.MultiheadAttention: {name} is {describe(x)}; expected {layout} with "
                f"E = {features}, as query is (batch_first={self.batch_first})")

    def _mask(self, name, mask, shapes, dtype):
        """mask as an additive float mask (bool: True -> -inf) or None, checked against the
        allowed shapes."""
        if mask is None:
            return None
        if tuple(mask.shape) not in shapes:
            raise _core.ShapeError(
                f"nn.MultiheadAttention: {name} is {describe(mask)}; expected one of the shapes "
                f"{[list(s) for s in shapes]}")
        if mask.dtype == _core.bool:
            zeros = _core.zeros(*mask.shape, dtype=dtype, device=mask.device)
            return zeros.masked_fill(mask, -math.inf)
        if mask.dtype != dtype:
            raise _core.DTypeError(
                f"nn.MultiheadAttention: {name} is {describe(mask)}; expected bool or the "
                f"query's dtype {dtype}")
        return mask

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.ndim == 3
        self._check("query", query, self.embed_dim, batched)
        self._check("key", key, self.kdim, batched)
        self._check("value", value, self.vdim, batched)
        if not batched:  # a batch of one
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:  # [N, L, E] -> [L, N, E]
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        L, N, E = query.shape
        S, H, D = key.shape[0], self.num_heads, self.head_dim
        if key.shape[:2] != value.shape[:2] or key.shape[1] != N:
            raise _core.ShapeError(
                f"nn.MultiheadAttention: query is {describe(query)}, key is {describe(key)}, "
                f"value is {describe(value)} (as [L, N, E]); key and value need one length S "
                "and the query's batch size N")

        (wq, wk, wv), (bq, bk, bv) = self._projections()

        def heads(x, w, b, length):  # [length, N, *] -> [N, H, length, D]
            return functional.linear(x, w, b).reshape(length, N, H, D).permute(1, 2, 0, 3)

        q, k, v = heads(query, wq, bq, L), heads(key, wk, bk, S), heads(value, wv, bv, S)
        dtype = q.dtype
        kpm = self._mask("key_padding_mask", key_padding_mask, [(N, S)], dtype)
        am = self._mask("attn_mask", attn_mask, [(L, S), (N * H, L, S)], dtype)
        mask = None
        if am is not None:
            mask = am.reshape(N, H, L, S) if am.ndim == 3 else am
        if kpm is not None:
            kpm = kpm.reshape(N, 1, 1, S)
            mask = kpm if mask is None else mask + kpm
        causal = is_causal and mask is None
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:  # the formula, to hold the weights
            scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(D))
            if causal:
                allowed = _core.ones(L, S, dtype=_core.bool, device=q.device).tril()
                scores = scores.masked_fill(allowed.logical_not(), -math.inf)
            if mask is not None:
                scores = scores + mask
            weights = functional.dropout(functional.softmax(scores, -1), dropout_p)
            out = weights @ v
            weights = weights.mean(1) if average_attn_weights else weights
            if not batched:
                weights = weights.squeeze(0)
        else:
            out = functional.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal)
        out = self.out_proj(out.permute(2, 0, 1, 3).reshape(L, N, E))  # [L, N, E]
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self):
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")
