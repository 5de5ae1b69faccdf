"""Fused kernels generated at run time (issue 23) against the same ops run one by one.

Ember's side goes through its bindings (via=python) and a fusion group built by hand with the
private ember._core._fused_elementwise, the code generator that compiled steps use; the
reference is PyTorch eager in the same process. On CUDA the same cases run NVRTC's kernels, and
chain8 is also compared with PyTorch's copy of x (torch-copy: the bandwidth PyTorch reaches on the
card).

  chain8            8 elementwise ops on 2^22 float32 (2^26 on CUDA, where 2^22 is done in about
                    a launch's time): x * 1.5 + 0.25, relu, * x, - 0.5, abs,
                    minimum(., 2), * 0.75. impl=fused: one generated kernel, one pass over memory;
                    impl=eager: 8 library kernels. Each against torch eager, the fused one also
                    against Ember eager and against a plain copy of x (x.clone(): the time one
                    pass over the same memory takes, the limit for a memory-bound chain).
  ln_gelu_residual  layer_norm(x) -> gelu -> + x on [8192, 512] float32 (2^22 elements).
                    impl=fused: mean, then variance (two groups ending in a reduction), then
                    normalise + affine + gelu + residual (one elementwise group): three generated
                    kernels. impl=eager: layer_norm, gelu, add.
  exp_mul_sum       a softmax-style exp(x - c) * w summed over each row of [8192, 512] float32
                    (c: [8192, 1], w: [512]). impl=fused: one generated kernel that folds each row
                    as it computes it (the library's summation order on the CPU: the same bits as
                    eager); impl=eager: sub, exp, mul, sum.
  compile           the chain8 kernel's compile time: cold (an empty cache folder: the C++ compiler
                    runs) and warm (the disk cache: loaded, not compiled), in seconds, one sample
                    each of `rounds` runs (median).

Compiled steps, whose fusion pass (ember.compile, fuse=True) builds the groups itself:
  ln_gelu_residual  impl=compiled: the same function under ember.compile; layer_norm stays the
                    library's kernel, gelu + residual add become one generated kernel. Against
                    Ember eager, the compiled step without fusion (compiled-unfused) and torch
                    eager. (On CUDA a compiled step hands back a copy of what it returns: its
                    CUDA graph writes into fixed memory.)
  gpt_block_step    one training step (forward, cross entropy, backward, AdamW) of a GPT-style
                    block (embeddings, a causal attention head, two layer norms, a GELU MLP, a
                    vocabulary head; width 128, context 64, batch 16) compiled with fusion, against
                    Ember eager, the compiled step without fusion and torch eager.
  step_compile      the first call of a compiled step (trace: one eager step, then the passes,
                    code generation and the memory plan) of the digits CNN (batch 32) and of the
                    GPT-style block: cold (an empty EMBER_CACHE_DIR, the C++ compiler runs for
                    every fused group) and warm (a fresh step, the kernels from the disk cache),
                    in seconds, median of `rounds` runs; groups = the fused groups built.
"""

import importlib
import os
import tempfile
import time
from dataclasses import dataclass

from harness.case import (
    Context,
    Measurement,
    PythonCase,
    Skipped,
    over_rounds,
    python_side,
    torch_reference,
)
from harness.timer import time_calls

N, N_CUDA = 1 << 22, 1 << 26
ROWS, COLS = 8192, 512
CHAIN8 = [("input", 0), ("constant", 1.5, "float32"), ("mul", 0, 1),
          ("constant", 0.25, "float32"), ("add", 2, 3), ("relu", 4), ("mul", 5, 0),
          ("constant", 0.5, "float32"), ("sub", 6, 7), ("abs", 8),
          ("constant", 2.0, "float32"), ("minimum", 9, 10), ("constant", 0.75, "float32"),
          ("mul", 11, 12)]


def chain8_eager(xp, x):
    """The same 8 ops, one library call each (Ember or torch: their APIs agree here)."""
    two = xp.full((), 2.0, device=x.device)
    y = x * 1.5 + 0.25
    return xp.minimum(((y.relu() * x) - 0.5).abs(), two) * 0.75


def private(ember):
    """ember._core, where the private fused-kernel functions are."""
    return importlib.import_module(ember.__name__ + "._core")


def chain8_fused(ember, x):
    fused = private(ember)._fused_elementwise

    def call():
        out, ok, reason = fused(CHAIN8, [x])
        if not ok:
            raise Skipped(f"no fused kernel here: {reason}")
        return out
    return call


def ln_gelu_eager(xp, x, w, b):
    f = xp.nn.functional
    return f.gelu(f.layer_norm(x, (COLS,), w, b)) + x


def ln_gelu_fused(ember, x, w, b):
    """Three groups: mean of x; mean of (x - mean)^2; gelu((x - mean) * rsqrt(var + eps) * w +
    b) + x. The row statistics are [ROWS, 1] tensors broadcast along the row."""
    fused = private(ember)._fused_elementwise
    mean_nodes = [("input", 0)]
    var_nodes = [("input", 0), ("input", 1), ("sub", 0, 1), ("mul", 2, 2)]
    out_nodes = [("input", 0), ("input", 1), ("input", 2), ("input", 3), ("input", 4),
                 ("sub", 0, 1), ("constant", 1e-5, "float32"), ("add", 2, 6), ("rsqrt", 7),
                 ("mul", 5, 8), ("mul", 9, 3), ("add", 10, 4), ("gelu", 11), ("add", 12, 0)]

    def call():
        mean, ok, reason = fused(mean_nodes, [x], "mean", 1, True)
        if not ok:
            raise Skipped(f"no fused kernel here: {reason}")
        var = fused(var_nodes, [x, mean], "mean", 1, True)[0]
        return fused(out_nodes, [x, mean, var, w, b])[0]
    return call


EXP_MUL_SUM = [("input", 0), ("input", 1), ("input", 2), ("sub", 0, 1), ("exp", 3),
               ("mul", 4, 2)]


def exp_mul_sum_eager(x, c, w):
    """sub, exp, mul, sum over the last dim: four library calls (Ember or torch)."""
    return ((x - c).exp() * w).sum(-1)


def exp_mul_sum_fused(ember, x, c, w):
    fused = private(ember)._fused_elementwise

    def call():
        out, ok, reason = fused(EXP_MUL_SUM, [x, c, w], "sum", 1)
        if not ok:
            raise Skipped(f"no fused kernel here: {reason}")
        return out
    return call


def timed_in_turn(ctx: Context, r, mine, others: dict) -> list[Measurement]:
    """Ember's call against each of `others` (name -> call), measured in turn `ctx.rounds`
    times: one time row per reference."""
    ours, theirs = [], {name: [] for name in others}
    for _ in range(ctx.rounds):
        ours.append(time_calls(mine, r.sync, ctx.timer))
        for name, call in others.items():
            theirs[name].append(time_calls(call, r.sync, ctx.timer))
    ember = over_rounds(ours)
    return [Measurement("time", "ms", "lower", ember.median_ms, ember.spread, name,
                        over_rounds(t).median_ms, over_rounds(t).spread)
            for name, t in theirs.items()]


@dataclass
class FusionCase(PythonCase):
    """Ember's fused call against Ember eager, torch eager and (chain8) a copy, timed in turn."""

    def calls(self, r, torch):
        ember = r.xp
        def theirs(t):  # the same numbers for PyTorch, on its device
            return torch.xp.from_numpy(t.cpu().numpy()).to(torch.device)

        if self.op == "chain8":
            x = (ember.rand(self.params["n"]) * 4 - 2).to(r.device)
            mine = chain8_fused(ember, x) if self.params["impl"] == "fused" else (
                lambda: chain8_eager(ember, x))
            others = {"ember-eager": lambda: chain8_eager(ember, x), "copy": x.clone}
            if torch is not None:
                tx = theirs(x)
                others["torch"] = lambda: chain8_eager(torch.xp, tx)
                if r.device != "cpu":
                    others["torch-copy"] = tx.clone
        elif self.op == "exp_mul_sum":
            x = ember.randn(ROWS, COLS).to(r.device)
            c, w = ember.randn(ROWS, 1).to(r.device), ember.rand(COLS).to(r.device)
            mine = exp_mul_sum_fused(ember, x, c, w) if self.params["impl"] == "fused" else (
                lambda: exp_mul_sum_eager(x, c, w))
            others = {"ember-eager": lambda: exp_mul_sum_eager(x, c, w)}
            if torch is not None:
                tx, tc, tw = (theirs(t) for t in (x, c, w))
                others["torch"] = lambda: exp_mul_sum_eager(tx, tc, tw)
        else:
            x = ember.randn(ROWS, COLS).to(r.device)
            w, b = (ember.rand(COLS) + 0.5).to(r.device), (ember.rand(COLS) - 0.5).to(r.device)
            mine = ln_gelu_fused(ember, x, w, b) if self.params["impl"] == "fused" else (
                lambda: ln_gelu_eager(ember, x, w, b))
            others = {"ember-eager": lambda: ln_gelu_eager(ember, x, w, b)}
            if torch is not None:
                tx, tw, tb = (theirs(t) for t in (x, w, b))
                others["torch"] = lambda: ln_gelu_eager(torch.xp, tx, tw, tb)
        if self.params["impl"] == "eager":
            others.pop("ember-eager")
            others.pop("copy", None)
            others.pop("torch-copy", None)
        return mine, others

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        torch = torch_reference(ctx)
        mine, others = self.calls(r, torch)
        mine()  # compiled (and checked) before it is timed
        return timed_in_turn(ctx, r, mine, others)


def cold_and_warm(ctx, core, first_call):
    """Median seconds of first_call() with a cold kernel cache (a fresh EMBER_CACHE_DIR, nothing
    loaded) and a warm one (the same folder, kernels on disk but not loaded), over rounds."""
    cold, warm = [], []
    saved = os.environ.get("EMBER_CACHE_DIR")
    try:
        for _ in range(max(ctx.rounds, 3)):
            with tempfile.TemporaryDirectory() as folder:
                os.environ["EMBER_CACHE_DIR"] = folder
                for times in (cold, warm):
                    core._fused_forget_loaded()
                    times.append(first_call())
    finally:
        if saved is None:
            os.environ.pop("EMBER_CACHE_DIR", None)
        else:
            os.environ["EMBER_CACHE_DIR"] = saved
    return sorted(cold)[len(cold) // 2], sorted(warm)[len(warm) // 2]


@dataclass
class CompileCase(PythonCase):
    """Cold and warm compile of the chain8 kernel, one call each, median over rounds."""

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        ember = r.xp
        x = ember.rand(1024).to(r.device)
        core = private(ember)
        fused = core._fused_elementwise

        def first_call():
            start = time.perf_counter()
            _, ok, reason = fused(CHAIN8, [x])
            seconds = time.perf_counter() - start
            if not ok:
                raise Skipped(f"no fused kernel here: {reason}")
            return seconds
        cold, warm = cold_and_warm(ctx, core, first_call)
        return [Measurement("compile_cold", "s", "lower", cold),
                Measurement("compile_warm", "s", "lower", warm)]


def cases(device):
    n = N_CUDA if device == "cuda" else N
    out = [FusionCase(op, {"n": n, "impl": impl, "via": "python"} if op == "chain8" else
                      {"rows": ROWS, "cols": COLS, "impl": impl, "via": "python"})
           for op in ("chain8", "ln_gelu_residual", "exp_mul_sum") for impl in ("fused", "eager")]
    out.append(CompileCase("compile", {"kernel": "chain8", "via": "python"}))
    out.append(CompiledCase("ln_gelu_residual", {"rows": ROWS, "cols": COLS, "impl": "compiled",
                                                 "via": "python"}))
    out.append(CompiledCase("gpt_block_step", {"width": GPT_WIDTH, "context": GPT_CONTEXT,
                                               "batch": GPT_BATCH, "impl": "compiled",
                                               "via": "python"}))
    out += [StepCompileCase("step_compile", {"model": m, "via": "python"}) for m in ("cnn", "gpt")]
    return out


# ---- compiled steps: the fusion pass of ember.compile ----

GPT_VOCAB, GPT_WIDTH, GPT_CONTEXT, GPT_BATCH = 256, 128, 64, 16


def gpt_block(xp):
    """The GPT-style block of python-bindings/tests/test_compile.py at benchmark size, from
    torch.nn or ember.nn (their APIs agree here)."""
    nn = xp.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(GPT_VOCAB, GPT_WIDTH)
            self.positions = nn.Embedding(GPT_CONTEXT, GPT_WIDTH)
            self.norm1, self.norm2 = nn.LayerNorm(GPT_WIDTH), nn.LayerNorm(GPT_WIDTH)
            self.qkv, self.proj = nn.Linear(GPT_WIDTH, 3 * GPT_WIDTH), nn.Linear(GPT_WIDTH,
                                                                                  GPT_WIDTH)
            self.up, self.down = nn.Linear(GPT_WIDTH, 4 * GPT_WIDTH), nn.Linear(4 * GPT_WIDTH,
                                                                                GPT_WIDTH)
            self.act, self.head = nn.GELU(), nn.Linear(GPT_WIDTH, GPT_VOCAB)
            self.register_buffer("future", xp.ones(GPT_CONTEXT, GPT_CONTEXT).triu(1).bool())
            self.register_buffer("position_ids", xp.arange(GPT_CONTEXT))

        def forward(self, ids):
            x = self.tokens(ids) + self.positions(self.position_ids)
            q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
            scores = (q @ k.transpose(-2, -1)) * (1.0 / GPT_WIDTH ** 0.5)
            scores = scores.masked_fill(self.future, float("-inf"))
            x = x + self.proj(scores.softmax(-1) @ v)
            x = x + self.down(self.act(self.up(self.norm2(x))))
            return self.head(x)

    return Block()


def gpt_step(r, compiled=False, fuse=True):
    """A GPT-style block's training step on a fixed batch, ready to call."""
    xp = r.xp
    xp.manual_seed(0)
    model = gpt_block(xp).to(r.device)
    opt = xp.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    loss_fn = xp.nn.CrossEntropyLoss()

    def step(ids, targets):
        opt.zero_grad()
        logits = model(ids)
        loss = loss_fn(logits.reshape(-1, GPT_VOCAB), targets.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = xp.compile(step, fuse=fuse)
    ids = r.randint(GPT_VOCAB, GPT_BATCH, GPT_CONTEXT)
    targets = r.randint(GPT_VOCAB, GPT_BATCH, GPT_CONTEXT)
    return lambda: step(ids, targets)


def ln_gelu_call(r, compiled=False, fuse=True):
    xp = r.xp
    xp.manual_seed(0)
    x = xp.randn(ROWS, COLS).to(r.device)
    w, b = (xp.rand(COLS) + 0.5).to(r.device), (xp.rand(COLS) - 0.5).to(r.device)
    if not compiled:
        return lambda: ln_gelu_eager(xp, x, w, b)

    def ln_gelu(x, w, b):
        return ln_gelu_eager(xp, x, w, b)
    step = xp.compile(ln_gelu, fuse=fuse)
    return lambda: step(x, w, b)


@dataclass
class CompiledCase(PythonCase):
    """Ember's compiled (fused) call against Ember eager, the compiled call without fusion and
    torch eager, timed in turn."""

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        if not hasattr(r.xp, "compile"):
            raise Skipped("this ember has no compile()")
        make = gpt_step if self.op == "gpt_block_step" else ln_gelu_call
        mine = make(r, compiled=True)
        others = {"ember-eager": make(r), "compiled-unfused": make(r, compiled=True, fuse=False)}
        torch = torch_reference(ctx)
        if torch is not None:
            others["torch"] = make(torch)
        for call in [mine, *others.values()]:
            for _ in range(3):  # trace (twice: optimizer state is made by the first) and warm up
                call()
        return timed_in_turn(ctx, r, mine, others)


@dataclass
class StepCompileCase(PythonCase):
    """The first call of a compiled CNN or GPT-block step, cold and warm cache."""

    def first_call(self, r):
        """Seconds of the first call of a fresh compiled step, and its fused groups."""
        if self.params["model"] == "gpt":
            xp = r.xp
            xp.manual_seed(0)
            model = gpt_block(xp).to(r.device)
            opt = xp.optim.AdamW(model.parameters(), lr=3e-4)
            loss_fn = xp.nn.CrossEntropyLoss()
            data = (r.randint(GPT_VOCAB, GPT_BATCH, GPT_CONTEXT),
                    r.randint(GPT_VOCAB, GPT_BATCH, GPT_CONTEXT))

            def body(ids, targets):
                opt.zero_grad()
                loss = loss_fn(model(ids).reshape(-1, GPT_VOCAB), targets.reshape(-1))
                loss.backward()
                opt.step()
                return loss
            step = r.xp.compile(body)
        else:
            from families.compiled import images, trainer
            step = trainer(r, compiled=True)[2]
            data = images(r, 32)
        start = time.perf_counter()
        step(*data)
        r.sync()
        return time.perf_counter() - start, step.fused_groups

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        if not hasattr(r.xp, "compile"):
            raise Skipped("this ember has no compile()")
        groups = 0

        def first_call():
            nonlocal groups
            seconds, groups = self.first_call(r)
            return seconds
        cold, warm = cold_and_warm(ctx, private(r.xp), first_call)
        return [Measurement("compile_cold", "s", "lower", cold),
                Measurement("compile_warm", "s", "lower", warm),
                Measurement("fused_groups", "groups", "higher", float(groups))]
