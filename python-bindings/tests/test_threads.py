"""ember.set_num_threads / ember.get_num_threads: the count, its start-up value from the
environment, bad values, and results that do not change with it."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember


@pytest.fixture
def restore_threads():
    saved = ember.get_num_threads()
    yield
    ember.set_num_threads(saved)


def test_set_then_get_round_trips(restore_threads):
    for n in (1, 3, 2):
        ember.set_num_threads(n)
        assert ember.get_num_threads() == n


@pytest.mark.parametrize("n", [0, -1])
def test_a_count_below_one_is_a_value_error_naming_the_function_and_value(restore_threads, n):
    before = ember.get_num_threads()
    with pytest.raises(ValueError, match=rf"set_num_threads: got {n} threads"):
        ember.set_num_threads(n)
    assert ember.get_num_threads() == before


def count_in_subprocess(**env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS")}
    return subprocess.run([sys.executable, "-c", "import ember; print(ember.get_num_threads())"],
                          env={**clean, **env}, capture_output=True, text=True)


def test_the_start_up_count_comes_from_ember_num_threads_then_omp_num_threads():
    assert count_in_subprocess(EMBER_NUM_THREADS="3", OMP_NUM_THREADS="5").stdout.strip() == "3"
    assert count_in_subprocess(OMP_NUM_THREADS="5,2").stdout.strip() == "5"
    assert count_in_subprocess().stdout.strip() == str(len(os.sched_getaffinity(0)))


def test_a_bad_ember_num_threads_raises_a_value_error_naming_it():
    done = count_in_subprocess(EMBER_NUM_THREADS="many")
    assert done.returncode != 0
    assert "ValueError" in done.stderr and "EMBER_NUM_THREADS: 'many'" in done.stderr


def test_own_kernels_give_the_same_bits_on_one_thread_and_on_two(restore_threads):
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal(1 << 20).astype(np.float32))
    m = ember.from_numpy(rng.standard_normal((700, 600)).astype(np.float32))

    def run():
        return [t.numpy().copy() for t in
                (x.exp(), x + x, x.sum(), m.sum(0), m.softmax(1), m @ m.T)]

    ember.set_num_threads(1)
    one = run()
    ember.set_num_threads(2)
    *own, gemm = run()
    for a, b in zip(one, own):
        np.testing.assert_array_equal(a, b)
    # The BLAS may compute a band's edge tiles with another kernel: float rounding, not bits.
    np.testing.assert_allclose(gemm, one[-1], rtol=1e-5, atol=1e-4)
