"""Autograd from Python: requires_grad, backward, grad, hooks, grad mode and recorded graphs."""

import shutil

import numpy as np
import pytest

import ember


def test_backward_accumulates_leaf_gradients():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert x.is_leaf and x.op is None and x.grad is None
    y = (x * x).sum()
    assert not y.is_leaf and y.requires_grad and isinstance(y.op, str)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])
    x.grad = None
    assert x.grad is None


def test_backward_with_a_gradient_and_retain_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.backward(ember.tensor([1.0, 10.0]), retain_graph=True)
    y.backward(ember.tensor([1.0, 1.0]))
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 22.0])


def test_requires_grad_is_settable_on_leaves_only():
    x = ember.zeros(2)
    assert not x.requires_grad
    x.requires_grad = True
    assert x.requires_grad and x.requires_grad_(False) is x and not x.requires_grad
    y = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(ValueError):
        y.requires_grad = False
    with pytest.raises(TypeError):
        ember.tensor([1, 2]).requires_grad = True


def test_no_grad_and_enable_grad():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()


def test_detach_and_data_share_storage():
    x = ember.ones(2, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    d[0] = 5
    assert x.tolist() == [5.0, 1.0] and x.data.tolist() == [5.0, 1.0]


def test_retain_grad_and_hooks():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    x.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[1.0, 1.0]]
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])


def test_register_hook_returns_a_removable_handle():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 10)
    assert isinstance(handle, ember.autograd.RemovableHandle)
    x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [10.0, 10.0])
    handle.remove()
    handle.remove()  # a second remove does nothing
    x.grad = None
    x.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])

    seen = []
    with x.register_hook(lambda g: seen.append(g.tolist())):
        x.sum().backward()
    x.sum().backward()  # the block removed the hook
    assert seen == [[1.0, 1.0]]


def test_autograd_grad_and_higher_order():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    (gg,) = ember.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])
    assert x.grad is None
    z = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        ember.autograd.grad((x * 2).sum(), [x, z])
    assert ember.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)[1] is None


def test_graph_text_dot_and_render(tmp_path):
    w = ember.tensor([[1.0, 2.0]], requires_grad=True)
    loss = (w * w).sum()
    g = loss.graph()
    text = str(g)
    assert "mul" in text and "sum" in text and "# d/d" in text
    assert g._repr_html_().startswith("<pre>")
    dot = g.to_dot()
    assert dot.startswith("digraph") and "->" in dot
    if shutil.which("dot"):
        assert (tmp_path / "g.svg").exists() is False
        g.render(tmp_path / "g.svg")
        assert (tmp_path / "g.svg").read_text().lstrip().startswith("<")
    else:
        with pytest.raises(ember.NotSupportedError, match="graphviz"):
            g.render(tmp_path / "g.svg")
