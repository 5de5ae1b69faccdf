"""Compares two benchmark CSVs and fails on a regression.

  python3 benchmarks/compare.py BASE.csv NEW.csv [--thresholds benchmarks/thresholds.toml]

Rows are matched on (device, benchmark, case, params, metric, reference). Each matched row is
judged by its metric's table in thresholds.toml: on the ratio to the same-run reference when both
rows have one (compare = "ratio"), else on the value, with the metric's direction of "better".
Prints a markdown table, regressions first, with rows missing from NEW or new in NEW listed too.
Exit code: 1 when a row regressed past its threshold, 2 when an input cannot be read, else 0.
"""

import argparse
import math
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from harness.schema import SchemaError, read_csv
from harness.verdict import number

KEY = ("device", "benchmark", "case", "params", "metric", "reference")
ORDER = ("regressed", "improved", "ok", "missing", "new")
DEFAULT_THRESHOLDS = Path(__file__).resolve().parent / "thresholds.toml"


@dataclass
class Change:
    key: tuple
    status: str               # one of ORDER
    basis: str = ""           # "ratio" or "value": what was compared
    base: float | None = None
    new: float | None = None
    worse: float | None = None  # new against base as a factor, > 1 when worse
    limit: float | None = None  # the largest `worse` allowed


def load_thresholds(path: Path) -> dict:
    with open(path, "rb") as f:
        table = tomllib.load(f)
    for metric, t in table.items():
        if t.get("compare") not in ("ratio", "value") or not isinstance(t.get("max_worse"),
                                                                           (int, float)):
            raise SchemaError(f"{path}: [{metric}] needs compare = \"ratio\" or \"value\" and a "
                              "number max_worse")
    return table


def row_key(row: dict) -> tuple:
    """What matches a row of one CSV with its row in another."""
    return tuple(row[c] for c in KEY)


def index(rows: list[dict], path) -> dict:
    by_key = {}
    for row in rows:
        key = row_key(row)
        if key in by_key:
            raise SchemaError(f"{path}: two rows for {' / '.join(key)}")
        by_key[key] = row
    return by_key


def worse_factor(base: float, new: float, better: str) -> float:
    """How many times worse new is than base (0.8 = 20 % better)."""
    if base == new:
        return 1.0
    num, den = (new, base) if better == "lower" else (base, new)
    return num / den if den else math.inf


def judge(base: dict, new: dict, threshold: dict) -> Change:
    has_ratios = base["ratio"] is not None and new["ratio"] is not None
    basis = "ratio" if threshold["compare"] == "ratio" and has_ratios else "value"
    worse = worse_factor(base[basis], new[basis], new["better"])
    limit = 1 + threshold["max_worse"]
    status = "regressed" if worse > limit else "improved" if worse < 1 / limit else "ok"
    key = row_key(new)
    return Change(key, status, basis, base[basis], new[basis], worse, limit)


def compare(base_rows: list[dict], new_rows: list[dict], thresholds: dict,
            base_name="BASE", new_name="NEW") -> list[Change]:
    base, new = index(base_rows, base_name), index(new_rows, new_name)
    changes = []
    for key, row in new.items():
        if key not in base:
            changes.append(Change(key, "new", new=row["value"]))
            continue
        if row["metric"] not in thresholds:
            raise SchemaError(f"no threshold for metric '{row['metric']}': add a [{row['metric']}] "
                              "table to thresholds.toml")
        changes.append(judge(base[key], row, thresholds[row["metric"]]))
    changes += [Change(key, "missing", base=row["value"]) for key, row in base.items()
                if key not in new]
    return sorted(changes, key=lambda c: (ORDER.index(c.status), c.key))


def change_text(worse: float | None) -> str:
    if worse is None:
        return ""
    if worse == math.inf:
        return "worse, from 0"
    return f"{(worse - 1) * 100:+.1f} %"


def markdown(changes: list[Change]) -> str:
    lines = ["| status | device | benchmark | case | params | metric | reference | compared | base "
             "| new | change (+ worse) | allowed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in changes:
        allowed = f"+{(c.limit - 1) * 100:.0f} %" if c.limit is not None else ""
        status = f"**{c.status}**" if c.status == "regressed" else c.status
        cells = [status, *c.key, c.basis, number(c.base), number(c.new), change_text(c.worse),
                 allowed]
        lines.append("| " + " | ".join(cells) + " |")
    counts = {s: sum(c.status == s for c in changes) for s in ORDER}
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)


def machine_note(base_rows, new_rows) -> str:
    machines = [{(r["cpu"], r["gpu"]) for r in rows} for rows in (base_rows, new_rows)]
    if base_rows and new_rows and machines[0] != machines[1]:
        return (f"note: measured on different machines: base {sorted(machines[0])}, "
                f"new {sorted(machines[1])}\n")
    return ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--thresholds", type=Path, default=DEFAULT_THRESHOLDS)
    args = p.parse_args(argv)
    try:
        thresholds = load_thresholds(args.thresholds)
        base_rows, new_rows = read_csv(args.base), read_csv(args.new)
        changes = compare(base_rows, new_rows, thresholds, str(args.base), str(args.new))
    except (OSError, SchemaError, tomllib.TOMLDecodeError) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    print(machine_note(base_rows, new_rows) + markdown(changes))
    return 1 if any(c.status == "regressed" for c in changes) else 0


if __name__ == "__main__":
    sys.exit(main())
