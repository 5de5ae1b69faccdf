"""Writes the CI gate's baseline: the quick subset run several times, each row the median of its
runs, so that one run caught in a slow (or fast) phase of a shared machine does not set the bar.

  python3 benchmarks/baseline.py OUT.csv [--runs N] [-- run.py options]

Each row keeps the run whose figure (the ratio when the row has one, else the value) is the
median of that row's figures; the other columns come from the same run. Exit code: run.py's.
"""

import argparse
import statistics
import sys
from pathlib import Path

import compare
import run
from harness.schema import read_csv, write_csv


def figure(row: dict) -> float:
    return row["ratio"] if row["ratio"] is not None else row["value"]


def median_rows(runs: list[list[dict]]) -> list[dict]:
    """The rows of runs[0], each replaced by the run of that row whose figure is the median
    (the lower median for an even count); rows missing from a run are judged on the others."""
    by_key = [{compare.row_key(r): r for r in rows} for rows in runs]
    result = []
    for key in by_key[0]:
        candidates = sorted((rows[key] for rows in by_key if key in rows), key=figure)
        median = statistics.median_low([figure(r) for r in candidates])
        result.append(next(r for r in candidates if figure(r) == median))
    return result


def main(argv=None) -> int:
    own, run_options = run.split_run_options(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--runs", type=int, default=3, help="default: %(default)s")
    args = p.parse_args(own)
    runs = []
    for i in range(1, args.runs + 1):
        path = args.out.with_suffix(f".run{i}.csv")
        code = run.main(["--quick", *run_options, "--out", str(path)])
        if code:
            return code
        runs.append(read_csv(path))
        path.unlink()
    write_csv(args.out, median_rows(runs))
    print(f"baseline.py: wrote {args.out}, each row the median of {args.runs} runs",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
