"""ember.compile's fusion pass: the compiled CNN, MLP and GPT-style block of test_compile.py (also
with GPT-2's GELU written out as elementwise ops), and a model of long elementwise chains, with
fusion on and off, equal the eager steps bit for bit over several steps (each fused kernel does
the library's arithmetic in the library's order; the MLP's linear + ReLU and the block's up
projection + GELU join into one linear_act each, the GEMM's epilogue); a group writes every
value of it the backward reads (several outputs of one kernel); explain() lists the groups, their
outputs and why their neighbours stayed out; source() shows a group's generated kernel; a loss
whose elementwise chains end in a mean or a sum over their innermost dims (and a written-out
softmax, whose backward sums rows through sum_to) fuses each chain with its reduction and still
equals eager bit for bit; EMBER_FUSION=0 keeps the library's kernels, says why once, and changes
no number."""

import math
import os
import subprocess
import sys
import textwrap

import pytest
from test_compile import assert_same, assert_same_training_state, batches, build, make_step

import ember
from ember import nn, optim


class Chains(nn.Module):
    """Linear layers joined by long elementwise chains (scale, shift, GELU, sigmoid gate, tanh,
    residual): forward and backward both have several fusible groups."""

    def __init__(self):
        super().__init__()
        self.inner, self.outer = nn.Linear(12, 32), nn.Linear(32, 5)

    def forward(self, x):
        h = self.inner(x)
        r = nn.functional.gelu(h * 0.5 + 1.0) * h.sigmoid() + h.tanh()
        return self.outer(r.clamp(-3.0, 3.0))


class WrittenOutGelu(nn.Module):
    """GPT-2's GELU written as elementwise ops: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    The backward reads several of its intermediate values again."""

    def forward(self, x):
        inner = (x + 0.044715 * (x * x * x)) * math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + inner.tanh())


def build_model(kind, seed=0):
    if kind == "gpt2":  # the GPT-style block with GPT-2's written-out GELU
        model, opt = build("gpt", seed)
        model.act = WrittenOutGelu()
        return model, opt
    if kind != "chains":
        return build(kind, seed)
    ember.manual_seed(seed)
    model = Chains()
    return model, optim.AdamW(model.parameters(), lr=1e-2)


def data(kind, n):
    if kind != "chains":
        return batches("gpt" if kind == "gpt2" else kind, n)
    ember.manual_seed(99)
    return [(ember.randn(8, 12), ember.randint(0, 5, (8,))) for _ in range(n)]


def step_for(model, opt, kind):
    return make_step(model, opt, {"chains": "mlp", "gpt2": "gpt"}.get(kind, kind))


@pytest.mark.parametrize("kind", ["cnn", "mlp", "gpt", "gpt2", "chains"])
def test_fused_and_unfused_steps_equal_eager_bit_for_bit(kind):
    runs = [build_model(kind) for _ in range(3)]
    eager = step_for(*runs[0], kind)
    fused = ember.compile(step_for(*runs[1], kind))
    unfused = ember.compile(step_for(*runs[2], kind), fuse=False)
    for i, (x, y) in enumerate(data(kind, 8)):
        want = eager(x, y)
        assert_same(want, fused(x, y), f"fused loss at step {i}")
        assert_same(want, unfused(x, y), f"unfused loss at step {i}")
    assert_same_training_state(*runs[0], *runs[1])
    assert_same_training_state(*runs[0], *runs[2])
    assert unfused.fused_groups == 0
    assert "off (CompileOptions::fuse)" in unfused.explain()
    if kind in ("gpt", "gpt2", "chains"):  # the CNN's and MLP's elementwise ops stand alone
        assert fused.fused_groups >= 2, fused.explain()
    if kind in ("gpt2", "chains"):  # forward values the backward reads: one group writes them
        assert " outputs)" in fused.explain(), fused.explain()
    # The MLP's linear + ReLU and the block's up projection + GELU join into one linear_act
    # each (the GEMM's epilogue); with fusion off they stay apart.
    if kind in ("mlp", "gpt"):
        joined = "joined: linear_act(" + ("relu)" if kind == "mlp" else "gelu), ")
        assert joined in fused.explain(), fused.explain()
        assert "linear_act" not in unfused.explain()


def regression_step(seed):
    """A regression step whose loss is two elementwise chains, each ending in a reduction over
    its innermost dims: the mean squared error, and a softmax-style exp(out - 1) * 0.25 summed
    over each row (then averaged over the rows, which stays a kernel of its own)."""
    ember.manual_seed(seed)
    model = nn.Linear(12, 2100)  # rows longer than the library's blocks of 2048
    opt = optim.SGD(model.parameters(), lr=0.05)

    def step(x, t):
        opt.zero_grad()
        out = model(x)
        d = out - t
        loss = (d * d).mean() + ((out - 1.0).exp() * 0.25).sum(-1).mean()
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def compiled_beside_eager(make, seed, inputs):
    """Four steps of make(seed)'s step eager and compiled on the same inputs (a function of the
    step number), equal bit for bit, losses and training state: the compiled step's explain()."""
    model_a, opt_a, eager = make(seed)
    model_b, opt_b, step = make(seed)
    compiled = ember.compile(step)
    ember.manual_seed(seed + 1)
    for i in range(4):
        args = inputs()
        assert_same(eager(*args), compiled(*args), f"loss at step {i}")
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    return compiled.explain()


def test_a_loss_ending_in_reductions_fuses_them_and_equals_eager_bit_for_bit():
    text = compiled_beside_eager(regression_step, 5,
                                 lambda: (ember.randn(8, 12), ember.randn(8, 2100)))
    assert "mean of [8, 2100] over its innermost 2 dims fused" in text, text
    assert "sum of [8, 2100] over its innermost 1 dims fused" in text, text
    assert "reduction not fused:" in text  # the mean of the row sums: its input is a reduction's


def softmax_step(seed):
    """A training step whose loss is a softmax written out (amax, exp, sum, divide, log) over
    rows of 3000: reductions over the innermost dim in the forward, and in the backward the
    sums that broadcasting's gradient makes (sum_to) over the same rows."""
    ember.manual_seed(seed)
    model = nn.Linear(16, 3000)
    opt = optim.AdamW(model.parameters(), lr=1e-2)

    def step(x, onehot):
        opt.zero_grad()
        z = model(x)
        e = (z - z.amax(-1, keepdim=True)).exp()
        p = e / e.sum(-1, keepdim=True)
        loss = -((p + 1e-6).log() * onehot).sum(-1).mean() + (z * z).mean() * 0.01
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def test_a_written_out_softmax_fuses_its_reductions_forward_and_backward_bit_for_bit():
    text = compiled_beside_eager(
        softmax_step, 1, lambda: (ember.randn(6, 16), (ember.rand(6, 3000) > 0.999).float()))
    groups = [line for line in text.splitlines() if "group " in line and " fused)" in line]
    assert any("exp, sum (" in line for line in groups), text
    assert any("sum_to (" in line for line in groups), text  # the backward's row sums
    assert "over its innermost 2 dims fused" in text, text  # (z * z).mean()


def chains_explained_from_fusion():
    """explain() of the chains model's compiled step after one call, from its fusion section
    on."""
    model, opt = build_model("chains")
    step = ember.compile(step_for(model, opt, "chains"))
    x, y = data("chains", 1)[0]
    step(x, y)
    text = step.explain()
    return text[text.index("== fusion =="):]


def test_explain_lists_groups_and_why_neighbours_stayed_out():
    section = chains_explained_from_fusion()
    section = section[:section.index("\n== ")]
    assert "group 0:" in section
    assert "gelu" in section and "f32[8,32]" in section
    assert "matmul: its own tuned kernel" in section or "linear: its own tuned kernel" in section
    assert "ops fused into one kernel each" in section


def test_forward_values_the_backward_reads_are_outputs_of_one_group():
    section = chains_explained_from_fusion()
    forward = next(line for line in section.splitlines() if "group 0:" in line)
    # scale, shift, gelu, sigmoid, gate, tanh, residual, clamp: one kernel, which also writes
    # the values the backward reads (the gelu's input, the sigmoid, the tanh, ...).
    assert "(8 ops)" in forward, section
    outputs = int(forward.rsplit("(", 1)[1].split(" outputs)")[0])
    assert outputs >= 3, forward
    assert "more written by the group computing them" in section


def test_source_shows_a_groups_kernel():
    model, opt = build_model("chains")
    step = ember.compile(step_for(model, opt, "chains"))
    with pytest.raises(ember.ValueError, match="not traced yet"):
        step.source(0)
    x, y = data("chains", 1)[0]
    step(x, y)
    assert step.fused_groups >= 2
    source = step.source(0)
    assert "ember_fused" in source
    assert source == step.source(0)  # built once, at plan time
    with pytest.raises(ember.ValueError, match="no fused group"):
        step.source(step.fused_groups)


def test_fusion_off_by_environment_keeps_the_kernels_and_warns_once():
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from test_compile_fusion import build_model, data, step_for
        from test_compile import assert_same
        model_a, opt_a = build_model("chains")
        model_b, opt_b = build_model("chains")
        eager = step_for(model_a, opt_a, "chains")
        import ember
        compiled = ember.compile(step_for(model_b, opt_b, "chains"))
        for x, y in data("chains", 4):
            assert_same(eager(x, y), compiled(x, y), "loss")
        assert compiled.fused_groups == 0
        assert "EMBER_FUSION=0 turns fused kernels off" in compiled.explain()
        print("ok")
    """)
    env = dict(os.environ, EMBER_FUSION="0")
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert done.stderr.count("EMBER_FUSION=0") == 1, done.stderr
