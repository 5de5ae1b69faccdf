"""conv_pool's im2col strawman: its rows name it numpy-im2col, and where PyTorch is a reference it
is not timed at all."""

from families.conv_pool import STRAWMAN, ConvCase
from harness.case import Context
from harness.timer import TimerOptions, TimeStats


class Reference:
    def __init__(self, name):
        self.name = name

    def sync(self):
        pass


class Ember:
    def time(self, spec):
        return TimeStats(1.0, 0.9, 1.1, 0.9)


def nothing(r, p):
    return lambda: None


def measured_references(names):
    ctx = Context("cpu", Ember(), TimerOptions(1, 3, 0.0), [Reference(n) for n in names])
    return [m.reference for m in ConvCase("conv2d", {"n": 1}, nothing, nothing).measure(ctx)]


def test_the_im2col_rows_name_the_strawman():
    assert measured_references(["numpy"]) == [STRAWMAN]


def test_no_im2col_rows_where_torch_is_a_reference():
    assert measured_references(["numpy", "torch"]) == ["torch"]
