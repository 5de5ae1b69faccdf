"""ember.compile: a traced and replayed training step equals the eager one bit for bit (losses,
parameters, gradients, optimizer state) for the digits CNN, an MLP and a GPT-style block; guards
trace again and warn; state changed between calls is read; capture errors name the line."""

import builtins
import linecache
import math
import re
import warnings

import numpy as np
import pytest

import ember
from ember import nn, optim


def bits(t):
    return t.detach().numpy().reshape(-1).view(np.uint8).copy()


def assert_same(a, b, what):
    assert a.shape == b.shape, what
    assert np.array_equal(bits(a), bits(b)), what


def assert_same_training_state(model_a, opt_a, model_b, opt_b):
    for (name, p), q in zip(model_a.named_parameters(), model_b.parameters()):
        assert_same(p, q, name)
        assert_same(p.grad, q.grad, f"{name}.grad")
    for (name, b), c in zip(model_a.named_buffers(), model_b.buffers()):
        assert_same(b, c, name)
    sa, sb = opt_a.state_dict()["state"], opt_b.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for index in sa:
        for key, value in sa[index].items():
            if isinstance(value, ember.Tensor):
                assert_same(value, sb[index][key], f"{key} of parameter {index}")
            else:
                assert value == sb[index][key], f"{key} of parameter {index}"


# ---- three models, built twice from one seed ----

def digits_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 10))


def mlp():
    return nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 32), nn.ReLU(),
                         nn.Linear(32, 5))


class Block(nn.Module):
    """A GPT-style block from primitives: token and position embeddings, one causal
    self-attention head (matmul, masked_fill, softmax), layer norms, a GELU MLP, a vocabulary
    head."""

    def __init__(self, vocab=17, width=16, context=8):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.act, self.head = nn.GELU(), nn.Linear(width, vocab)
        self.width = width
        self.register_buffer("future", ember.ones(context, context).triu(1).bool())
        self.register_buffer("position_ids", ember.arange(context))

    def forward(self, ids):  # ids [B, T] -> logits [B, T, vocab]
        t = ids.shape[1]
        x = self.tokens(ids) + self.positions(self.position_ids[:t])
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.width))
        scores = scores.masked_fill(self.future[:t, :t], float("-inf"))
        x = x + self.proj(scores.softmax(-1) @ v)
        x = x + self.down(self.act(self.up(self.norm2(x))))
        return self.head(x)


def build(kind, seed=0, device="cpu"):
    ember.manual_seed(seed)
    model = {"cnn": digits_cnn, "mlp": mlp, "gpt": Block}[kind]().to(device)
    if kind == "cnn":
        opt = optim.SGD(model.parameters(), lr=0.03, momentum=0.9, weight_decay=5e-4)
    elif kind == "mlp":
        opt = optim.Adam(model.parameters(), lr=1e-2)
    else:
        opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    return model, opt


def batches(kind, n, batch=8, device="cpu"):
    ember.manual_seed(1234)
    out = []
    for _ in range(n):
        if kind == "cnn":
            out.append((ember.rand(batch, 1, 28, 28), ember.randint(0, 10, (batch,))))
        elif kind == "mlp":
            out.append((ember.randn(batch, 20), ember.randint(0, 5, (batch,))))
        else:
            ids = ember.randint(0, 17, (batch, 8))
            out.append((ids, ids.roll(-1, 1)))
    return [(x.to(device), y.to(device)) for x, y in out]


def make_step(model, opt, kind):
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        if kind == "gpt":
            logits, y = logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
        loss = loss_fn(logits, y)
        loss.backward()
        opt.step()
        return loss

    return step


def eager_and_compiled(kind, device="cpu", **options):
    """Two models and optimizers built alike, each with its step: (model, optimizer, step) of the
    eager one, then of the one whose step is ember.compile(step, **options)."""
    model_a, opt_a = build(kind, device=device)
    model_b, opt_b = build(kind, device=device)
    return ((model_a, opt_a, make_step(model_a, opt_a, kind)),
            (model_b, opt_b, ember.compile(make_step(model_b, opt_b, kind), **options)))


@pytest.mark.parametrize("kind", ["cnn", "mlp", "gpt"])
def test_twenty_steps_equal_eager_bit_for_bit(kind):
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second trace (optimizer state made) is quiet
        for i, (x, y) in enumerate(batches(kind, 20)):
            want, got = eager(x, y), compiled(x, y)
            assert_same(want, got, f"loss at step {i}")
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    assert (compiled.traces, compiled.replays) == (2, 18)


def test_a_gpt_step_under_autocast_equals_eager_bit_for_bit():
    # bfloat16 logits reach the cross entropy as they are (autocast's float32_math): the traced
    # node keeps the attribute that makes its loss float32.
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled("gpt")
    for i, (x, y) in enumerate(batches("gpt", 5)):
        with ember.autocast("cpu"):
            want, got = eager(x, y), compiled(x, y)
        assert want.dtype == got.dtype == ember.float32
        assert_same(want, got, f"loss at step {i}")
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    assert compiled.replays == 3


@pytest.mark.skipif(not ember.cuda.is_available(), reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("kind", ["cnn", "mlp", "gpt"])
def test_on_cuda_a_step_replays_as_one_cuda_graph_where_it_can_and_follows_eager(kind):
    """Every kernel of the CNN's SGD step, the updates included, is capturable (no allocation,
    nothing waiting for the host), so it replays as one CUDA graph. Adam's and AdamW's bias
    corrections are host numbers that change at every step: those steps run as the flat list,
    and explain() says why. Either way the step follows eager."""
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled(kind, "cuda")
    for i, (x, y) in enumerate(batches(kind, 10, device="cuda")):
        want, got = eager(x, y).item(), compiled(x, y).item()
        assert math.isclose(want, got, rel_tol=1e-5, abs_tol=1e-6), f"loss at step {i}"
    text = compiled.explain()
    assert "captured once as one CUDA graph" in text
    if kind == "cnn":
        assert "not replayed as a CUDA graph" not in text, text
    else:
        assert "not replayed as a CUDA graph: numbers its kernels take from the host" in text, text
    for (name, p), q in zip(model_a.named_parameters(), model_b.parameters()):
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(),
                                   rtol=1e-4, atol=1e-5, err_msg=name)


def test_explain_and_graph_show_the_step():
    model, opt = build("cnn")
    step = ember.compile(make_step(model, opt, "cnn"))
    x, y = batches("cnn", 1)[0]
    step(x, y)
    step(x, y)  # the first call made the momentum buffers: this trace reads them
    text = step.explain()
    for part in ("== trace ==", "== guards ==", "input x: f32[8,1,28,28]", "model.0.weight",
                 "momentum_buffer of model.0.weight", "model.1.running_mean", "== replay =="):
        assert part in text, part
    graph = step.graph()
    for op in ("conv2d(", "sgd_update_group(", "batch_norm_update_stats("):
        assert op in graph, op


def test_learning_rate_schedule_between_calls_is_read_live():
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled("mlp")
    sched_a = optim.lr_scheduler.StepLR(opt_a, step_size=2, gamma=0.5)
    sched_b = optim.lr_scheduler.StepLR(opt_b, step_size=2, gamma=0.5)
    for x, y in batches("mlp", 8):
        assert_same(eager(x, y), compiled(x, y), "loss")
        sched_a.step()
        sched_b.step()
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    assert compiled.traces == 2


def test_state_changed_between_calls_is_read():
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled("mlp")
    data = batches("mlp", 6)
    for i, (x, y) in enumerate(data):
        if i == 3:
            for m in (model_a, model_b):
                m[0].weight.data.mul_(0.5)  # in place, outside the step
        if i == 4:
            saved = {k: v * 0.9 for k, v in model_a.state_dict().items()}
            model_a.load_state_dict(saved)
            model_b.load_state_dict(saved)
        assert_same(eager(x, y), compiled(x, y), f"loss at step {i}")
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    assert compiled.traces == 2  # in-place changes keep the tensors: no new trace


def test_eval_mode_traces_again_and_warns_once():
    model, opt = build("cnn")
    step = ember.compile(make_step(model, opt, "cnn"))
    (x, y), (x2, y2) = batches("cnn", 2)
    step(x, y)
    step(x, y)
    model.eval()
    with pytest.warns(ember._compile.RetraceWarning, match="'model.training' changed"):
        step(x2, y2)
    model.train()
    step(x2, y2)  # the training plan is still cached
    assert step.traces == 3


@pytest.mark.parametrize("change", ["shape", "dtype", "requires_grad", "grad_mode", "argument"])
def test_each_guard_traces_again(change):
    w = ember.ones(4, requires_grad=True)

    @ember.compile
    def f(x, scale=1.0):
        return (x * w * scale).sum()

    x = ember.ones(3, 4)
    f(x)
    f(x)
    with pytest.warns(ember._compile.RetraceWarning) as record:
        if change == "shape":
            out = f(ember.ones(2, 4))
        elif change == "dtype":
            out = f(ember.ones(3, 4, dtype=ember.float64))
        elif change == "requires_grad":
            out = f(ember.ones(3, 4, requires_grad=True))
        elif change == "grad_mode":
            with ember.no_grad():
                out = f(x)
        else:
            out = f(x, scale=2.0)
    assert f.traces == 2 and len(record) == 1
    assert "traced again" in str(record[0].message)
    assert out.item() in (8.0, 12.0, 24.0)


def test_a_replaced_parameter_traces_again():
    model = nn.Linear(3, 1, bias=False)

    @ember.compile
    def f(x):
        return model(x).sum()

    f(ember.ones(1, 3))
    model.weight = nn.Parameter(ember.full((1, 3), 2.0))  # another tensor object
    with pytest.warns(ember._compile.RetraceWarning, match="model tensors"):
        assert f(ember.ones(1, 3)).item() == 6.0
    assert f.traces == 2


@pytest.mark.parametrize("change", ["training flag", "register_buffer", "to", "append",
                                    "setitem", "delattr", "attribute"])
def test_every_way_of_changing_a_module_traces_again(change):
    # The module guards are read again only after nn.module.structure_version() moves: each
    # way of changing a module must move it.
    model = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.5))
    model[0].register_buffer("offset", ember.zeros(2))
    extra = nn.ModuleList([nn.Linear(2, 2)])

    @ember.compile
    def f(x):
        out = model(x) + model[0].offset
        for m in extra:
            out = m(out)
        return out.sum()

    x = ember.ones(4, 3)
    f(x)
    f(x)
    with pytest.warns(ember._compile.RetraceWarning):
        if change == "training flag":
            model[1].training = False  # one submodule, by attribute
        elif change == "register_buffer":
            model[0].register_buffer("offset", ember.ones(2))
        elif change == "to":
            model.to(ember.float64)
            extra.to(ember.float64)
            x = x.double()
        elif change == "append":
            extra.append(nn.Linear(2, 2))
        elif change == "setitem":
            model[1] = nn.Dropout(0.25)  # the same tensors and modes, another p
        elif change == "attribute":
            model[1].p = 0.0
        else:
            del extra[0].bias
            extra[0].bias = None
        f(x)
    assert f.traces == 2


def test_module_guards_are_not_read_again_while_nothing_changes(monkeypatch):
    model, opt = build("cnn")
    step = ember.compile(make_step(model, opt, "cnn"))
    x, y = batches("cnn", 1)[0]
    step(x, y)
    step(x, y)
    walks = []
    real = nn.Module.named_modules
    monkeypatch.setattr(nn.Module, "named_modules",
                        lambda self, *a, **k: walks.append(1) or real(self, *a, **k))
    for _ in range(3):
        step(x, y)
    assert walks == [] and step.replays >= 3


CAPTURE = {
    "item": ("loss.item()", "item"),
    "tolist": ("loss.tolist()", "tolist"),
    "numpy": ("loss.detach().numpy()", "numpy"),
    "print": ("print(loss)", "printing a tensor"),
    "bool": ("bool(loss > 0) and loss", "control flow"),
    "float": ("float(loss)", "float"),
    "data": ("ember.tensor([1.0, 2.0]).sum() + loss", "Python data"),
    "numpy_in": ("ember.from_numpy(np.ones(2, np.float32)).sum() + loss", "NumPy array"),
    "random": ("ember.randn(3).sum() + loss", "random numbers"),
}


@pytest.mark.parametrize("case", list(CAPTURE))
def test_capture_errors_name_the_op_and_the_line(case):
    source, words = CAPTURE[case]
    w = ember.ones(3, requires_grad=True)
    scope = {"ember": ember, "np": np, "w": w}
    text = "def step(x):\n    loss = (x * w).sum()\n    out = " + source + "\n    return loss\n"
    filename = f"<step {case}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(builtins.compile(text, filename, "exec"), scope)  # noqa: S102 (a step from source)
    compiled = ember.compile(scope["step"])
    with pytest.raises(ember.CaptureError) as info:
        compiled(ember.ones(3))
    message = str(info.value)
    assert words in message, message
    assert "Fix:" in message
    assert f"<step {case}>:3: out = {source}" in message  # the user's line
    assert isinstance(info.value, NotImplementedError)


def test_returned_tensors_are_fresh_each_call():
    w = ember.ones(3)

    @ember.compile
    def f(x):
        return x + w, w

    x = ember.ones(3)
    f(x)
    a, wa = f(x)
    b, wb = f(x)
    assert a.data_ptr() != b.data_ptr()
    assert wb.data_ptr() != w.data_ptr()
    assert a.tolist() == [2.0, 2.0, 2.0]


def test_a_computed_returned_value_is_handed_over_without_a_copy_on_the_cpu():
    w = ember.arange(6.0).reshape(2, 3)

    @ember.compile
    def f(x):
        y = (x * w).relu()
        return y, y.t(), x, y

    x = ember.ones(2, 3)
    first = f(x)
    first[0].add_(100)  # the caller owns what it got: the next call does not see this
    y, yt, same_x, y_again = f(x)
    expected = (x * w).relu()
    np.testing.assert_array_equal(y.numpy(), expected.numpy())
    np.testing.assert_array_equal(yt.numpy(), expected.numpy().T)
    assert y.data_ptr() != first[0].data_ptr()
    assert y_again.data_ptr() == y.data_ptr()  # one tensor returned twice, as in eager mode
    assert same_x.data_ptr() != x.data_ptr()
    explained = f.explain()
    assert "returned as computed, in memory of its own" in explained
    assert "kept: it shares another value's memory" in explained  # the view
    assert "kept: it is an argument" in explained

    @ember.compile
    def g(x):
        return (x * w).relu().sum(1)

    g(x)
    out = g(x)
    assert "returned as computed, in memory of its own" in g.explain()
    np.testing.assert_array_equal(out.numpy(), expected.numpy().sum(1))
    assert g(x).data_ptr() != out.data_ptr()


def test_gradient_accumulation_equals_one_step_on_the_whole_batch():
    model_a, opt_a = build("mlp")
    model_b, opt_b = build("mlp")
    loss_fn = nn.CrossEntropyLoss()
    eager = make_step(model_a, opt_a, "mlp")

    @ember.compile
    def accumulated(x, y):
        opt_b.zero_grad()
        total = None
        for k in range(4):
            loss = loss_fn(model_b(x[4 * k:4 * k + 4]), y[4 * k:4 * k + 4]) / 4
            loss.backward()
            total = loss if total is None else total + loss
        opt_b.step()
        return total

    for x, y in batches("mlp", 5, batch=16):
        np.testing.assert_allclose(eager(x, y).item(), accumulated(x, y).item(), rtol=1e-5)
    for p, q in zip(model_a.parameters(), model_b.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4,
                                   atol=1e-6)
    assert accumulated.replays >= 3


def test_gradients_are_computed_in_their_grad_tensors_without_a_copy():
    """The backward writes each gradient straight into its .grad, as eager mode hands it over: no
    copy, the same .grad tensor at every call. A .grad of another layout, put there between
    calls, still gets the gradient (computed elsewhere, then copied in)."""
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled("mlp")
    data = batches("mlp", 4)
    for x, y in data[:2]:
        assert_same(eager(x, y), compiled(x, y), "loss")
    section = compiled.explain().split("== computed into state ==")[1].split("\n==")[0]
    assert "computed in 'model.0.weight.grad'" in section, section
    assert " kept: " not in section, section
    memory = [p.grad.data_ptr() for p in model_b.parameters()]
    assert_same(eager(*data[2]), compiled(*data[2]), "loss")
    assert [p.grad.data_ptr() for p in model_b.parameters()] == memory
    assert_same_training_state(model_a, opt_a, model_b, opt_b)

    transposed = ember.zeros(20, 64).t()  # the first weight's shape, (64, 20), not contiguous
    model_b[0].weight.grad = transposed
    assert_same(eager(*data[3]), compiled(*data[3]), "loss")
    assert model_b[0].weight.grad.data_ptr() == transposed.data_ptr()
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    assert compiled.traces == 2


def test_allocator_counters_do_not_move_across_100_replays():
    model, opt = build("mlp")
    step = ember.compile(make_step(model, opt, "mlp"))
    x, y = batches("mlp", 1)[0]
    for _ in range(3):
        step(x, y)
    keep = []
    before = ember.memory_stats()
    for _ in range(100):
        keep.append(step(x, y))
    after = ember.memory_stats()
    assert after["allocations"] - before["allocations"] == 100  # the returned losses
    assert after["system_allocations"] == before["system_allocations"]


def test_a_memory_budget_recomputes_or_names_the_smallest():
    model, opt = build("mlp")
    x, y = batches("mlp", 1)[0]
    with pytest.raises(ember.ValueError, match="cannot be met") as info:
        ember.compile(make_step(model, opt, "mlp"), memory_budget=64)(x, y)
    smallest = int(re.search(r"memory_budget >= (\d+)", str(info.value)).group(1))
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled(
        "mlp", memory_budget=smallest)
    for x, y in batches("mlp", 5):
        assert_same(eager(x, y), compiled(x, y), "loss")
    assert "== rematerialisation ==" in compiled.explain()


def test_without_passes_the_traced_graph_replays_as_it_is():
    (model_a, opt_a, eager), (model_b, opt_b, compiled) = eager_and_compiled("cnn", optimize=False)
    for x, y in batches("cnn", 5):
        assert_same(eager(x, y), compiled(x, y), "loss")
    assert_same_training_state(model_a, opt_a, model_b, opt_b)
    text = compiled.explain()
    assert "no memory plan" in text and "== memory plan ==" not in text


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_param_groups_and_two_steps_a_call_equal_eager_bit_for_bit(optimizer):
    # Two parameter groups with their own learning rates (the grouped update runs each run of
    # equal hyper numbers as one call), and a step that updates every parameter twice (two
    # updates of one parameter never share a call).
    def make(seed=0):
        ember.manual_seed(seed)
        model = mlp()
        groups = [{"params": list(model[0].parameters()), "lr": 0.05},
                  {"params": list(model[2].parameters()) + list(model[4].parameters())}]
        opt = (optim.SGD(groups, lr=0.01, momentum=0.9) if optimizer == "sgd"
               else optim.Adam(groups, lr=1e-3))
        loss_fn = nn.CrossEntropyLoss()

        def step(x, y):
            for _ in range(2):
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
            return loss

        return model, opt, step

    model_a, opt_a, eager = make()
    model_b, opt_b, step = make()
    compiled = ember.compile(step)
    for i, (x, y) in enumerate(batches("mlp", 6)):
        assert_same(eager(x, y), compiled(x, y), f"loss at call {i}")
        assert_same_training_state(model_a, opt_a, model_b, opt_b)
    assert "joined into one" in compiled.explain()
