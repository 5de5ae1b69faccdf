"""The checks of the tutorials' exercises. ``check.<topic>_<n>(answer)`` prints ✓ when the answer
is right, or ✗ and what is wrong; with ``strict=True`` a wrong answer raises AssertionError
instead (the tests run solutions.py, and wrong answers, through every check this way).

Each check compares the answer with an independent reference: Ember itself where the exercise
rebuilds something Ember does, finite differences or a brute-force loop otherwise."""

import functools
import math

import numpy as np

import ember
from ember import nn


def exercise(check):
    """Makes check(answer) print its verdict, or raise it with strict=True."""

    @functools.wraps(check)
    def run(*answer, strict=False):
        try:
            check(*answer)
        except AssertionError as error:
            if strict:
                raise
            print(f"✗ {check.__name__}: {error}")
            return False
        print(f"✓ {check.__name__}: right")
        return True

    return run


def _close(got, want, what, tol=1e-6):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    error = np.abs(got - want).max(initial=0.0)
    assert error <= tol * (1 + np.abs(want).max(initial=0.0)), (
        f"{what}: got {np.round(got, 6)}, expected {np.round(want, 6)}")


# ---- 1 · tensors ----

@exercise
def tensors_1(strides_of):
    """strides_of(shape): the strides, in elements, of a contiguous tensor of that shape."""
    for shape in [(), (5,), (3, 4), (2, 3, 4), (4, 1, 3), (1, 1), (2, 3, 1, 5)]:
        want = ember.empty(shape).stride()
        got = tuple(strides_of(shape))
        assert got == tuple(want), f"strides_of({shape}) gave {got}; a contiguous tensor " \
                                   f"of that shape has strides {tuple(want)}"


@exercise
def tensors_2(last_column):
    """last_column(x): a view (no copy) of the last column of a 2-D tensor."""
    for rows, cols in [(3, 4), (1, 1), (5, 2)]:
        x = ember.arange(float(rows * cols)).reshape(rows, cols)
        col = last_column(x)
        _close(col.numpy(), x.numpy()[:, -1], f"last_column of a {rows}×{cols} tensor")
        col[0] = -100.0
        assert x[0, cols - 1].item() == -100.0, (
            "writing into the result did not change x: it is a copy, not a view")


# ---- 2 · backprop from scratch ----

_EXPRESSIONS = [  # (on Values, on floats)
    (lambda a, b: (a * b).tanh() + a.exp() * b,
     lambda a, b: math.tanh(a * b) + math.exp(a) * b),
    (lambda a, b: a.tanh() * a.tanh() + b,
     lambda a, b: math.tanh(a) ** 2 + b),
    (lambda a, b: (a + b * 2).tanh() * a,
     lambda a, b: math.tanh(a + 2 * b) * a),
]


@exercise
def backprop_1(value_class):
    """value_class: a Value with +, *, exp() and tanh(), whose backward() fills in .grad."""
    h = 1e-6
    for k, (on_values, on_floats) in enumerate(_EXPRESSIONS):
        for a0, b0 in [(0.3, -0.7), (-1.2, 0.4), (2.0, 1.5)]:
            a, b = value_class(a0), value_class(b0)
            out = on_values(a, b)
            _close(out.data, on_floats(a0, b0), f"expression {k} at ({a0}, {b0})")
            out.backward()
            da = (on_floats(a0 + h, b0) - on_floats(a0 - h, b0)) / (2 * h)
            db = (on_floats(a0, b0 + h) - on_floats(a0, b0 - h)) / (2 * h)
            _close([a.grad, b.grad], [da, db],
                   f"the gradients (d/da, d/db) of expression {k} at ({a0}, {b0})", tol=1e-5)


def _least_squares():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((32, 4))
    y = X @ np.array([1.0, -2.0, 0.5, 3.0])
    return X, y, lambda w: 2 / len(y) * X.T @ (X @ w - y)


@exercise
def backprop_2(rmsprop):
    """rmsprop(w, grad_fn, steps, lr, alpha, eps): the weights after that many RMSprop steps."""
    _, _, grad_fn = _least_squares()
    for steps, lr, alpha in [(1, 0.01, 0.99), (5, 0.05, 0.9), (25, 0.01, 0.99)]:
        w = ember.tensor(np.zeros(4), requires_grad=True)
        optimizer = ember.optim.RMSprop([w], lr=lr, alpha=alpha, eps=1e-8)
        for _ in range(steps):
            w.grad = ember.tensor(grad_fn(w.detach().numpy()))
            optimizer.step()
        got = rmsprop(np.zeros(4), grad_fn, steps, lr=lr, alpha=alpha, eps=1e-8)
        _close(got, w.detach().numpy(), f"w after {steps} steps (lr={lr}, alpha={alpha})",
               tol=1e-10)


# ---- 3 · automatic differentiation ----

@exercise
def autodiff_1(second_derivative):
    """second_derivative(f, x): f''(x) for a float x, f written with Ember's ops."""
    cases = [
        (lambda t: t * t * t, lambda x: 6 * x),
        (lambda t: t.sin() * t, lambda x: 2 * math.cos(x) - x * math.sin(x)),
        (lambda t: (t * 2).exp(), lambda x: 4 * math.exp(2 * x)),
    ]
    for k, (f, want) in enumerate(cases):
        for x in (0.5, -1.3):
            _close(float(second_derivative(f, x)), want(x), f"f{k}''({x})", tol=1e-9)


@exercise
def autodiff_2(numeric_gradient):
    """numeric_gradient(f, x, h): central differences of a scalar f at a float64 array x."""
    rng = np.random.default_rng(2)
    functions = [
        lambda t: ((t * 1.5).tanh() * t).sum(),
        lambda t: (t * t).sum().sqrt(),
        lambda t: t.exp().sum().log(),
    ]
    for k, f in enumerate(functions):
        x = rng.standard_normal(5)
        t = ember.tensor(x, requires_grad=True)
        f(t).backward()
        got = numeric_gradient(f, x.copy(), 1e-6)
        _close(got, t.grad.numpy(), f"the numeric gradient of function {k}", tol=1e-7)


@exercise
def autodiff_3(parameter_names):
    """parameter_names(text): the names of the params a printed graph lists, in order."""
    ember.manual_seed(0)
    models = [
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)),
        nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 1)),
    ]
    inputs = [ember.randn(5, 3), ember.randn(2, 1, 4, 4)]
    for k, (model, x) in enumerate(zip(models, inputs)):
        text = str(model(x).sum().graph())
        want = [name for name, _ in model.named_parameters()]
        got = list(parameter_names(text))
        assert got == want, f"model {k}: got {got}, expected {want} (the buffers are not " \
                            f"parameters)"


# ---- 4 · kernels ----

@exercise
def kernels_1(matmul_intensity):
    """matmul_intensity(m, k, n, bytes_per_element): flops per byte of [m,k] @ [k,n]."""
    for m, k, n, size in [(64, 64, 64, 4), (1, 1024, 1024, 4), (512, 3, 512, 8), (1, 1, 1, 2)]:
        want = 2 * m * k * n / (size * (m * k + k * n + m * n))
        _close(matmul_intensity(m, k, n, size), want, f"matmul_intensity({m}, {k}, {n}, {size})")


@exercise
def kernels_2(attainable):
    """attainable(intensity, bandwidth, peak): the roofline's flop rate (arrays too)."""
    intensity = np.array([0.01, 0.1, 1.0, 10.0, 100.0])
    for bandwidth, peak in [(10.0, 50.0), (200.0, 1000.0)]:
        want = np.minimum(bandwidth * intensity, peak)
        _close(attainable(intensity, bandwidth, peak), want,
               f"attainable(..., bandwidth={bandwidth}, peak={peak})")
        _close(attainable(1.0, bandwidth, peak), min(bandwidth, peak), "at intensity 1")


# ---- 5 · an MLP ----

@exercise
def mlp_1(accuracy):
    """accuracy(logits, labels): the fraction of rows whose largest logit is the label."""
    rng = np.random.default_rng(3)
    for n, classes in [(1, 3), (50, 10), (7, 2)]:
        logits = rng.standard_normal((n, classes)).astype(np.float32)
        labels = rng.integers(0, classes, n)
        want = np.mean(logits.argmax(1) == labels)
        got = accuracy(ember.tensor(logits), ember.tensor(labels))
        _close(float(got), want, f"accuracy of {n} rows")


@exercise
def mlp_2(confusion_matrix):
    """confusion_matrix(true, predicted, classes): counts[i, j] of true i predicted j."""
    rng = np.random.default_rng(4)
    for n, classes in [(100, 10), (5, 4), (0, 3)]:
        true, predicted = rng.integers(0, classes, n), rng.integers(0, classes, n)
        want = np.zeros((classes, classes), np.int64)
        for t, p in zip(true, predicted):
            want[t, p] += 1
        got = np.asarray(confusion_matrix(true, predicted, classes))
        assert got.shape == want.shape and (got == want).all(), (
            f"{n} labels, {classes} classes: got\n{got}\nexpected\n{want}")


# ---- 6 · a CNN ----

@exercise
def cnn_1(conv_output_size):
    """conv_output_size(size, kernel, stride, padding, dilation): the output's height."""
    for size in (5, 8, 28):
        for kernel, stride, padding, dilation in [(3, 1, 0, 1), (3, 2, 1, 1), (5, 3, 2, 1),
                                                  (3, 1, 2, 2), (1, 2, 0, 1)]:
            x, w = ember.zeros(1, 1, size, size), ember.zeros(1, 1, kernel, kernel)
            want = ember.conv2d(x, w, stride=stride, padding=padding, dilation=dilation).shape[2]
            got = conv_output_size(size, kernel, stride, padding, dilation)
            assert got == want, (f"conv_output_size({size}, {kernel}, stride={stride}, "
                                 f"padding={padding}, dilation={dilation}) gave {got}, "
                                 f"ember.conv2d gives {want}")


@exercise
def cnn_2(max_pool):
    """max_pool(x, k): NumPy max pooling of [N, C, H, W] by k × k windows, stride k."""
    rng = np.random.default_rng(5)
    for shape, k in [((2, 3, 4, 4), 2), ((1, 2, 7, 5), 2), ((1, 1, 9, 9), 3), ((2, 1, 3, 3), 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        want = nn.functional.max_pool2d(ember.tensor(x), k).numpy()
        _close(max_pool(x, k), want, f"max_pool of {shape} by {k}")


# ---- 7 · memory ----

@exercise
def memory_1(allocated_and_cached):
    """allocated_and_cached(snapshot): (bytes of allocated blocks, bytes of free blocks)."""
    made = [
        [],
        [{"size": 2048, "blocks": [{"size": 512, "state": "allocated"},
                                   {"size": 1536, "state": "free"}]},
         {"size": 4096, "blocks": [{"size": 4096, "state": "allocated"}]}],
    ]
    keep = [ember.empty(1000), ember.empty(300_000)]
    del keep[0]
    for k, snapshot in enumerate([*made, ember.memory_snapshot("cpu")]):
        blocks = [b for segment in snapshot for b in segment["blocks"]]
        want = (sum(b["size"] for b in blocks if b["state"] == "allocated"),
                sum(b["size"] for b in blocks if b["state"] == "free"))
        got = tuple(allocated_and_cached(snapshot))
        assert got == want, f"snapshot {k}: got {got}, expected {want}"


@exercise
def memory_2(accumulate):
    """accumulate(model, loss_fn, x, y, micro): .grad after backward over micro-batches."""
    ember.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
    x, y = ember.randn(24, 6), ember.randint(0, 3, (24,))
    loss_fn = nn.CrossEntropyLoss()
    loss_fn(model(x), y).backward()
    whole = [p.grad.numpy().copy() for p in model.parameters()]
    for micro in (4, 8, 24):
        model.zero_grad()
        accumulate(model, loss_fn, x, y, micro)
        for (name, p), want in zip(model.named_parameters(), whole):
            assert p.grad is not None, f"micro-batches of {micro}: {name}.grad is None"
            _close(p.grad.numpy(), want, f"micro-batches of {micro}: {name}.grad", tol=1e-5)


# ---- 8 · compiled steps ----

@exercise
def compiled_1(lower_bound):
    """lower_bound(buffers): the most bytes live at one node, buffers as (bytes, first, last)."""
    rng = np.random.default_rng(8)
    cases = [[], [(64, 0, 0)], [(64, 0, 1), (128, 1, 2), (32, 2, 2)], [(10, 0, 5), (20, 6, 9)]]
    for _ in range(20):
        first = rng.integers(0, 12, size=int(rng.integers(1, 9)))
        cases.append([(int(rng.integers(1, 1000)), int(f), int(f + rng.integers(0, 6)))
                      for f in first])
    for buffers in cases:
        nodes = range(max((last for _, _, last in buffers), default=-1) + 1)
        want = max((sum(size for size, first, last in buffers if first <= k <= last)
                    for k in nodes), default=0)
        got = lower_bound(list(buffers))
        assert got == want, f"lower_bound({buffers}) gave {got}, expected {want}"


@exercise
def compiled_2(make_step):
    """make_step(model, optimizer, loss_fn): a compiled SGD step equal to eager mode's."""
    def setup():
        ember.manual_seed(2)
        model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
        return model, ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    ember.manual_seed(3)
    batches = [(ember.randn(6, 5), ember.randint(0, 3, (6,))) for _ in range(4)]
    loss_fn = nn.CrossEntropyLoss()
    model, optimizer = setup()
    for x, y in batches:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    want = [p.detach().numpy().copy() for p in model.parameters()]
    model, optimizer = setup()
    step = make_step(model, optimizer, loss_fn)
    for x, y in batches:
        step(x, y)
    for (name, p), w in zip(model.named_parameters(), want):
        _close(p.detach().numpy(), w, f"after 4 compiled steps, {name}", tol=1e-5)


# ---- 9 · attention ----

@exercise
def attention_1(causal_mask):
    """causal_mask(L, S): [L, S] bool, True where query i may attend to key j (j <= i)."""
    for L, S in [(1, 1), (4, 4), (3, 5), (5, 3)]:
        got = np.asarray(causal_mask(L, S).numpy(), dtype=bool)
        q, k = ember.randn(1, L, 4), ember.randn(1, S, 4)
        v = ember.eye(S).reshape(1, S, S)  # each output row shows which keys it took in
        seen = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()[0]
        want = seen > 0
        assert got.shape == (L, S), f"causal_mask({L}, {S}) is {got.shape}, expected ({L}, {S})"
        assert (got == want).all(), f"causal_mask({L}, {S}):\n{got.astype(int)}\nexpected\n" \
                                    f"{want.astype(int)}"


@exercise
def attention_2(attention):
    """attention(q, k, v): softmax(q k^T / sqrt(E)) v from primitive ops."""
    ember.manual_seed(9)
    for shape_q, shape_k, ev in [((2, 3, 4), (2, 5, 4), 6), ((1, 7, 8), (1, 7, 8), 8)]:
        q, k, v = ember.randn(*shape_q), ember.randn(*shape_k), ember.randn(*shape_k[:2], ev)
        want = nn.functional.scaled_dot_product_attention(q, k, v).numpy()
        _close(attention(q, k, v).numpy(), want, f"attention with q {list(shape_q)}", tol=1e-5)
