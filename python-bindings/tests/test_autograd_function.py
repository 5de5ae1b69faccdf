"""ember.autograd.Function (ops of your own with their gradient) against finite differences and
the built-in ops they copy, at first and second order, with its errors; ember.autograd.gradcheck
passing for correct gradients and failing, with a useful message, for wrong ones."""

import gc

import numpy as np
import pytest
from gradcheck import gradcheck as fd_check

import ember
from ember.autograd import Function, GradcheckError, gradcheck

X = np.array([[0.5, -1.0, 2.0], [0.25, 1.5, -0.75]])


def leaf(a=X):
    return ember.tensor(a, dtype=ember.float64, requires_grad=True)


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)  # an output
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)  # an input
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2.0 * grad * x


class ScaledSumAndProduct(Function):
    """(scale * (a + b), a * b) with a float argument: two outputs, three arguments."""

    @staticmethod
    def forward(ctx, a, scale, b):
        ctx.scale = scale
        ctx.save_for_backward(a, b)
        return (a + b) * scale, a * b

    @staticmethod
    def backward(ctx, g_sum, g_prod):
        a, b = ctx.saved_tensors
        da = g_sum * ctx.scale + g_prod * b if ctx.needs_input_grad[0] else None
        db = g_sum * ctx.scale + g_prod * a if ctx.needs_input_grad[2] else None
        return da, None, db


def test_exp_and_square_match_finite_differences_and_the_built_in_ops():
    fd_check(Exp.apply, X)
    fd_check(Square.apply, X)
    for fn, builtin in ((Exp.apply, ember.exp), (Square.apply, lambda t: t * t)):
        x, x2 = leaf(), leaf()
        w = ember.tensor(np.random.default_rng(0).standard_normal(X.shape))
        (fn(x) * w).sum().backward()
        (builtin(x2) * w).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-14)
        np.testing.assert_allclose(fn(leaf()).detach().numpy(), builtin(leaf()).detach().numpy())


@pytest.mark.parametrize("fn, second", [
    (Exp.apply, lambda x: np.exp(x)), (Square.apply, lambda x: np.full_like(x, 2.0))])
def test_second_derivative_through_create_graph(fn, second):
    """backward written with ember ops is recorded under create_graph: saved inputs and outputs
    come back with their history, so the gradient differentiates again."""
    x = leaf()
    (dx,) = ember.autograd.grad(fn(x).sum(), x, create_graph=True)
    assert dx.requires_grad
    (ddx,) = ember.autograd.grad(dx.sum(), x)
    np.testing.assert_allclose(ddx.numpy(), second(X), rtol=1e-12)


def test_several_outputs_a_number_argument_and_needs_input_grad():
    a, b = leaf(), ember.tensor(X[::-1].copy(), dtype=ember.float64)  # b requires no grad
    s, p = ScaledSumAndProduct.apply(a, 3.0, b)
    (s.sum() + 2 * p.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), 3.0 + 2 * X[::-1], rtol=1e-14)
    assert b.grad is None

    def both(a, b):
        s, p = ScaledSumAndProduct.apply(a, 0.5, b)
        return s * p

    fd_check(both, X, X[::-1] + 1)


def test_only_one_output_used_gets_zeros_for_the_other():
    a, b = leaf(), leaf(X + 1)
    _, p = ScaledSumAndProduct.apply(a, 3.0, b)
    p.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), X + 1)


def test_the_call_is_one_node_of_the_printed_graph():
    y = Exp.apply(leaf())
    assert y.op == "custom_function"
    text = str(y.graph())
    assert "custom_function(%0) {function=Exp" in text
    assert "custom_function_backward" in text


def test_non_differentiable_outputs_and_no_grad():
    class WithMask(Function):
        @staticmethod
        def forward(ctx, x):
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            y = x * 2.0
            return y, mask, y.detach() + 1

        @staticmethod
        def backward(ctx, g, g_mask, g_plus):
            assert g_mask is None  # a bool output has no gradient
            return 2.0 * g + g_plus

    x = leaf()
    y, mask, plus = WithMask.apply(x)
    assert y.requires_grad and plus.requires_grad and not mask.requires_grad
    (y.sum() + plus.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(X.shape, 3.0))
    with ember.no_grad():
        z = Exp.apply(leaf())
    assert not z.requires_grad and z.op is None
    assert Exp.apply(ember.tensor(X)).op is None  # no input requires grad


def test_backward_runs_once_per_pass_and_frees_its_state():
    calls = []

    class Counted(Exp):
        @staticmethod
        def backward(ctx, grad):
            calls.append(1)
            return Exp.backward(ctx, grad)

    x = leaf()
    y = Counted.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert len(calls) == 2
    with pytest.raises(ember.ValueError, match="retain_graph"):
        y.backward()


def test_the_context_is_freed_with_the_graph():
    class Holder(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.big = np.zeros(10)
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = leaf()
    y = Holder.apply(x)
    assert any(isinstance(o, ember.autograd.FunctionCtx) for o in gc.get_objects())
    y.sum().backward()
    del y
    gc.collect()
    assert not any(isinstance(o, ember.autograd.FunctionCtx) for o in gc.get_objects())


def test_wrong_number_of_gradients_is_an_error():
    class TooMany(Exp):
        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(ember.ValueError,
                       match=r"TooMany.backward returned 2 gradients but forward takes 1 "
                             r"arguments"):
        TooMany.apply(leaf()).sum().backward()


def test_wrong_shape_of_gradient_is_an_error():
    class WrongShape(Exp):
        @staticmethod
        def backward(ctx, grad):
            return grad.sum(0)

    with pytest.raises(ember.ShapeError,
                       match=r"WrongShape.backward.*gradient of input 0 is f64\[3\] but the "
                             r"input is f64\[2,3\]"):
        WrongShape.apply(leaf()).sum().backward()


def test_other_errors():
    class GradForNumber(ScaledSumAndProduct):
        @staticmethod
        def backward(ctx, g_sum, g_prod):
            return g_sum, g_sum, g_sum

    s, _ = GradForNumber.apply(leaf(), 2.0, leaf())
    with pytest.raises(ember.ValueError, match="argument 1 of forward is not a tensor"):
        s.sum().backward()

    class ReturnsList(Function):
        @staticmethod
        def forward(ctx, x):
            return [x * 1.0]

    with pytest.raises(ember.ValueError, match="ReturnsList.forward returned list"):
        ReturnsList.apply(leaf())

    class SavesNumber(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(2.0)

    with pytest.raises(ember.ValueError, match="save_for_backward: argument 0 is a float"):
        SavesNumber.apply(leaf())
    with pytest.raises(ember.ValueError, match="saved_tensors: read them in backward"):
        ember.autograd.FunctionCtx(()).saved_tensors

    x = leaf()
    y = Square.apply(x)
    with ember.no_grad():
        x.add_(1.0)  # the saved input changed before backward
    with pytest.raises(ember.ValueError, match="changed in place"):
        y.sum().backward()


# ---- gradcheck ----

def test_gradcheck_passes_for_correct_gradients():
    assert gradcheck(ember.tanh, leaf())
    assert gradcheck(lambda a, b: (a @ b, a.sum()), (leaf(), leaf(X.T.copy())))
    assert gradcheck(Exp.apply, (leaf(),))
    assert gradcheck(lambda a, k: a * k, (leaf(), 3.0))  # a number among the inputs
    x = leaf()
    assert gradcheck(lambda a: a[:, ::2].t() * 2.0, x.t())  # a non-contiguous input


class WrongExp(Exp):
    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return 2.0 * grad * y  # twice the true gradient


def test_gradcheck_fails_for_a_wrong_function():
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongExp.apply, leaf())
    message = str(info.value)
    assert "Jacobian of output 0 with respect to input 0" in message
    assert "at 6 of 36 elements" in message
    assert f"backward gives {2 * np.exp(0.5):.6g}, central differences {np.exp(0.5):.6g}" \
        in message
    assert isinstance(info.value, ember.ValueError)
    assert gradcheck(WrongExp.apply, leaf(), raise_exception=False) is False


def test_gradcheck_catches_a_missing_gradient():
    class Detached(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3.0

        @staticmethod
        def backward(ctx, grad):
            return None  # claims no dependence

    with pytest.raises(GradcheckError, match="backward gives 0, central differences 3"):
        gradcheck(Detached.apply, leaf())


def test_gradcheck_argument_errors():
    with pytest.raises(ember.DTypeError,
                       match="input 0 is ember.float32; finite differences need float64"):
        gradcheck(ember.tanh, ember.tensor(X, dtype=ember.float32, requires_grad=True))
    with pytest.raises(ember.ValueError, match="no input requires grad"):
        gradcheck(ember.tanh, ember.tensor(X))
