"""nn.Module: registration, traversal, modes, to(), state_dict round trips and their errors,
repr, and the module path in errors raised inside a forward."""

import numpy as np
import pytest

import ember
from ember import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
        self.head = nn.Linear(2, 3)
        self.register_buffer("scale", ember.ones(3))
        self.note = "plain attribute"

    def forward(self, x):
        h = self.features(x).mean(dim=(2, 3))
        return self.head(h) * self.scale


def test_registration_and_traversal():
    m = Block()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["features.0.weight", "features.0.bias", "features.1.weight",
                     "features.1.bias", "head.weight", "head.bias"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert [n for n, _ in m.named_buffers()] == [
        "scale", "features.1.running_mean", "features.1.running_var",
        "features.1.num_batches_tracked"]
    assert [n for n, _ in m.named_children()] == ["features", "head"]
    assert [n for n, _ in m.named_modules()] == [
        "", "features", "features.0", "features.1", "features.2", "head"]
    assert len(list(m.modules())) == 6 and len(list(m.children())) == 2
    assert m.note == "plain attribute"
    del m.head
    assert "head" not in dict(m.named_children())


def test_shared_parameter_counted_once():
    a = nn.Linear(2, 2)
    m = nn.Sequential(a, a)
    assert len(list(m.parameters())) == 2


def test_train_eval_apply_zero_grad():
    m = Block()
    assert m.training and m.features[1].training
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    seen = []
    m.apply(lambda x: seen.append(type(x).__name__))
    assert seen[-1] == "Block" and "Conv2d" in seen
    m(ember.randn(2, 1, 5, 5)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_assigning_a_tensor_to_a_parameter_is_a_type_error():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="is a parameter"):
        m.weight = ember.zeros(2, 2)
    m.bias = None
    assert [n for n, _ in m.named_parameters()] == ["weight"]


def test_to_dtype_keeps_parameters_and_int_buffers():
    m = Block()
    weight = m.head.weight
    assert m.to("cpu").to(ember.float32).head.weight is weight
    m.to(ember.float64)
    assert all(p.dtype == ember.float64 and isinstance(p, nn.Parameter) for p in m.parameters())
    assert m.features[1].running_mean.dtype == ember.float64
    assert m.features[1].num_batches_tracked.dtype == ember.int64
    assert m(ember.randn(1, 1, 4, 4, dtype=ember.float64)).dtype == ember.float64


def test_state_dict_round_trip():
    a, b = Block(), Block()
    a(ember.randn(4, 1, 5, 5))  # running stats move
    missing, unexpected = b.load_state_dict(a.state_dict())
    assert missing == [] and unexpected == []
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
    assert "features.1.num_batches_tracked" in a.state_dict()


def test_load_state_dict_errors_name_each_key():
    m = Block()
    sd = dict(m.state_dict())
    sd["head.weight"] = ember.zeros(5, 2)
    del sd["head.bias"]
    sd["extra.weight"] = ember.zeros(1)
    before = m.head.weight.detach().numpy().copy()
    with pytest.raises(ember.ShapeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert "'head.weight': the checkpoint has shape [5, 2], the model [3, 2]" in msg
    assert "missing key 'head.bias' ([3] float32 cpu)" in msg
    assert "unexpected key 'extra.weight'" in msg and "strict=False" in msg
    np.testing.assert_array_equal(m.head.weight.detach().numpy(), before)  # nothing changed
    del sd["head.weight"]
    missing, unexpected = m.load_state_dict(sd, strict=False)
    assert missing == ["head.weight", "head.bias"] and unexpected == ["extra.weight"]


def test_repr_shows_layers_and_parameter_count():
    text = repr(nn.Sequential(nn.Linear(3, 4), nn.ReLU()))
    assert "(0): Linear(in_features=3, out_features=4, bias=True)" in text
    assert "(1): ReLU()" in text and "# 16 parameters" in text


def test_error_names_module_path_and_type():
    model = nn.Sequential()
    model.features = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU())
    x = ember.zeros(32, 3, 28, 28)
    with pytest.raises(ember.ShapeError) as e:
        model(x)
    msg = str(e.value)
    assert msg.startswith("Conv2d 'features.0': input is [32, 3, 28, 28] float32 cpu; expected 1 "
                          "input channel (weight is [16, 1, 3, 3]). Fix:")
    assert e.value.module_path == "features.0"


def test_error_from_an_op_is_prefixed_with_the_same_class():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Identity(), Mul())

        def forward(self, x):
            return self.inner(x)

    class Mul(nn.Module):
        def forward(self, x):
            return x @ ember.zeros(5, 5)

    with pytest.raises(ember.ShapeError) as e:
        Bad()(ember.zeros(2, 3))
    assert str(e.value).startswith("Mul 'inner.1': ")
    with pytest.raises(ember.ShapeError, match="^Linear: input is"):
        nn.Linear(4, 2)(ember.zeros(3))


def test_linear_and_batchnorm_checks():
    with pytest.raises(ember.ShapeError, match=r"expected \[\*, 4\] .*Linear\(3, 2\)"):
        nn.Linear(4, 2)(ember.zeros(5, 3))
    with pytest.raises(ember.ShapeError, match="with 3 channels in dim 1"):
        nn.BatchNorm2d(3)(ember.zeros(2, 4, 5, 5))
    unbatched = r"expected \[N, 1, H, W\] or, unbatched, \[1, H, W\]"
    with pytest.raises(ember.ShapeError, match=unbatched):
        nn.Conv2d(1, 2, 3)(ember.zeros(5, 5))
