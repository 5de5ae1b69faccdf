"""PyTorch habits that work in ember as in PyTorch: Embedding's padding_idx, zero_grad's
set_to_none, load's weights_only, container slicing, unbatched 2-D layers, cross_entropy with
class probabilities and binary_cross_entropy_with_logits' weight; against NumPy and float64
finite differences."""

import numpy as np
import pytest
from gradcheck import gradcheck

import ember
from ember import nn
from ember.nn import functional as F

RNG = np.random.default_rng(0)


# ---- Embedding(padding_idx=) ----

@pytest.mark.parametrize("padding_idx", [2, -3])
def test_embedding_padding_row_starts_zero_and_gets_no_gradient(padding_idx):
    emb = nn.Embedding(5, 3, padding_idx=padding_idx)
    assert emb.padding_idx == 2
    assert emb.weight.detach().numpy()[2].tolist() == [0.0, 0.0, 0.0]
    assert np.abs(emb.weight.detach().numpy()[[0, 1, 3, 4]]).sum() > 0
    idx = ember.tensor([[2, 0, 2], [4, 2, 1]], dtype=ember.int64)
    w = ember.tensor(RNG.standard_normal((2, 3, 3)).astype(np.float32))
    (emb(idx) * w).sum().backward()
    grad = emb.weight.grad.numpy()
    assert grad[2].tolist() == [0.0, 0.0, 0.0]
    want = np.zeros((5, 3), np.float32)
    for (i, j), v in np.ndenumerate(idx.numpy()):
        if v != 2:
            want[v] += w.numpy()[i, j]
    np.testing.assert_allclose(grad, want, rtol=1e-6)


def test_embedding_padding_row_forward_is_the_row_and_errors_name_the_range():
    emb = nn.Embedding(4, 2, padding_idx=0)
    with ember.no_grad():
        emb.weight[0] = 7.0  # a changed padding row is returned as it is, as in PyTorch
    assert emb(ember.tensor([0, 1], dtype=ember.int64)).detach().numpy()[0].tolist() == [7.0, 7.0]
    assert "padding_idx=0" in repr(emb)
    with pytest.raises(ember.IndexError, match="padding_idx is 4"):
        nn.Embedding(4, 2, padding_idx=4)
    with pytest.raises(ember.IndexError, match="-5"):
        nn.Embedding(4, 2, padding_idx=-5)


def test_functional_embedding_padding_idx_gradient_by_finite_differences():
    # the true gradient without padding_idx; with it, the same but for the padding row's zeros
    idx = ember.tensor([1, 3, 1, 0], dtype=ember.int64)
    weight = RNG.standard_normal((4, 2))
    gradcheck(lambda w: F.embedding(idx, w), weight)
    plain = ember.tensor(weight, requires_grad=True)
    padded = ember.tensor(weight, requires_grad=True)
    up = ember.tensor(RNG.standard_normal((4, 2)))
    (F.embedding(idx, plain) * up).sum().backward()
    out = F.embedding(idx, padded, padding_idx=-1)
    np.testing.assert_array_equal(out.detach().numpy(), weight[idx.numpy()])
    (out * up).sum().backward()
    want = plain.grad.numpy().copy()
    want[3] = 0.0
    np.testing.assert_array_equal(padded.grad.numpy(), want)
    with pytest.raises(ember.IndexError, match="padding_idx is 4"):
        F.embedding(idx, padded, padding_idx=4)


# ---- zero_grad(set_to_none) ----

def test_zero_grad_sets_to_none_by_default_and_zeros_in_place_otherwise():
    model = nn.Linear(3, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    model(ember.ones(4, 3)).sum().backward()
    grad = model.weight.grad
    opt.zero_grad(set_to_none=False)
    assert not grad.numpy().any()  # the grad seen before was zeroed in place
    opt.zero_grad()
    assert model.weight.grad is None and model.bias.grad is None
    model(ember.ones(4, 3)).sum().backward()
    model.zero_grad(set_to_none=False)
    assert model.weight.grad is not None and not model.weight.grad.numpy().any()
    model.zero_grad()
    assert model.weight.grad is None


# ---- ember.load(weights_only=) ----

def test_load_accepts_weights_only_true_and_refuses_false(tmp_path):
    path = tmp_path / "m.safetensors"
    ember.save({"w": ember.ones(2)}, path)
    assert ember.load(path, weights_only=True)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ember.NotSupportedError, match="never pickles"):
        ember.load(path, weights_only=False)


# ---- containers ----

def test_sequential_and_modulelist_slices_keep_their_type_and_modules():
    class Stack(nn.Sequential):
        pass

    layers = [nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3)]
    seq = Stack(*layers)
    head = seq[1:]
    assert type(head) is Stack and list(head) == layers[1:]
    assert [name for name, _ in head.named_children()] == ["1", "2"]
    x = ember.ones(1, 2)
    np.testing.assert_allclose(head(seq[0](x)).detach().numpy(), seq(x).detach().numpy())
    ml = nn.ModuleList(layers)
    part = ml[::2]
    assert type(part) is nn.ModuleList and list(part) == [layers[0], layers[2]]
    assert [name for name, _ in part.named_children()] == ["0", "1"]
    assert ml[-1] is layers[2] and len(ml[5:]) == 0


def test_sequential_item_assignment_replaces_the_module_under_its_name():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    relu6 = nn.Tanh()
    seq[-1] = relu6
    assert seq[1] is relu6 and [n for n, _ in seq.named_children()] == ["0", "1"]
    with pytest.raises(IndexError, match="index 2 is out of range for 2 modules"):
        seq[2] = nn.ReLU()


# ---- unbatched 2-D layers ----

@pytest.mark.parametrize("make", [
    lambda: nn.Conv2d(3, 4, 3, padding=1),
    lambda: nn.MaxPool2d(2),
    lambda: nn.AvgPool2d(2, stride=1),
    lambda: nn.AdaptiveAvgPool2d((2, 3)),
])
def test_2d_layers_take_unbatched_chw_input_as_a_batch_of_one(make):
    layer = make()
    x = ember.tensor(RNG.standard_normal((3, 6, 5)).astype(np.float32), requires_grad=True)
    y = layer(x)
    want = layer(x.detach().unsqueeze(0))
    assert y.shape == want.shape[1:]
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy()[0], rtol=1e-6)
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_unbatched_max_pool_with_indices_and_batch_norm_stays_batched():
    x = ember.tensor(RNG.standard_normal((2, 4, 4)).astype(np.float32))
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    assert values.shape == (2, 2, 2) and indices.shape == (2, 2, 2)
    with pytest.raises(ember.ShapeError, match="4 dims"):
        nn.BatchNorm2d(2)(x)  # PyTorch's BatchNorm2d takes 4-D input only
    with pytest.raises(ember.ShapeError, match="input channel"):
        nn.Conv2d(1, 2, 3)(x)


# ---- cross_entropy with class probabilities ----

def _ce_probs_reference(x, p, weight, smoothing, reduction, class_dim=1):
    c = x.shape[class_dim]
    p = p * (1 - smoothing) + smoothing / c
    logp = x - np.log(np.exp(x - x.max(class_dim, keepdims=True)).sum(class_dim, keepdims=True))
    logp -= x.max(class_dim, keepdims=True)
    if weight is not None:
        shape = [1] * x.ndim
        shape[class_dim] = c
        p = p * weight.reshape(shape)
    loss = -(logp * p).sum(class_dim)
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3,)])
def test_cross_entropy_with_probability_targets_matches_numpy(reduction, smoothing, weighted,
                                                             shape):
    class_dim = 0 if len(shape) == 1 else 1
    x = RNG.standard_normal(shape)
    p = RNG.random(shape)
    p /= p.sum(class_dim, keepdims=True)
    weight = RNG.random(shape[class_dim]) + 0.5 if weighted else None
    w = ember.tensor(weight) if weighted else None
    got = F.cross_entropy(ember.tensor(x), ember.tensor(p), weight=w, reduction=reduction,
                          label_smoothing=smoothing)
    want = _ce_probs_reference(x, p, weight, smoothing, reduction, class_dim)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    loss = nn.CrossEntropyLoss(weight=w, reduction=reduction, label_smoothing=smoothing)
    got = loss(ember.tensor(x), ember.tensor(p)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)
    gradcheck(lambda a, b: F.cross_entropy(a, b, weight=w, reduction=reduction,
                                           label_smoothing=smoothing), x, p)


def test_cross_entropy_probability_target_of_another_shape_is_a_shape_error():
    with pytest.raises(ember.ShapeError, match="class probabilities"):
        F.cross_entropy(ember.zeros(4, 3), ember.zeros(4))
    # int64 targets still go to the class-index op
    loss = F.cross_entropy(ember.zeros(2, 3), ember.tensor([0, 2], dtype=ember.int64))
    np.testing.assert_allclose(loss.item(), np.log(3), rtol=1e-6)


# ---- binary_cross_entropy_with_logits(weight=, pos_weight=) ----

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_with_logits_weight_and_pos_weight_match_numpy(reduction):
    x, t = RNG.standard_normal((4, 3)), RNG.random((4, 3))
    weight, pos_weight = RNG.random(3) + 0.5, RNG.random(3) + 0.5
    log_sig = -np.logaddexp(0, -x)
    log_one_minus = -np.logaddexp(0, x)
    loss = -weight * (pos_weight * t * log_sig + (1 - t) * log_one_minus)
    want = {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]
    args = (ember.tensor(weight), reduction, ember.tensor(pos_weight))
    got = F.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(t), *args)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    module = nn.BCEWithLogitsLoss(weight=args[0], reduction=reduction, pos_weight=args[2])
    np.testing.assert_allclose(module(ember.tensor(x), ember.tensor(t)).numpy(), want, rtol=1e-10)
    gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, ember.tensor(t), *args), x)
    with pytest.raises(ember.ValueError, match="reduction"):
        F.binary_cross_entropy_with_logits(ember.tensor(x), ember.tensor(t), args[0], "avg")
