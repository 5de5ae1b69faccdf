"""Compiled mode's memory planner (ember._core._plan_intervals) as a property: over random sets
of buffers with live intervals, and over the buffers of random graphs, no two buffers live at the
same step overlap, every offset is aligned, and lower bound <= planned peak <= naive peak, with
the bounds checked against a brute-force count."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import _core


def check(sizes, starts, ends, alignment=64):
    plan = _core._plan_intervals(sizes, starts, ends, alignment)
    offsets = plan["offsets"]
    aligned = [(s + alignment - 1) // alignment * alignment for s in sizes]
    assert len(offsets) == len(sizes)
    for k, off in enumerate(offsets):
        assert off % alignment == 0
        assert off >= 0
        assert off + aligned[k] <= plan["planned_peak"]
    for a in range(len(sizes)):
        for b in range(a + 1, len(sizes)):
            if aligned[a] == 0 or aligned[b] == 0:
                continue
            if starts[a] <= ends[b] and starts[b] <= ends[a]:  # live at one step
                assert (offsets[a] + aligned[a] <= offsets[b]
                        or offsets[b] + aligned[b] <= offsets[a]), (a, b, plan)
    steps = range(min(starts, default=0), max(ends, default=-1) + 1)
    most = max((sum(aligned[k] for k in range(len(sizes)) if starts[k] <= t <= ends[k])
                for t in steps), default=0)
    assert plan["lower_bound"] == most
    assert plan["naive_peak"] == sum(aligned)
    assert plan["lower_bound"] <= plan["planned_peak"] <= plan["naive_peak"]
    return plan


@st.composite
def interval_sets(draw):
    n = draw(st.integers(0, 30))
    sizes = draw(st.lists(st.integers(0, 1 << 16), min_size=n, max_size=n))
    starts = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
    lengths = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    return sizes, starts, [s + d for s, d in zip(starts, lengths)]


@settings(max_examples=300, deadline=None)
@given(interval_sets(), st.sampled_from([1, 8, 64, 512]))
def test_random_interval_sets(case, alignment):
    check(*case, alignment)


@st.composite
def random_graphs(draw):
    """Buffers of a random graph in execution order: node k makes a buffer that each later node
    reads with some probability; a buffer lives from its node to its last read."""
    n = draw(st.integers(1, 25))
    sizes, starts, ends = [], [], []
    for k in range(n):
        readers = draw(st.lists(st.integers(k + 1, n + 3), max_size=3))
        sizes.append(draw(st.sampled_from([4, 100, 512, 4096, 65536, 1 << 20])))
        starts.append(k)
        ends.append(max(readers, default=k))
    return sizes, starts, ends


@settings(max_examples=300, deadline=None)
@given(random_graphs())
def test_random_graphs(case):
    plan = check(*case)
    # Buffers of a chain (each read only by the next node) need two at a time, never more.
    if all(e == s for s, e in zip(case[1], case[2])):
        assert plan["planned_peak"] == plan["lower_bound"]


def test_a_chain_reuses_two_buffers():
    sizes = [1000] * 10
    plan = check(sizes, list(range(10)), [k + 1 for k in range(10)])
    assert plan["planned_peak"] == 2 * 1024
    assert plan["naive_peak"] == 10 * 1024


@pytest.mark.parametrize("args", [([1, 2], [0], [0, 1]), ([1], [3], [2]), ([-1], [0], [0])])
def test_bad_intervals_are_value_errors(args):
    with pytest.raises(ember.ValueError, match="plan_intervals"):
        _core._plan_intervals(*args)


def test_alignment_must_be_a_power_of_two():
    with pytest.raises(ember.ValueError, match="power of two"):
        _core._plan_intervals([1], [0], [0], 48)
