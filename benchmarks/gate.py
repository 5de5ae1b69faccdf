"""The regression gate: the code under test against a base commit, both built and measured on this
machine in this run, their rounds interleaved. What a pull-request check runs.

  python3 benchmarks/gate.py [--base REV] [--rounds N] [--out DIR] [--cmake-arg ARG ...]

1. The base is --base REV, or by default the commit the committed baseline
   (benchmarks/baseline/cpu-quick.csv) was measured at; it is checked out in a git worktree,
   build/gate/base.
2. ember_bench is built twice, for the CPU, each side building its own core-runtime with the same
   options: the head from this checkout as it is (uncommitted changes included), the base from the
   worktree, at the same path inside each tree, so that ccache serves the base's files the head
   left unchanged.
3. The quick subset runs case by case: rounds of base and head in turn (base, head; head, base;
   ...), one thread on each side, NumPy measured beside the head in each round. Deterministic
   cases (instruction counts, the allocator) run once per side.
4. Every metric is judged as its table in thresholds.toml says (harness/verdict.py): a timing by
   the bootstrapped median of its per-round head/base factors, a count by its two figures; the
   allocator's figures, which are the same on any machine, also against the committed baseline.

Writes into --out (default build/gate): head.csv (the head against NumPy, medians of the rounds),
side-by-side.csv (the head against the base, reference "base:COMMIT") and gate.md (the verdicts
as a markdown table, printed too). Exit code: 0 pass, 1 a regression or a case the head could
not run (valgrind missing included), 2 when a side cannot be built or the base not found.
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

import compare
import run
from harness import ember, machine, worktree
from harness.case import Context, Measurement, params_text
from harness.references import import_torch, references_for
from harness.schema import read_csv, write_csv
from harness.timer import TimerOptions, relative_iqr
from harness.verdict import Verdict, judge_rounds, judge_value, markdown

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = HERE / "baseline" / "cpu-quick.csv"
# Inside each tree, two folders down like the nox sessions' builds of core-runtime (build/core):
# with CCACHE_BASEDIR the compile commands are then the same as theirs, and ccache serves both
# sides from the build the tests session made.
BENCH_BUILD = Path("build/gate-bench")
GATE_KINDS = ("rounds", "value", "derived")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base", help="the commit to compare with (default: the baseline's commit)")
    p.add_argument("--baseline", type=Path, default=BASELINE,
                   help="the committed baseline (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=9,
                   help="rounds of base and head per timed case (default: %(default)s)")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "gate")
    p.add_argument("--thresholds", type=Path, default=compare.DEFAULT_THRESHOLDS)
    p.add_argument("--cmake-arg", action="append", default=[],
                   help="passed to both sides' cmake configure (the BLAS, say)")
    p.add_argument("--head-bench", type=Path, help="a built ember_bench for the head: no build")
    p.add_argument("--base-bench", type=Path, help="a built ember_bench for the base: no build")
    p.add_argument("--case", action="append", default=[], metavar="FAMILY/OP/PARAMS",
                   help="only this quick case (repeatable)")
    return p.parse_args(argv)


def load_gate_thresholds(path: Path) -> dict:
    table = compare.load_thresholds(path)
    for metric, t in table.items():
        if t.get("gate") not in GATE_KINDS or (t["gate"] != "derived" and not isinstance(
                t.get("gate_max_worse"), (int, float))):
            raise ValueError(f"{path}: [{metric}] needs gate = one of {', '.join(GATE_KINDS)} "
                             "and, unless derived, a number gate_max_worse")
    return table


def build_side(tree: Path, cmake_args: list[str]) -> Path:
    env = dict(os.environ, CCACHE_BASEDIR=str(ROOT))  # paths relative to the tree: shared hits
    return ember.build(tree / BENCH_BUILD, "cpu", None, cmake_args,
                       cpp_dir=tree / "benchmarks" / "cpp", env=env)


def ember_figures(measurements: list[Measurement]) -> dict:
    """metric -> (Ember's figure, better): the same on every reference's row of a metric."""
    return {m.metric: (m.value, m.better) for m in measurements}


def merge_rounds(rounds: list[list[Measurement]]) -> list[Measurement]:
    """One side's rows, one per (metric, reference), from its rounds: the medians of Ember's and
    the reference's figures, their spreads across the rounds. One round is returned as it is."""
    if len(rounds) == 1:
        return rounds[0]
    merged = []
    for i, first in enumerate(rounds[0]):
        ours = [r[i].value for r in rounds]
        theirs = [r[i].reference_value for r in rounds if r[i].reference_value is not None]
        merged.append(Measurement(
            first.metric, first.unit, first.better, statistics.median(ours), relative_iqr(ours),
            first.reference, statistics.median(theirs) if theirs else None,
            relative_iqr(theirs) if theirs else None))
    return merged


def measure_case(case, head: Context, base: Context, rounds: int):
    """Both sides' rounds of one case: (head's rounds, base's rounds or None when the base cannot
    run it). A failure of the head raises ember.BenchError."""
    rounds = 1 if getattr(case, "deterministic", False) else rounds
    ours, theirs, base_error = [], [], None
    for i in range(rounds):
        for side in (base, head) if i % 2 == 0 else (head, base):
            if side is head:
                ours.append(case.measure(head))
            elif base_error is None:
                try:
                    theirs.append(case.measure(base))
                except ember.BenchError as e:  # a case newer than the base
                    base_error = e
    return ours, (None if base_error else theirs), base_error


def judge_case(key: tuple, ours, theirs, thresholds: dict, against: str) -> list[Verdict]:
    """key: (benchmark, case, params); one verdict per metric that is not derived from another."""
    head_rounds = [ember_figures(m) for m in ours]
    base_rounds = [ember_figures(m) for m in theirs]
    verdicts = []
    for metric, (_, better) in head_rounds[0].items():
        t = thresholds[metric]
        if t["gate"] == "derived":
            continue
        head = [r[metric][0] for r in head_rounds]
        base = [r[metric][0] for r in base_rounds]
        if t["gate"] == "rounds":
            verdict = judge_rounds((*key, metric), against, base, head, better,
                                   t["gate_max_worse"])
        else:  # one figure per side: a deterministic case ran once
            verdict = judge_value((*key, metric), against, base[0], head[0], better,
                                  t["gate_max_worse"])
        verdicts.append(verdict)
    return verdicts


def against_baseline(baseline: list[dict], head_rows: list[dict], thresholds: dict) -> list:
    """Verdicts on the rows whose figures are the same on any machine (baseline = true)."""
    def key(row):  # Ember's figure, whichever reference a row also names
        return row["benchmark"], row["case"], row["params"], row["metric"]

    anywhere = {m for m, t in thresholds.items() if t.get("baseline")}
    base = {key(r): r for r in baseline if r["metric"] in anywhere}
    head = {key(r): r for r in head_rows if key(r) in base}
    return [judge_value(k, "baseline", base[k]["value"], row["value"], row["better"],
                        thresholds[row["metric"]]["gate_max_worse"]) for k, row in head.items()]


def side_by_side_rows(info: dict, family: str, case, ours: list[Measurement],
                      theirs: list[Measurement], commit: str) -> list[dict]:
    """Rows of the head against the base as a reference, one per metric, from each side's merged
    rounds."""
    base = {m.metric: m for m in theirs}
    head = {m.metric: m for m in ours}  # Ember's figure is on every reference's row
    return [run.row(info, family, case, Measurement(
                m.metric, m.unit, m.better, m.value, m.spread, f"base:{commit[:12]}",
                base[m.metric].value, base[m.metric].spread))
            for m in head.values() if m.metric in base]


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")  # before numpy loads
    try:
        thresholds = load_gate_thresholds(args.thresholds)
        commit = worktree.resolve(ROOT, args.base or worktree.baseline_commit(args.baseline))
        baseline = read_csv(args.baseline) if args.baseline.exists() else []
        base_tree = worktree.checkout(ROOT, commit, ROOT / "build" / "gate" / "base")
        head_bench = args.head_bench or build_side(ROOT, args.cmake_arg)
        base_bench = args.base_bench or build_side(base_tree, args.cmake_arg)
    except (OSError, ValueError, worktree.WorktreeError) as e:
        print(f"gate.py: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        print(f"gate.py: building ember_bench failed ({' '.join(e.cmd)}), see above",
              file=sys.stderr)
        return 2

    timer = TimerOptions()
    torch = import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    head = Context("cpu", ember.Program(head_bench, "cpu", timer), timer,
                   references_for("cpu", torch))
    base = Context("cpu", ember.Program(base_bench, "cpu", timer), timer, [])
    info = machine.describe("cpu", torch, 1)
    against = f"base {commit[:12]}"

    head_rows, pair_rows, verdicts = [], [], []
    for family, case in run.select_cases(run.all_families(), "cpu", True, args.case):
        name = run.case_name(family, case)
        print(f"gate.py: {name}", file=sys.stderr, flush=True)
        key = (family, case.op, params_text(case.params, " "))
        try:
            ours, theirs, base_error = measure_case(case, head, base, args.rounds)
        except ember.BenchError as e:
            verdicts.append(Verdict((*key, ""), "failed", note=str(e).replace("|", "/")))
            continue
        merged = merge_rounds(ours)
        head_rows += [run.row(info, family, case, m) for m in merged]
        if theirs is None:
            print(f"gate.py: the base cannot run {name}: {base_error}", file=sys.stderr)
            verdicts.append(Verdict((*key, ""), "new", note="not in the base"))
            continue
        pair_rows += side_by_side_rows(info, family, case, merged, merge_rounds(theirs), commit)
        verdicts += judge_case(key, ours, theirs, thresholds, against)
    verdicts += against_baseline(baseline, head_rows, thresholds)

    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "head.csv", head_rows)
    write_csv(args.out / "side-by-side.csv", pair_rows)
    title = (f"Benchmark gate: head {info['commit']} against base {commit[:12]}, {args.rounds} "
             f"rounds, one thread, on {info['cpu']} ({info['cores']} cores)")
    table = markdown(verdicts, title)
    (args.out / "gate.md").write_text(table + "\n")
    print(table)
    return 1 if any(v.status in ("regressed", "failed") for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
