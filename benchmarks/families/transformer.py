"""A GPT-2-mini training step: Ember through its bindings against PyTorch eager, in one process.

The model (one definition, built from ember.nn or torch.nn alike): token and position
embeddings, 4 pre-norm blocks of causal self-attention (d 256, 4 heads, fused QKV projection)
and a GELU MLP (4 x d), a final layer norm and a linear head over a vocabulary of 256 (bytes);
cross-entropy over every position; AdamW (lr 1e-3, weight decay 0.01). Batch 8 of T = 256
tokens drawn at random. PyTorch's attention is F.scaled_dot_product_attention; Ember's is the
same function where ember.nn.functional has it, else the formula from primitives (matmul,
masked_fill, softmax; the CSV's params say which: attention=fused or attention=primitives).

  gpt_step            one step (zero_grad, forward, loss, backward, AdamW), float32
                      (autocast=none) and under bfloat16 autocast on both sides (autocast=bf16)
  gpt_peak_memory     the most bytes in use during one step above those in use before the model
                      was built, both precisions (PyTorch's CPU figure from its profiler, as the
                      training family measures it: a lower bound)
  gpt2_small_step     CUDA only: one step of GPT-2 small (12 blocks, d 768, 12 heads, T 1024,
                      vocabulary 50257: 124M parameters) at batch 8 under bfloat16 autocast,
                      the same model code; tokens per second are 8 * 1024 / time
  gpt_autocast_loss   the loss of each of 10 steps under bfloat16 autocast, from the same
                      initial weights (PyTorch's, copied) and the same batches: Ember's value
                      beside PyTorch's, deterministic; tests/test_families_transformer.py holds
                      the tolerance"""

import functools
import math
from dataclasses import dataclass

import numpy as np

from families.training import ember_step_peak, peak_rows, torch_step_peak
from harness.case import Context, KernelCase, Measurement, PythonCase, python_side, torch_reference

LAYERS, CHANNELS, HEADS, BLOCK, BATCH, VOCAB = 4, 256, 4, 256, 8, 256
LR, WEIGHT_DECAY = 1e-3, 0.01
LOSS_STEPS = 10
GPT2_SMALL = {"layers": 12, "channels": 768, "heads": 12, "block": 1024, "vocab": 50257}
GPT2_BATCH = 8


def attention_kind(xp) -> str:
    return "fused" if hasattr(xp.nn.functional, "scaled_dot_product_attention") else "primitives"


def causal_attention(xp):
    """F.scaled_dot_product_attention(q, k, v, is_causal=True) of xp, or the same from
    primitives where xp has no fused op. q, k, v [B, H, T, D] -> [B, H, T, D]."""
    F = xp.nn.functional  # noqa: N806
    if attention_kind(xp) == "fused":
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def attention(q, k, v):
        T = q.shape[-2]  # noqa: N806
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # [B, H, T, T]
        future = xp.triu(xp.ones(T, T, dtype=xp.bool, device=q.device), 1)
        return F.softmax(scores.masked_fill(future, float("-inf")), -1) @ v

    return attention


def gpt(xp, layers=LAYERS, channels=CHANNELS, heads=HEADS, block=BLOCK, vocab=VOCAB):
    """The model, from xp.nn (ember or torch)."""
    nn, attend = xp.nn, causal_attention(xp)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
            self.qkv, self.proj = nn.Linear(channels, 3 * channels), nn.Linear(channels, channels)
            self.fc, self.out = nn.Linear(channels, 4 * channels), nn.Linear(4 * channels, channels)
            self.gelu = nn.GELU(approximate="tanh")

        def forward(self, x):  # [B, T, C]
            B, T, C = x.shape  # noqa: N806
            q, k, v = self.qkv(self.norm1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            x = x + self.proj(attend(q, k, v).transpose(1, 2).reshape(B, T, C))
            return x + self.out(self.gelu(self.fc(self.norm2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.token, self.position = nn.Embedding(vocab, channels), nn.Embedding(block, channels)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.norm, self.head = nn.LayerNorm(channels), nn.Linear(channels, vocab)

        def forward(self, idx):  # [B, T] -> [B, T, vocab]
            x = self.token(idx) + self.position(xp.arange(idx.shape[1], device=idx.device))
            for b in self.blocks:
                x = b(x)
            return self.head(self.norm(x))

    return GPT()


def device_type(r) -> str:
    return getattr(r.device, "type", None) or str(r.device).split(":")[0]


def trainer(r, autocast, model=None):
    """(model, optimizer, step): step(x, y) runs one training step and returns the loss."""
    xp = r.xp
    if model is None:
        xp.manual_seed(0)
        model = gpt(xp).to(r.device)
    optimizer = xp.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    F = xp.nn.functional  # noqa: N806

    def step(x, y):
        optimizer.zero_grad()
        with xp.autocast(device_type(r), dtype=xp.bfloat16, enabled=autocast == "bf16"):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return model, optimizer, step


def tokens(r, seed=0, batch=None, block=None, vocab=None):
    """(inputs, targets) [batch, block] int64 on r's device, the same numbers for every xp
    (BATCH, BLOCK and VOCAB where not given)."""
    batch, block, vocab = batch or BATCH, block or BLOCK, vocab or VOCAB
    data = np.random.default_rng(seed).integers(0, vocab, (batch, block + 1))
    return (r.xp.tensor(data[:, :-1].copy()).to(r.device),
            r.xp.tensor(data[:, 1:].copy()).to(r.device))


def gpt_step(r, p):
    step, (x, y) = trainer(r, p["autocast"])[2], tokens(r)
    return lambda: step(x, y)


def gpt2_small_step(r, p):
    r.xp.manual_seed(0)
    model = gpt(r.xp, **GPT2_SMALL).to(r.device)
    step = trainer(r, p["autocast"], model)[2]
    x, y = tokens(r, batch=p["batch"], block=GPT2_SMALL["block"], vocab=GPT2_SMALL["vocab"])
    return lambda: step(x, y)


# ---- peak memory of one step ----

def ember_peak(r, p) -> int:
    return ember_step_peak(r, lambda: (*trainer(r, p["autocast"]), tokens(r)))


def torch_peak(r, p) -> int:
    return torch_step_peak(r, lambda: (*trainer(r, p["autocast"]), tokens(r)))


@dataclass
class PeakMemoryCase(PythonCase):
    deterministic = True

    def measure(self, ctx: Context) -> list[Measurement]:
        return peak_rows(ctx, lambda r: ember_peak(r, self.params),
                         lambda r: torch_peak(r, self.params))


# ---- bfloat16 autocast losses, Ember beside PyTorch ----

def losses(r, steps, autocast="bf16", state=None):
    """The losses of `steps` steps from initial weights `state` (name -> NumPy array; the
    model's own seeded init when None) on batches 0, 1, ..."""
    model = None
    if state is not None:
        r.xp.manual_seed(0)
        model = gpt(r.xp).to(r.device)
        model.load_state_dict({k: r.xp.tensor(v).to(r.device) for k, v in state.items()})
    step = trainer(r, autocast, model)[2]
    return [float(step(*tokens(r, seed=i)).item()) for i in range(steps)]


@functools.lru_cache(maxsize=4)
def paired_losses(ember_side, torch_side, steps=LOSS_STEPS, autocast="bf16"):
    """(Ember's losses, PyTorch's): both start from PyTorch's initial weights."""
    torch = torch_side.xp
    torch.manual_seed(0)
    start = gpt(torch).to(torch_side.device)
    state = {k: v.detach().cpu().numpy() for k, v in start.state_dict().items()}
    return losses(ember_side, steps, autocast, state), losses(torch_side, steps, autocast, state)


@dataclass
class LossCase(PythonCase):
    deterministic = True

    def measure(self, ctx: Context) -> list[Measurement]:
        torch = torch_reference(ctx)
        if torch is None:
            ours = losses(python_side(ctx), self.params["step"], self.params["autocast"])[-1]
            return [Measurement("loss", "nats", "lower", ours)]
        ours, theirs = paired_losses(python_side(ctx), torch, LOSS_STEPS, self.params["autocast"])
        k = self.params["step"] - 1
        return [Measurement("loss", "nats", "lower", ours[k], 0.0, "torch", theirs[k], 0.0)]


def ember_attention_kind() -> str:
    """attention_kind of the ember package ("unknown" without it: run.py reports the cases as
    skipped)."""
    try:
        import ember

        return attention_kind(ember)
    except ImportError:
        return "unknown"


def cases(device):
    kind = ember_attention_kind()
    out = [KernelCase("gpt_step", {"autocast": a, "attention": kind}, torch=gpt_step,
                      ember=gpt_step).on_python() for a in ("none", "bf16")]
    if device == "cuda":
        out.append(KernelCase("gpt2_small_step", {"autocast": "bf16", "batch": GPT2_BATCH,
                                                  "T": GPT2_SMALL["block"], "attention": kind},
                              torch=gpt2_small_step, ember=gpt2_small_step).on_python())
    out += [PeakMemoryCase("gpt_peak_memory", {"autocast": a, "attention": kind, "via": "python"})
            for a in ("none", "bf16")]
    out += [LossCase("gpt_autocast_loss", {"autocast": "bf16", "step": k, "attention": kind,
                                           "via": "python"}) for k in range(1, LOSS_STEPS + 1)]
    return out
