"""Ember's side through its Python bindings (via=python): which cases get one, that it is timed in
this process rather than by ember_bench, and that a run without the ember package skips those
cases, saying why, instead of failing. Stand-ins throughout: neither ember nor torch needed."""

import run
from harness import bindings, ember
from harness.case import Context, KernelCase, Skipped
from harness.schema import read_csv
from harness.timer import TimerOptions

TIMER = TimerOptions(1, 3, 0.0)


class Side:
    """A stand-in for a reference or for harness.bindings.EmberPython: counts its calls."""

    def __init__(self, name):
        self.name, self.calls = name, 0

    def sync(self):
        pass


def counting(r, p):
    def call():
        r.calls += 1

    return call


class NoProgram:
    def time(self, spec):
        raise AssertionError(f"ember_bench was asked to time {spec}")


class Family:
    def __init__(self, cases):
        self._cases = cases

    def cases(self, device):
        return self._cases


def test_a_case_with_an_ember_builder_gets_a_python_variant_after_it():
    with_python = KernelCase("add", {"n": 4}, counting, counting, quick=True, ember=counting)
    without = KernelCase("matmul", {"n": 4}, counting, counting, quick=True)
    names = [run.case_name(f, c) for f, c in
             run.select_cases({"f": Family([with_python, without])}, "cpu", False, [])]
    assert names == ["f/add/n=4", "f/add/n=4 via=python", "f/matmul/n=4"]


def test_the_python_variant_is_not_quick():
    case = KernelCase("add", {"n": 4}, counting, quick=True, ember=counting)
    quick = list(run.select_cases({"f": Family([case])}, "cpu", True, []))
    assert [c.params for _, c in quick] == [{"n": 4}]


def test_the_python_side_is_timed_in_process_beside_the_reference():
    ours, numpy = Side("ember"), Side("numpy")
    ctx = Context("cpu", NoProgram(), TIMER, [numpy], python=ours)
    case = KernelCase("add", {"n": 4}, counting, ember=counting, bytes=48).on_python()
    rows = case.measure(ctx)
    assert [(m.metric, m.reference) for m in rows] == [("time", "numpy"), ("bandwidth", "numpy")]
    assert ours.calls > 0 and numpy.calls > 0
    assert all(m.ratio is not None for m in rows)


def test_without_the_package_the_case_is_skipped_with_the_reason():
    ctx = Context("cpu", None, TIMER, [], python_missing="no ember here")
    case = KernelCase("add", {"n": 4}, counting, ember=counting).on_python()
    try:
        case.measure(ctx)
    except Skipped as e:
        assert "no ember here" in str(e)
    else:
        raise AssertionError("expected Skipped")


def test_a_run_of_python_cases_only_builds_no_ember_bench(tmp_path, monkeypatch, capsys):
    def no_build(*args, **kwargs):
        raise AssertionError("ember_bench was built")

    python_only = [KernelCase("add", {"n": n}, counting, ember=counting).on_python()
                   for n in (1, 2)]
    monkeypatch.setattr(run, "all_families", lambda: {"f": Family(python_only)})
    monkeypatch.setattr(ember, "build", no_build)
    monkeypatch.setattr(bindings, "load", lambda device: (None, "no ember here"))
    out = tmp_path / "o.csv"
    assert run.main(["--out", str(out)]) == 0
    assert read_csv(out) == []
    assert "2 case(s) skipped: no ember here" in capsys.readouterr().err


def test_an_error_of_the_python_side_fails_that_case_only(tmp_path, monkeypatch, capsys):
    def raising(r, p):
        raise ValueError("bad shape")

    cases = [KernelCase("bad", {"n": 1}, ember=raising).on_python(),
             KernelCase("good", {"n": 1}, ember=counting).on_python()]
    monkeypatch.setattr(run, "all_families", lambda: {"f": Family(cases)})
    monkeypatch.setattr(bindings, "load", lambda device: (Side("ember"), ""))
    out = tmp_path / "o.csv"
    assert run.main(["--out", str(out), "--repeat", "3", "--min-sample-ms", "0"]) == 1
    assert [r["case"] for r in read_csv(out)] == ["good"]
    assert "FAILED f bad n=1 via=python: ValueError: bad shape" in capsys.readouterr().err
