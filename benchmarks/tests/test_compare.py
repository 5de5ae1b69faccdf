"""compare.py on crafted CSVs: the gate's verdicts, its table and its errors."""

import csv

import compare
from harness.schema import COLUMNS

RUN = {"timestamp": "2026-12-01T10:00:00+00:00", "commit": "abc", "core_version": "0.1.0",
       "numpy_version": "2.4.6", "torch_version": "", "cpu": "Test CPU", "cores": "2",
       "threads": "", "gpu": "", "driver": "", "device": "cpu"}


def row(case="add", metric="time", value=10.0, ref=10.0, better="lower", params="n=1024"):
    unit = {"time": "ms", "bandwidth": "GB/s", "peak_bytes": "B"}[metric]
    return {**RUN, "benchmark": "elementwise", "case": case, "params": params, "metric": metric,
            "unit": unit, "better": better, "value": value, "spread": 0.01,
            "reference": "numpy" if ref else "", "reference_value": ref or "",
            "reference_spread": 0.01 if ref else "", "ratio": value / ref if ref else ""}


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    return str(path)


THRESHOLDS = """
[time]
compare = "ratio"
max_worse = 0.30
[bandwidth]
compare = "ratio"
max_worse = 0.30
[peak_bytes]
compare = "value"
max_worse = 0.0
"""


def run(tmp_path, base_rows, new_rows, capsys):
    """compare.py on two crafted CSVs, with 30 % allowed on timings and nothing on bytes."""
    thresholds = tmp_path / "thresholds.toml"
    thresholds.write_text(THRESHOLDS)
    code = compare.main([write(tmp_path / "base.csv", base_rows),
                         write(tmp_path / "new.csv", new_rows), "--thresholds", str(thresholds)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_regression_past_threshold_fails_with_table(tmp_path, capsys):
    # time ratio 1.0 -> 1.5: worse by 50 %, past the 30 % allowed
    code, out, _ = run(tmp_path, [row()], [row(value=15.0)], capsys)
    assert code == 1
    assert ("| **regressed** | cpu | elementwise | add | n=1024 | time | numpy | ratio | 1 | 1.5 "
            "| +50.0 % | +30 % |") in out
    assert "1 regressed" in out


def test_noise_within_threshold_passes(tmp_path, capsys):
    code, out, _ = run(tmp_path, [row()], [row(value=11.0)], capsys)
    assert code == 0
    assert "| ok |" in out and "+10.0 %" in out


def test_ratio_is_gated_not_value_when_the_machine_is_slower(tmp_path, capsys):
    # both sides twice as slow (a busy machine): the ratio holds, so no regression
    code, out, _ = run(tmp_path, [row()], [row(value=20.0, ref=20.0)], capsys)
    assert code == 0 and "| ok |" in out


def test_higher_is_better_metric_direction(tmp_path, capsys):
    base = [row(metric="bandwidth", value=10.0, ref=10.0, better="higher")]
    code, out, _ = run(tmp_path, base, [row(metric="bandwidth", value=5.0, ref=10.0,
                                            better="higher")], capsys)
    assert code == 1 and "+100.0 %" in out
    code, out, _ = run(tmp_path, base, [row(metric="bandwidth", value=20.0, ref=10.0,
                                            better="higher")], capsys)
    assert code == 0 and "| improved |" in out


def test_value_metric_without_reference_is_gated_on_value(tmp_path, capsys):
    base = [row(metric="peak_bytes", value=4096.0, ref=None)]
    code, out, _ = run(tmp_path, base, [row(metric="peak_bytes", value=8192.0, ref=None)], capsys)
    assert code == 1 and "| peak_bytes |  | value | 4096 | 8192 |" in out


def test_missing_and_new_rows_are_reported(tmp_path, capsys):
    code, out, _ = run(tmp_path, [row(), row(case="mul")], [row(), row(case="relu")], capsys)
    assert code == 0
    assert "| missing | cpu | elementwise | mul |" in out
    assert "| new | cpu | elementwise | relu |" in out
    assert "1 ok, 1 missing, 1 new" in out


def test_malformed_csv_names_the_line(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [row()])
    not_a_number = {**row(case="mul"), "value": "ten"}
    bad = write(tmp_path / "bad.csv", [row(), not_a_number])  # line 3: header, add, mul
    assert compare.main([base, bad]) == 2
    assert f"{bad}:3: value is 'ten', not a number" in capsys.readouterr().err


def test_wrong_field_count_and_missing_column_name_the_line(tmp_path, capsys):
    base = write(tmp_path / "base.csv", [row()])
    short = tmp_path / "short.csv"
    lines = open(base).read().splitlines()
    short.write_text(lines[0] + "\n" + lines[1] + "\n" + "cpu,elementwise\n")
    assert compare.main([base, str(short)]) == 2
    assert f"{short}:3: 2 fields, the header has {len(COLUMNS)}" in capsys.readouterr().err

    no_ratio = tmp_path / "no_ratio.csv"
    no_ratio.write_text(lines[0].replace(",ratio", "") + "\n")
    assert compare.main([base, str(no_ratio)]) == 2
    assert f"{no_ratio}:1: header lacks the column(s) ratio" in capsys.readouterr().err


def test_every_metric_has_a_threshold_in_the_real_file():
    thresholds = compare.load_thresholds(compare.DEFAULT_THRESHOLDS)
    for metric in ("time", "bandwidth", "throughput", "peak_bytes", "reserved_bytes",
                   "system_allocations", "bytes_at_refusal", "instructions"):
        assert metric in thresholds


def test_a_file_from_before_the_threads_column_still_reads(tmp_path, capsys):
    new = write(tmp_path / "new.csv", [row()])
    lines = open(new).read().splitlines()
    at = lines[0].split(",").index("threads")
    old = tmp_path / "old.csv"
    old.write_text("".join(",".join(f for i, f in enumerate(line.split(",")) if i != at) + "\n"
                           for line in lines))
    assert compare.main([str(old), new]) == 0
    assert "| ok |" in capsys.readouterr().out


def test_metric_without_threshold_is_an_error(tmp_path, capsys):
    thresholds = tmp_path / "t.toml"
    thresholds.write_text('[bandwidth]\ncompare = "ratio"\nmax_worse = 0.3\n')
    base = write(tmp_path / "base.csv", [row()])
    assert compare.main([base, base, "--thresholds", str(thresholds)]) == 2
    assert "no threshold for metric 'time'" in capsys.readouterr().err
