"""baseline.py: each row of the baseline is the median of its runs, the rest of the row from the
same run."""

from test_compare import row, write

import baseline
from harness.schema import read_csv


def as_read(tmp_path, rows, name):
    """rows as read_csv returns them (numbers as float, empty as None)."""
    return read_csv(write(tmp_path / name, rows))


def test_each_row_takes_the_run_with_its_median_figure(tmp_path):
    runs = [as_read(tmp_path, [row(value=v), row(case="mul", value=w)], f"r{i}.csv")
            for i, (v, w) in enumerate([(30.0, 10.0), (10.0, 11.0), (12.0, 40.0)])]
    add, mul = baseline.median_rows(runs)
    assert (add["case"], add["value"], add["ratio"]) == ("add", 12.0, 1.2)
    assert (mul["case"], mul["value"]) == ("mul", 11.0)


def test_rows_without_a_ratio_use_the_value_and_missing_rows_are_skipped(tmp_path):
    bytes_row = {**row(metric="peak_bytes", value=100.0, ref=None)}
    runs = [as_read(tmp_path, [{**bytes_row, "value": v}], f"r{i}.csv")
            for i, v in enumerate([100.0, 90.0])]
    runs.append([])  # a run that lacks the row
    (only,) = baseline.median_rows(runs)
    assert only["value"] == 90.0  # the lower median of 90 and 100


def test_main_runs_the_quick_subset_n_times_and_writes_the_medians(tmp_path, monkeypatch):
    values = iter([30.0, 10.0, 12.0])
    calls = []

    def fake_main(argv):
        calls.append(argv)
        write(argv[argv.index("--out") + 1], [row(value=next(values))])
        return 0

    monkeypatch.setattr(baseline.run, "main", fake_main)
    out = tmp_path / "baseline.csv"
    assert baseline.main([str(out), "--runs", "3", "--", "--threads", "1"]) == 0
    assert all(c[:1] == ["--quick"] and "--threads" in c for c in calls) and len(calls) == 3
    assert [r["value"] for r in read_csv(out)] == [12.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.csv"]  # run files removed
