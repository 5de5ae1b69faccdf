"""The CI gate: a run of the quick subset against the committed baseline, where a regression must
show again when it is measured again before it fails the gate.

  python3 benchmarks/gate.py BASE.csv NEW.csv [--confirm N] [-- run.py options]

Runs `run.py --quick` into NEW.csv and compares it with BASE.csv (compare.py). Every case with a
regressed row is then measured again, alone, up to N times (default 3); each row keeps the best
figure any attempt gave it, NEW.csv is rewritten with those, and the final comparison decides.
A kernel that really got slower is slow in every attempt and fails; a case that a burst of other
load on the machine slowed once passes on its next attempt. Deterministic rows (instruction
counts, allocator bytes) give the same figure each time, so measuring them again changes nothing.
Exit code: compare.py's (1 on a regression, 2 on an unreadable CSV), or run.py's when it fails.
"""

import argparse
import sys
from pathlib import Path

import compare
import run
from harness.schema import read_csv, write_csv


def case_names(changes: list) -> list[str]:
    """The run.py --case names of the cases with a regressed row, each once."""
    keys = {c.key for c in changes if c.status == "regressed"}
    names = {f"{benchmark}/{case}/{params}" for _, benchmark, case, params, *_ in keys}
    return sorted(names)


def better_of(a: dict, b: dict) -> dict:
    """The row whose figure is better: the ratio when both have one, else the value."""
    basis = "ratio" if a["ratio"] is not None and b["ratio"] is not None else "value"
    if a[basis] == b[basis]:
        return a
    b_is_better = b[basis] < a[basis] if a["better"] == "lower" else b[basis] > a[basis]
    return b if b_is_better else a


def keep_best(rows: list[dict], again: list[dict]) -> list[dict]:
    """rows with each row that `again` measured too replaced by the better of the two."""
    remeasured = {compare.row_key(r): r for r in again}
    return [better_of(r, remeasured.get(compare.row_key(r), r)) for r in rows]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--confirm", type=int, default=3,
                   help="how many times a regressed case is measured again (default: %(default)s)")
    p.add_argument("--thresholds", type=Path, default=compare.DEFAULT_THRESHOLDS)
    own, run_options = run.split_run_options(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(own)

    code = run.main(["--quick", *run_options, "--out", str(args.new)])
    if code:
        return code
    try:
        thresholds = compare.load_thresholds(args.thresholds)
        base, rows = read_csv(args.base), read_csv(args.new)
        changes = compare.compare(base, rows, thresholds, str(args.base), str(args.new))
        for attempt in range(1, args.confirm + 1):
            names = case_names(changes)
            if not names:
                break
            print(f"gate.py: measuring again ({attempt} of {args.confirm}): {'; '.join(names)}",
                  file=sys.stderr)
            again = args.new.with_suffix(f".again{attempt}.csv")
            code = run.main([*run_options, *(f"--case={n}" for n in names),
                             "--out", str(again)])
            if code:
                return code
            rows = keep_best(rows, read_csv(again))
            changes = compare.compare(base, rows, thresholds, str(args.base), str(args.new))
    except (OSError, ValueError) as e:  # SchemaError and TOML errors are ValueErrors
        print(f"gate.py: {e}", file=sys.stderr)
        return 2
    write_csv(args.new, rows)
    print(compare.machine_note(base, rows) + compare.markdown(changes))
    return 1 if any(c.status == "regressed" for c in changes) else 0


if __name__ == "__main__":
    sys.exit(main())
