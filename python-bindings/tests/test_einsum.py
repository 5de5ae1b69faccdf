"""ember.einsum against numpy.einsum: explicit and implicit outputs, '...', diagonals and traces,
broadcasting, non-contiguous operands, and gradients against finite differences."""

import numpy as np
import pytest
from gradcheck import gradcheck

import ember

RNG = np.random.default_rng(7)

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(5,), (5,)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),  # implicit output: alphabetical, so a transpose
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("bii->bi", [(2, 3, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("i...->...", [(3, 2, 4)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ijk,jkl,lm->im", [(2, 3, 4), (3, 4, 5), (5, 2)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij,ij->i", [(3, 4), (1, 4), (3, 1)]),
    ("Aa,aB->AB", [(2, 3), (3, 4)]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    (" i j , j k -> i k ", [(3, 4), (4, 5)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
]


@pytest.mark.parametrize("equation, shapes", CASES)
def test_einsum_matches_numpy(equation, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    out = ember.einsum(equation, *[ember.tensor(a) for a in arrays])
    expected = np.einsum(equation.replace(" ", ""), *arrays)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_einsum_takes_a_list_and_non_contiguous_operands():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 4))
    ta, tb = ember.tensor(a).T, ember.tensor(b).T
    assert not ta.is_contiguous() and not tb.is_contiguous()
    out = ember.einsum("ij,jk->ik", [ta, tb])
    np.testing.assert_allclose(out.numpy(), a.T @ b.T, rtol=1e-12)
    sliced = ember.tensor(RNG.standard_normal((6, 6)))[::2, 1::2]
    np.testing.assert_allclose(ember.einsum("ii->i", sliced).numpy(),
                               np.diagonal(sliced.numpy()), rtol=1e-12)


def test_einsum_float32_keeps_its_dtype():
    a = ember.randn(3, 4)
    assert ember.einsum("ij,kj->ik", a, a).dtype == ember.float32


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("...ij,...jk", [(2, 1, 2, 3), (2, 3, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (2, 3, 2), (2, 2)]),
    ("ij,ij,ij->i", [(2, 3), (1, 3), (2, 1)]),
    ("i,j->ij", [(3,), (2,)]),
])
def test_einsum_gradients(equation, shapes):
    gradcheck(lambda *xs: ember.einsum(equation, *xs), *[RNG.standard_normal(s) for s in shapes])


@pytest.mark.parametrize("equation, shapes, error, words", [
    ("ij,jk->ik", [(3, 4)], ember.ValueError, "operand term"),
    ("ij->ik", [(3, 4)], ember.ValueError, "'k'"),
    ("ij->ii", [(3, 4)], ember.ValueError, "repeated"),
    ("ijk->i", [(3, 4)], ember.ValueError, "names 3 dims"),
    ("ij,jk->ik", [(3, 4), (5, 6)], ember.ShapeError, "'j' stands for dims of sizes 4 and 5"),
    ("ii->i", [(3, 4)], ember.ShapeError, "sizes 3 and 4"),
    ("ii->i", [(1, 4)], ember.ShapeError, "diagonal"),
    ("i1->i", [(3, 4)], ember.ValueError, "'1'"),
    ("....->", [(3,)], ember.ValueError, "'.'"),
])
def test_einsum_errors_name_the_problem(equation, shapes, error, words):
    with pytest.raises(error, match=words):
        ember.einsum(equation, *[ember.zeros(s) for s in shapes])


def test_einsum_names_an_operand_that_is_not_a_tensor():
    with pytest.raises(ember.DTypeError, match="operand 1 is a list"):
        ember.einsum("i,i", ember.zeros(2), [1.0, 2.0])
