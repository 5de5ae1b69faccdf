"""The threads family: its cases, the busy machine it measures beside (started and killed), and
a case measured through the real ember package (skipped without it), without PyTorch."""

import pytest

from families import threads
from harness.bindings import EmberPython
from harness.case import Context
from harness.timer import TimerOptions


def test_every_step_at_both_counts_idle_and_busy():
    names = {(c.op, c.params["threads"], c.params["load"], c.params["via"])
             for c in threads.cases("cpu")}
    assert names == {(op, t, load, "python") for op in ("mlp_step", "cnn_step")
                     for t in ("default", "1") for load in ("idle", "busy")}
    assert threads.cases("cuda") == []


def test_the_busy_processes_spin_until_the_block_ends():
    with threads.BusyMachine() as busy:
        assert len(busy.procs) == threads.BUSY_PROCESSES
        assert all(p.poll() is None for p in busy.procs)
    assert all(p.returncode is not None for p in busy.procs)


def test_a_case_at_one_thread_gives_ember_its_count_back():
    ember = pytest.importorskip("ember")
    ctx = Context("cpu", None, TimerOptions(1, 3, 0.0), [], python=EmberPython(ember, "cpu"))
    before = ember.get_num_threads()
    case = threads.ThreadsCase("mlp_step", {"batch": 4, "threads": "1", "load": "idle"},
                               torch=threads.mlp_step, ember=threads.mlp_step).on_python()
    (row,) = case.measure(ctx)
    assert row.metric == "time" and row.value > 0
    assert ember.get_num_threads() == before
