"""ember.Generator: its own stream (same seed, same numbers), the default stream untouched, its
state saved and restored, and generator= on every random function that takes one."""

import threading

import numpy as np
import pytest

import ember
from ember.data import DataLoader, TensorDataset

DRAWS = {
    "rand": lambda g: ember.rand(3, 4, generator=g),
    "randn": lambda g: ember.randn(5, generator=g, dtype=ember.float64),
    "randint": lambda g: ember.randint(0, 100, (6,), generator=g),
    "randint_high": lambda g: ember.randint(10, (6,), generator=g),
    "randperm": lambda g: ember.randperm(9, generator=g),
    "uniform_": lambda g: ember.empty(4).uniform_(-2, 3, generator=g),
    "normal_": lambda g: ember.empty(4).normal_(1.0, 2.0, generator=g),
    "init.uniform_": lambda g: ember.nn.init.uniform_(ember.empty(4), generator=g),
    "init.normal_": lambda g: ember.nn.init.normal_(ember.empty(4), generator=g),
    "init.trunc_normal_": lambda g: ember.nn.init.trunc_normal_(ember.empty(4), generator=g),
    "init.kaiming_uniform_": lambda g: ember.nn.init.kaiming_uniform_(ember.empty(3, 2),
                                                                      generator=g),
    "init.xavier_normal_": lambda g: ember.nn.init.xavier_normal_(ember.empty(3, 2), generator=g),
    "init.orthogonal_": lambda g: ember.nn.init.orthogonal_(ember.empty(3, 3), generator=g),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_same_seed_same_numbers_and_the_default_stream_untouched(name):
    draw = DRAWS[name]
    ember.manual_seed(0)
    expected_default = [ember.rand(3).numpy() for _ in range(2)]

    ember.manual_seed(0)
    first = [draw(ember.Generator().manual_seed(11)).numpy() for _ in range(2)]
    g = ember.Generator().manual_seed(11)
    a, b = draw(g).numpy(), draw(g).numpy()
    # Draws between the default generator's draws leave its stream as it was.
    got_default = [ember.rand(3).numpy() for _ in range(2)]
    for got, want in zip(got_default, expected_default):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(first[0], first[1])  # same seed, same numbers
    np.testing.assert_array_equal(a, first[0])
    assert not np.array_equal(a, b)  # the generator's own stream moves on
    c = draw(ember.Generator().manual_seed(12)).numpy()
    assert not np.array_equal(a, c)


def test_a_generator_matches_the_default_generator_seeded_alike():
    ember.manual_seed(5)
    want = ember.randn(7).numpy()
    got = ember.randn(7, generator=ember.Generator().manual_seed(5)).numpy()
    np.testing.assert_array_equal(got, want)


def test_state_round_trip_and_seeds():
    g = ember.Generator()
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(3) is g and g.initial_seed() == 3
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1  # two's complement, as PyTorch's
    with pytest.raises(ember.ValueError, match="2\\*\\*64"):
        g.manual_seed(2**64)
    g.manual_seed(3)
    ember.rand(2, generator=g)
    state = g.get_state()
    a = ember.rand(4, generator=g).numpy()
    assert g.set_state(state) is g
    np.testing.assert_array_equal(ember.rand(4, generator=g).numpy(), a)
    state["offset"] = 99  # get_state returns a copy
    assert g.get_state()["offset"] != 99
    seed = g.seed()
    assert g.initial_seed() == seed and g.get_state()["offset"] == 0
    assert ember.Generator().seed() != seed
    assert str(g.device) == "cpu"


def test_bad_generators_and_states_are_named():
    with pytest.raises(ember.DTypeError, match="expected an ember.Generator"):
        ember.rand(2, generator=np.random.default_rng(0))
    with pytest.raises(ember.ValueError, match="not a state"):
        ember.Generator().set_state({"seed": 1})


def test_data_loader_shuffles_with_a_generator():
    data = TensorDataset(ember.arange(10))

    def epoch(g):
        return np.concatenate([b[0].numpy() for b in DataLoader(data, 4, shuffle=True,
                                                                   generator=g)])

    a = epoch(ember.Generator().manual_seed(1))
    b = epoch(ember.Generator().manual_seed(1))
    np.testing.assert_array_equal(a, b)
    assert sorted(a.tolist()) == list(range(10))
    g = ember.Generator().manual_seed(1)
    assert not np.array_equal(epoch(g), epoch(g))  # each epoch draws a new order


def test_generators_in_threads_draw_their_own_streams():
    want = {seed: [ember.rand(64, generator=g).numpy() for _ in range(20)]
            for seed, g in ((s, ember.Generator().manual_seed(s)) for s in range(4))}
    got = {}

    def work(seed):
        g = ember.Generator().manual_seed(seed)
        got[seed] = [ember.rand(64, generator=g).numpy() for _ in range(20)]

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seed in range(4):
        np.testing.assert_array_equal(np.stack(got[seed]), np.stack(want[seed]))
