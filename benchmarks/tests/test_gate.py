"""gate.py with run.py replaced by crafted runs: a regression that does not show again passes, one
that persists fails with the table, and only the regressed cases are measured again."""

from test_compare import THRESHOLDS, row, write

import gate
from harness.schema import read_csv


def fake_runs(monkeypatch, runs: list[list[dict]]) -> list[list[str]]:
    """Makes run.main write runs[0], runs[1], ... in turn; returns the argument lists it got."""
    calls = []

    def fake_main(argv):
        calls.append(argv)
        write(argv[argv.index("--out") + 1], runs[len(calls) - 1])
        return 0

    monkeypatch.setattr(gate.run, "main", fake_main)
    return calls


def gate_main(tmp_path, base_rows, capsys, *options):
    thresholds = tmp_path / "thresholds.toml"
    thresholds.write_text(THRESHOLDS)
    new = tmp_path / "new.csv"
    code = gate.main([write(tmp_path / "base.csv", base_rows), str(new), "--thresholds",
                      str(thresholds), *options, "--", "--rounds", "3"])
    return code, capsys.readouterr().out, read_csv(new)


def test_a_regression_that_does_not_show_again_passes(tmp_path, capsys, monkeypatch):
    base = [row(), row(case="mul")]
    calls = fake_runs(monkeypatch, [[row(value=25.0), row(case="mul")],  # add: 2.5x, noise
                                    [row(value=11.0)]])                   # add again: 1.1x
    code, out, rows = gate_main(tmp_path, base, capsys)
    assert code == 0
    assert "0 regressed" in out
    assert calls[0][:1] == ["--quick"] and "--rounds" in calls[0]
    assert "--case=elementwise/add/n=1024" in calls[1]      # only the regressed case, again
    assert not any(a.startswith("--case=elementwise/mul") for a in calls[1])
    assert [r["value"] for r in rows] == [11.0, 10.0]      # NEW keeps the better figure


def test_a_regression_that_persists_fails_with_the_table(tmp_path, capsys, monkeypatch):
    calls = fake_runs(monkeypatch, [[row(value=25.0)], [row(value=24.0)], [row(value=26.0)],
                                    [row(value=27.0)]])
    code, out, rows = gate_main(tmp_path, [row()], capsys)
    assert code == 1
    assert len(calls) == 4                                  # the run and three confirmations
    assert ("| **regressed** | cpu | elementwise | add | n=1024 | time | numpy | ratio | 1 | 2.4 "
            in out)
    assert rows[0]["value"] == 24.0


def test_confirm_zero_judges_the_first_run(tmp_path, capsys, monkeypatch):
    calls = fake_runs(monkeypatch, [[row(value=25.0)]])
    code, _, _ = gate_main(tmp_path, [row()], capsys, "--confirm", "0")
    assert code == 1 and len(calls) == 1


def test_better_of_follows_the_metric_direction():
    slow, fast = row(value=20.0), row(value=10.0)
    assert gate.better_of(slow, fast) is fast
    low_bw, high_bw = (row(metric="bandwidth", value=v, better="higher") for v in (1.0, 2.0))
    assert gate.better_of(high_bw, low_bw) is high_bw
    bytes_a, bytes_b = ({**row(metric="peak_bytes", value=v, ref=None), "ratio": None}
                        for v in (100.0, 90.0))
    assert gate.better_of(bytes_a, bytes_b) is bytes_b      # no ratio: judged on the value
