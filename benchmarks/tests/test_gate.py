"""gate.py end to end, with ember_bench replaced by a small script per side whose timings are set
by the test (and disturbed by bursts of noise), and the base's worktree by a crafted commit: the
side-by-side verdicts, the new and failed cases, the allocator against the baseline, the table."""

import json
import stat
import sys
from pathlib import Path

from test_compare import row, write

import gate

RELU = "elementwise/relu/n=262144"
CHURN = "memory/churn/n=1048576 steps=100"

FAKE_BENCH = """#!{python}
# A stand-in for ember_bench: prints the JSON the real one prints for one case.
import json, sys
from pathlib import Path
case = sys.argv[-1]
op = case.split(":")[0]
times = {times!r}
if op in {fails!r}:
    sys.exit("ember_bench: unknown case " + case)
if op == "churn":
    print(json.dumps({{"case": case, "peak_bytes": {peak}, "reserved_bytes": 4096,
                      "system_allocations": 3, "allocations": 300}}))
    sys.exit()
counter = Path({counter!r})
calls = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(calls))
ms = times[op] * ({burst} if calls % 4 == 0 else 1.0)  # every fourth call a burst of load
print(json.dumps({{"case": case, "median_ms": ms, "q1_ms": ms, "q3_ms": ms, "min_ms": ms}}))
"""


def fake_bench(tmp_path: Path, name: str, relu_ms: float, burst: float = 1.0, fails=(),
               peak: int = 4096) -> Path:
    path = tmp_path / name
    path.write_text(FAKE_BENCH.format(python=sys.executable, times={"relu": relu_ms},
                                      fails=list(fails), peak=peak, burst=burst,
                                      counter=str(tmp_path / f"{name}.calls")))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def gate_main(tmp_path, monkeypatch, head: Path, base: Path, baseline_rows=None,
              cases=(RELU,), rounds=9):
    """gate.py with both sides given as programs and the base commit taken as found."""
    monkeypatch.setattr(gate.worktree, "resolve", lambda repo, rev: rev.ljust(40, "0"))
    monkeypatch.setattr(gate.worktree, "checkout", lambda repo, commit, where: where)
    baseline = write(tmp_path / "baseline.csv", baseline_rows or [row()])
    out = tmp_path / "gate"
    code = gate.main(["--base", "abc123", "--baseline", baseline, "--out", str(out),
                      "--head-bench", str(head), "--base-bench", str(base),
                      "--rounds", str(rounds), *(f"--case={c}" for c in cases)])
    return code, (out / "gate.md").read_text(), out


def test_the_same_code_passes_despite_bursts_of_load(tmp_path, monkeypatch):
    code, table, _ = gate_main(tmp_path, monkeypatch,
                               fake_bench(tmp_path, "head", 1.0, burst=3.0),
                               fake_bench(tmp_path, "base", 1.0, burst=3.0))
    assert code == 0, table
    assert "| ok | elementwise | relu | n=262144 | time | base abc123000000 |" in table
    assert "0 failed, 0 regressed" in table


def test_a_kernel_twice_as_slow_fails_even_with_noise(tmp_path, monkeypatch):
    code, table, out = gate_main(tmp_path, monkeypatch,
                                 fake_bench(tmp_path, "head", 2.0, burst=3.0),
                                 fake_bench(tmp_path, "base", 1.0, burst=3.0))
    assert code == 1
    assert "| **regressed** | elementwise | relu | n=262144 | time | base abc123000000 | 1 | 2 |" \
        in table
    side = (out / "side-by-side.csv").read_text()
    assert "base:abc123000000" in side and ",time,ms,lower,2," in side


def test_a_small_slowdown_within_the_threshold_passes(tmp_path, monkeypatch):
    code, table, _ = gate_main(tmp_path, monkeypatch, fake_bench(tmp_path, "head", 1.1),
                               fake_bench(tmp_path, "base", 1.0))
    assert code == 0, table


def test_a_faster_head_is_an_improvement(tmp_path, monkeypatch):
    code, table, _ = gate_main(tmp_path, monkeypatch, fake_bench(tmp_path, "head", 0.5),
                               fake_bench(tmp_path, "base", 1.0))
    assert code == 0 and "| improved | elementwise | relu |" in table


def test_a_case_the_base_lacks_is_new(tmp_path, monkeypatch):
    code, table, _ = gate_main(tmp_path, monkeypatch, fake_bench(tmp_path, "head", 1.0),
                               fake_bench(tmp_path, "base", 1.0, fails=["relu"]))
    assert code == 0 and "| new | elementwise | relu | n=262144 |" in table


def test_a_case_the_head_cannot_run_fails_the_gate(tmp_path, monkeypatch):
    code, table, _ = gate_main(tmp_path, monkeypatch,
                               fake_bench(tmp_path, "head", 1.0, fails=["relu"]),
                               fake_bench(tmp_path, "base", 1.0))
    assert code == 1 and "| **failed** | elementwise | relu |" in table
    assert "unknown case relu:n=262144" in table


def test_allocator_bytes_are_judged_against_base_and_baseline(tmp_path, monkeypatch):
    baseline = [{**row(metric="peak_bytes", value=4096.0, ref=None), "benchmark": "memory",
                 "case": "churn", "params": "n=1048576 steps=100"}]
    code, table, _ = gate_main(tmp_path, monkeypatch, fake_bench(tmp_path, "head", 1.0, peak=8192),
                               fake_bench(tmp_path, "base", 1.0), baseline, cases=(CHURN,))
    assert code == 1
    assert "| **regressed** | memory | churn | n=1048576 steps=100 | peak_bytes | base " in table
    assert "| **regressed** | memory | churn | n=1048576 steps=100 | peak_bytes | baseline |" \
        in table
    assert "| ok | memory | churn | n=1048576 steps=100 | system_allocations | base" in table


def test_the_head_rows_are_written_against_numpy(tmp_path, monkeypatch):
    _, _, out = gate_main(tmp_path, monkeypatch, fake_bench(tmp_path, "head", 1.0),
                          fake_bench(tmp_path, "base", 1.0), rounds=3)
    head = (out / "head.csv").read_text().splitlines()
    assert any(",relu,n=262144,time,ms,lower,1,0,numpy," in line for line in head)


def test_a_missing_base_commit_is_a_clear_error(tmp_path, capsys):
    code = gate.main(["--base", "f" * 40, "--out", str(tmp_path)])
    assert code == 2
    assert "base commit '" + "f" * 40 + "' is not in" in capsys.readouterr().err


def test_every_metric_has_a_gate_rule_in_the_real_file():
    thresholds = gate.load_gate_thresholds(gate.compare.DEFAULT_THRESHOLDS)
    assert thresholds["time"]["gate"] == "rounds"
    assert thresholds["instructions"]["gate"] == "value"
    assert not thresholds["instructions"].get("baseline")  # OpenBLAS, memcpy: CPU-dependent
    assert json.dumps(thresholds)  # plain data
