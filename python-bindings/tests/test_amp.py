"""ember.autocast and ember.amp.GradScaler: the dtype each class of op runs in (nested, disabled
and decorated regions, and backward), values against a NumPy reference rounded to bfloat16,
loss scaling against a hand computation, the optimizers' float32 master weights, and the TF32
switch."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn, optim

rng = np.random.default_rng(7)


def bf16(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


def t(*shape, dtype=ember.float32, requires_grad=False):
    return ember.tensor(rng.standard_normal(shape).astype(np.float32), dtype=dtype,
                        requires_grad=requires_grad)


# ---- autocast: which dtype each op runs in ----

def test_matrix_products_run_in_bfloat16_by_default():
    x, w, b = t(4, 8), t(5, 8), t(5)
    with ember.autocast("cpu"):
        assert F.linear(x, w, b).dtype == ember.bfloat16
        assert (x @ w.T).dtype == ember.bfloat16
        assert ember.matmul(x, w.T).dtype == ember.bfloat16
        assert F.conv2d(t(2, 3, 6, 6), t(4, 3, 3, 3)).dtype == ember.bfloat16
        assert nn.Linear(8, 3)(x).dtype == ember.bfloat16


def test_float16_when_asked():
    x, w = t(4, 8), t(5, 8)
    with ember.autocast("cpu", dtype=ember.float16):
        assert F.linear(x, w).dtype == ember.float16


def test_softmax_reductions_norms_losses_in_float32():
    x = t(4, 6, dtype=ember.bfloat16)
    y = ember.tensor([0, 1, 2, 3])
    with ember.autocast("cpu"):
        assert F.softmax(x, -1).dtype == ember.float32
        assert F.log_softmax(x, -1).dtype == ember.float32
        assert x.sum().dtype == ember.float32
        assert x.mean(1).dtype == ember.float32
        assert x.exp().dtype == ember.float32
        assert F.layer_norm(x, (6,)).dtype == ember.float32
        assert nn.LayerNorm(6)(x).dtype == ember.float32
        assert F.cross_entropy(x, y).dtype == ember.float32
        assert F.mse_loss(x, t(4, 6)).dtype == ember.float32


def test_other_ops_keep_their_dtype_and_promote_as_usual():
    low, full = t(3, 4, dtype=ember.bfloat16), t(3, 4)
    with ember.autocast("cpu"):
        assert F.relu(low).dtype == ember.bfloat16
        assert F.gelu(low).dtype == ember.bfloat16
        assert (low + full).dtype == ember.float32
        assert ember.cat([low, full]).dtype == ember.float32
        assert ember.cat([low, low]).dtype == ember.bfloat16


def test_float64_is_never_lowered():
    a, b = t(3, 4, dtype=ember.float64), t(4, 2, dtype=ember.float64)
    with ember.autocast("cpu"):
        assert (a @ b).dtype == ember.float64


def test_nested_disabled_and_restored():
    x, w = t(4, 8), t(5, 8)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        with ember.autocast("cpu", dtype=ember.float16):
            assert F.linear(x, w).dtype == ember.float16
            with ember.autocast("cpu", enabled=False):
                assert not ember.is_autocast_enabled("cpu")
                assert F.linear(x, w).dtype == ember.float32
            assert F.linear(x, w).dtype == ember.float16
        assert F.linear(x, w).dtype == ember.bfloat16
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    assert F.linear(x, w).dtype == ember.float32


def test_restored_after_an_exception_and_only_on_its_device_type():
    x, w = t(4, 8), t(5, 8)
    with pytest.raises(KeyError), ember.autocast("cpu"):
        raise KeyError("inside")
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cuda", dtype=ember.float16):
        assert F.linear(x, w).dtype == ember.float32  # CPU tensors: untouched


def test_as_a_decorator():
    @ember.autocast("cpu")
    def forward(x, w):
        return F.linear(x, w)

    assert forward(t(2, 3), t(4, 3)).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")


def test_bad_arguments_are_typed_errors():
    with pytest.raises(ember.ValueError, match="device_type.*'cuda:0'"):
        ember.autocast("cuda:0")
    with pytest.raises(ember.DTypeError, match="bfloat16 or ember.float16"):
        ember.autocast("cpu", dtype=ember.float32)


def test_policy_names():
    assert ember.amp.autocast_policy("linear") == "lower"
    assert ember.amp.autocast_policy("scaled_dot_product_attention") == "lower"
    assert ember.amp.autocast_policy("layer_norm") == "float32"
    assert ember.amp.autocast_policy("stack") == "widest"
    assert ember.amp.autocast_policy("relu") == "keep"
    assert ember.amp.autocast_policy("cross_entropy") == "float32_math"


# ---- values and backward ----

def test_linear_values_are_the_bfloat16_product():
    x, w = t(6, 16), t(5, 16)
    with ember.autocast("cpu"):
        y = F.linear(x, w)
    want = bf16(bf16(x.numpy()).astype(np.float64) @ bf16(w.numpy()).T.astype(np.float64))
    np.testing.assert_allclose(y.float().numpy(), want, rtol=2**-7, atol=1e-6)


def test_backward_runs_in_the_dtypes_forward_chose():
    x, w = t(4, 8, requires_grad=True), t(5, 8, requires_grad=True)
    with ember.autocast("cpu"):
        y = F.linear(x, w)
        y.retain_grad()
        loss = F.softmax(y, -1)[:, 0].sum()
    assert y.dtype == ember.bfloat16 and loss.dtype == ember.float32
    text = str(loss.graph())
    assert "bf16[5,8] = to_dtype(" in text and "f32[4,5] = to_dtype(" in text, text
    loss.backward()
    assert y.grad.dtype == ember.bfloat16
    assert w.grad.dtype == ember.float32 and x.grad.dtype == ember.float32
    # against NumPy: softmax of the bf16 product in float64, its gradient through bf16 operands
    xb, wb = (bf16(v.detach().numpy()).astype(np.float64) for v in (x, w))
    z = bf16(xb @ wb.T).astype(np.float64)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz = -p * p[:, :1]
    dz[:, 0] += p[:, 0]
    dz = bf16(dz).astype(np.float64)
    np.testing.assert_allclose(w.grad.numpy(), dz.T @ xb, rtol=0.03, atol=0.02)
    np.testing.assert_allclose(x.grad.numpy(), dz @ wb, rtol=0.03, atol=0.02)


def ce_reference(x, y, ignore_index=-100):
    """Per-sample cross entropy and its gradient (of the mean over the samples not ignored) in
    float64, logits [N, C]."""
    x = x.astype(np.float64)
    z = x - x.max(1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(1, keepdims=True))
    keep = y != ignore_index
    rows = np.arange(len(y))
    loss = np.where(keep, -lp[rows, np.where(keep, y, 0)], 0.0)
    grad = np.exp(lp)
    grad[rows[keep], y[keep]] -= 1
    grad[~keep] = 0
    return loss, grad / keep.sum()


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_cross_entropy_reads_low_precision_logits_and_returns_a_float32_loss(dtype):
    # A GPT's logits are the step's largest tensor: autocast keeps them in the low dtype (no cast
    # to float32 and back); the loss is computed in float32 and stays so, the gradient comes in
    # the logits' dtype.
    x = t(7, 301, dtype=dtype, requires_grad=True)
    y = ember.tensor(np.array([3, -100, 0, 300, 17, 150, 299]))
    with ember.autocast("cpu", dtype=dtype):
        loss = F.cross_entropy(x, y)
        none = F.cross_entropy(x, y, reduction="none")
    assert loss.dtype == ember.float32 and none.dtype == ember.float32
    assert "to_dtype" not in str(loss.graph()), str(loss.graph())
    loss.backward()
    assert x.grad.dtype == dtype
    xs = x.detach().float().numpy()  # the low-precision values, exactly
    want, grad = ce_reference(xs, y.numpy())
    np.testing.assert_allclose(none.detach().numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(loss.item(), want.sum() / 6, rtol=1e-6)
    ulp = 2.0**-8 if dtype == ember.bfloat16 else 2.0**-11
    np.testing.assert_allclose(x.grad.float().numpy(), grad, rtol=ulp, atol=1e-7)
    # the same loss as the float32 path, and a gradient within the low dtype's rounding of it
    x32 = x.detach().float().requires_grad_()
    loss32 = F.cross_entropy(x32, y)
    loss32.backward()
    np.testing.assert_allclose(loss.item(), loss32.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.float().numpy(), x32.grad.numpy(), rtol=ulp, atol=1e-7)


def test_cross_entropy_with_inputs_of_two_dtypes_casts_them_to_float32():
    x = t(4, 5, dtype=ember.bfloat16, requires_grad=True)
    w = ember.tensor(rng.uniform(0.5, 2, 5).astype(np.float32))  # float32 weights
    y = ember.tensor(np.array([0, 4, 2, 2]))
    with ember.autocast("cpu"):
        loss = F.cross_entropy(x, y, weight=w)
    assert loss.dtype == ember.float32
    assert "to_dtype" in str(loss.graph())
    loss.backward()
    assert x.grad.dtype == ember.bfloat16
    want = F.cross_entropy(x.detach().float(), y, weight=w)
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)


def test_backward_inside_a_region_is_not_cast_again():
    x, w = t(3, 4), t(2, 4, requires_grad=True)
    with ember.autocast("cpu"):
        loss = F.linear(x, w).tanh().sum()
        (gw,) = ember.autograd.grad(loss, w, create_graph=True)
        assert gw.dtype == ember.float32
        assert ember.is_autocast_enabled("cpu")


def test_an_mlp_trains_under_autocast():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = optim.Adam(model.parameters(), lr=0.02)
    x = t(64, 4)
    y = ember.tensor((x.numpy()[:, 0] > 0).astype(np.int64) + (x.numpy()[:, 1] > 0))
    losses = []
    for _ in range(60):
        opt.zero_grad()
        with ember.autocast("cpu"):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype == ember.float32 for p in model.parameters())
    assert losses[-1] < 0.3 * losses[0]


# ---- GradScaler ----

def sgd_setup(value=1.0):
    p = nn.Parameter(ember.tensor([value, 2.0 * value]))
    return p, optim.SGD([p], lr=0.5)


def test_grad_scaler_scales_unscales_and_steps():
    p, opt = sgd_setup()
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    loss = (p * ember.tensor([3.0, -1.0])).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == pytest.approx(8.0 * loss.item())
    scaled.backward()
    np.testing.assert_allclose(p.grad.numpy(), [24.0, -8.0])
    scaler.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), [3.0, -1.0])  # what clipping would see
    scaler.step(opt)  # no second unscale
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.5 * 3.0, 2.0 + 0.5 * 1.0])
    scaler.update()
    assert scaler.get_scale() == 8.0  # one finite step of growth_interval 2


def test_grad_scaler_skips_an_overflowing_step_and_lowers_then_grows():
    """A hand-computed history: init 4, growth x2 after 2 finite steps, backoff x0.5."""
    p, opt = sgd_setup()
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_factor=2.0, backoff_factor=0.5,
                                  growth_interval=2)
    history, values = [], []
    for coefficient in (1.0, 1.0, float("inf"), 1.0, float("nan"), 1.0, 1.0):
        opt.zero_grad()
        scaler.scale((p * coefficient).sum()).backward()
        before = p.detach().numpy().copy()
        scaler.step(opt)
        changed = not np.array_equal(before, p.detach().numpy())
        scaler.update()
        history.append(scaler.get_scale())
        values.append(changed)
    # finite, finite -> grow to 8; inf -> skip, 4; finite -> 4 (tracker 1); nan -> skip, 2;
    # finite -> 2 (tracker 1); finite -> 4
    assert history == [4.0, 8.0, 4.0, 4.0, 2.0, 2.0, 4.0]
    assert values == [True, True, False, True, False, True, True]
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 5 * 0.5, 2.0 - 5 * 0.5])


def test_grad_scaler_misuse_and_state():
    p, opt = sgd_setup()
    scaler = ember.amp.GradScaler("cpu", init_scale=16.0)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(ember.ValueError, match="unscale_.*already called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(ember.ValueError, match="step.*already called"):
        scaler.step(opt)
    scaler.update()
    state = scaler.state_dict()
    assert state == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                     "growth_interval": 2000, "_growth_tracker": 1}
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    scaler.update(new_scale=3.0)
    assert scaler.get_scale() == 3.0
    with pytest.raises(ember.ValueError, match="backoff_factor"):
        ember.amp.GradScaler(backoff_factor=1.5)
    with pytest.raises(ember.ValueError, match="scale: outputs"):
        scaler.scale("loss")


def test_a_disabled_grad_scaler_passes_through():
    p, opt = sgd_setup()
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    loss = p.sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(p.detach().numpy(), [0.5, 1.5])
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}


def test_grad_scaler_keeps_float16_gradients_from_flushing():
    """Under float16 autocast the gradient reaching a product is float16: 1e-8 flushes to zero
    (float16's smallest subnormal is 6e-8) unless the loss was scaled."""
    x = t(4, 3)
    colsum = x.numpy().sum(0)

    def weight_grad(scaler):
        w = nn.Parameter(ember.ones(2, 3))
        opt = optim.SGD([w], lr=0.0)
        with ember.autocast("cpu", dtype=ember.float16):
            loss = (F.linear(x, w).float() * 1e-8).sum()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        return w.grad.numpy()

    assert not weight_grad(ember.amp.GradScaler("cpu", init_scale=1.0)).any()
    grad = weight_grad(ember.amp.GradScaler("cpu", init_scale=2.0**16))
    np.testing.assert_allclose(grad, 1e-8 * np.stack([colsum, colsum]), rtol=2e-3, atol=1e-11)


# ---- master weights ----

def test_master_weights_let_small_updates_add_up():
    start = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    grad = np.array([1.0, -1.0, 0.5, 2.0], np.float32)
    lr, steps = 1e-3, 20

    def train(master):
        p = nn.Parameter(ember.tensor(start, dtype=ember.bfloat16))
        opt = optim.SGD([p], lr=lr, master_weights=master)
        for _ in range(steps):
            p.grad = ember.tensor(grad, dtype=ember.bfloat16)
            opt.step()
        return p, opt

    plain, _ = train(False)
    # every update rounded away
    np.testing.assert_array_equal(plain.detach().float().numpy(), bf16(start))
    kept, opt = train(True)
    want = start.astype(np.float32)
    for _ in range(steps):  # the same float32 arithmetic as the fused SGD step
        want = want - np.float32(lr) * grad
    master = opt.state_dict()["state"][0]["master"]
    assert master.dtype == ember.float32
    np.testing.assert_allclose(master.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(kept.detach().float().numpy(), bf16(master.numpy()))
    assert opt.param_groups[0]["master_weights"] is True


def test_master_weights_adam_buffers_are_float32_and_survive_a_round_trip():
    p = nn.Parameter(ember.tensor([1.0, 2.0], dtype=ember.float16))
    opt = optim.AdamW([p], lr=1e-2, master_weights=True)
    for g in ([0.5, -0.25], [0.125, 1.0]):
        p.grad = ember.tensor(g, dtype=ember.float16)
        opt.step()
    saved = opt.state_dict()
    assert {k: v.dtype for k, v in saved["state"][0].items() if k != "step"} == {
        "exp_avg": ember.float32, "exp_avg_sq": ember.float32, "master": ember.float32}
    q = nn.Parameter(p.detach().clone())
    again = optim.AdamW([q], lr=1e-2, master_weights=True)
    again.load_state_dict(saved)
    for opt_, param in ((opt, p), (again, q)):
        param.grad = ember.tensor([1.0, 1.0], dtype=ember.float16)
        opt_.step()
    np.testing.assert_array_equal(p.detach().float().numpy(), q.detach().float().numpy())
    np.testing.assert_array_equal(opt.state_dict()["state"][0]["master"].numpy(),
                                  again.state_dict()["state"][0]["master"].numpy())


def test_master_weights_restart_from_a_parameter_written_between_steps():
    p = nn.Parameter(ember.tensor([1.0], dtype=ember.bfloat16))
    opt = optim.SGD([p], lr=1e-3, master_weights=True)
    p.grad = ember.tensor([1.0], dtype=ember.bfloat16)
    opt.step()
    with ember.no_grad():
        p.copy_(ember.tensor([4.0], dtype=ember.bfloat16))  # e.g. weights loaded into the model
    opt.step()
    master = opt.state_dict()["state"][0]["master"].item()
    assert master == pytest.approx(4.0 - 1e-3, rel=1e-6)


def test_master_weights_leave_float32_parameters_alone_and_are_checked():
    p = nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=0.1, master_weights=True)
    p.grad = ember.tensor([1.0, 1.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 1.9], rtol=1e-6)
    assert "master" not in opt.state_dict()["state"][0]
    with pytest.raises(ember.ValueError, match="master_weights.*flag"):
        opt.param_groups[0]["master_weights"] = 2


# ---- TF32 ----

def test_tf32_switch_defaults_off_and_round_trips():
    matmul = ember.backends.cuda.matmul
    assert matmul.allow_tf32 is False
    matmul.allow_tf32 = True
    try:
        assert matmul.allow_tf32 is True
    finally:
        matmul.allow_tf32 = False
    with pytest.raises(ember.ValueError, match="True or False"):
        matmul.allow_tf32 = 1
