"""harness/verdict.py: what counts as a regression between two builds measured in rounds."""

from harness.verdict import bootstrap_median, judge_rounds, judge_value

KEY = ("elementwise", "relu", "n=262144", "time")


def judge(base, head, better="lower", max_worse=0.25):
    return judge_rounds(KEY, "base x", base, head, better, max_worse)


def test_twice_as_slow_in_every_round_regresses():
    v = judge([1.0] * 7, [2.0] * 7)
    assert v.status == "regressed" and v.worse == 2.0 and v.rounds_worse == "7/7"


def test_three_disturbed_rounds_of_nine_do_not_regress():
    v = judge([1.0] * 9, [1.0, 3.0, 1.02, 0.98, 3.5, 1.0, 1.01, 2.5, 0.99])
    assert v.status == "ok" and v.rounds_worse == "3/9"


def test_a_slowdown_in_seven_rounds_of_nine_regresses_though_two_are_fast():
    v = judge([1.0] * 9, [2.0, 2.1, 1.0, 1.9, 2.2, 2.0, 1.1, 2.0, 1.8])
    assert v.status == "regressed" and v.rounds_worse == "7/9"


def test_noise_around_one_is_ok():
    v = judge([1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0], [1.05, 0.9, 1.0, 1.1, 0.95, 1.0, 1.02])
    assert v.status == "ok" and 0.9 < v.low <= v.worse <= v.high < 1.15


def test_the_direction_follows_better():
    assert judge([1.0] * 5, [0.5] * 5, better="higher").status == "regressed"
    assert judge([1.0] * 5, [0.5] * 5, better="lower").status == "improved"


def test_the_interval_is_reproducible():
    values = [0.1, -0.2, 0.05, 0.3, 0.0, -0.1, 0.2]
    assert bootstrap_median(values) == bootstrap_median(values)
    low, high = bootstrap_median(values)
    assert min(values) <= low <= high <= max(values)


def test_counts_are_compared_directly():
    assert judge_value(KEY, "base", 1000, 1019, "lower", 0.02).status == "ok"
    assert judge_value(KEY, "base", 1000, 1021, "lower", 0.02).status == "regressed"
    assert judge_value(KEY, "base", 4096, 4096, "lower", 0.0).status == "ok"
