"""Plots every metric over the committed history of benchmark results.

  python3 benchmarks/plot.py [--out benchmarks/out/plots]

Reads every version of every CSV ever committed under benchmarks/results/ and benchmarks/baseline/
(git log), and draws one PNG per (device, benchmark, metric): x is when each run was taken, one
line per case and parameters for Ember (solid) and its references beside it (same colour: NumPy
dashed, PyTorch dotted). A case measured at three or more batch sizes in one run (the training
family's peak memory) also gets a PNG of its latest run against the batch size,
DEVICE_BENCHMARK_CASE_METRIC_by_batch.png.
"""

import argparse
import io
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the file-only backend)

from harness.schema import parse_csv  # noqa: E402

HERE = Path(__file__).resolve().parent
HISTORY = ("benchmarks/results", "benchmarks/baseline")
SWEEP = "batch"  # the parameter a case's rows of one run are also plotted against


def git(*args) -> str:
    return subprocess.run(["git", "-C", str(HERE.parent), *args], capture_output=True, text=True,
                          check=True).stdout


def committed_rows() -> list[dict]:
    """Every row of every committed version of the history CSVs, each run's rows once."""
    rows, seen = [], set()
    log = git("log", "--format=commit %H", "--name-only", "--", *HISTORY)
    commit = None
    for line in log.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line.endswith(".csv"):
            try:
                text = git("show", f"{commit}:{line}")
            except subprocess.CalledProcessError:  # the commit deleted the file
                continue
            for row in parse_csv(io.StringIO(text), f"{commit[:12]}:{line}"):
                key = (row["timestamp"], row["device"], row["benchmark"], row["case"],
                       row["params"], row["metric"], row["reference"])
                if key not in seen:
                    seen.add(key)
                    rows.append(row)
    return rows


def save(fig, path: Path) -> Path:
    """Lays fig out, writes it to path at the plots' resolution and closes it; returns path."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(rows: list[dict], out: Path) -> list[Path]:
    groups = defaultdict(lambda: defaultdict(list))  # (device, benchmark, metric) -> case -> rows
    for r in rows:
        groups[r["device"], r["benchmark"], r["metric"]][r["case"], r["params"]].append(r)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for (device, benchmark, metric), cases in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(11, 5.5))
        ax.set_prop_cycle(color=plt.get_cmap("tab20").colors)
        for (case, params), series in sorted(cases.items()):
            # Ember's figure once per run; each reference's beside it, dashed
            ember = dict(sorted((r["timestamp"], r["value"]) for r in series))
            when = [datetime.fromisoformat(t) for t in ember]
            line, = ax.plot(when, list(ember.values()), "o-", label=f"{case} {params}")
            for ref in sorted({r["reference"] for r in series if r["reference_value"] is not None}):
                points = sorted((r["timestamp"], r["reference_value"]) for r in series
                                if r["reference"] == ref and r["reference_value"] is not None)
                ax.plot([datetime.fromisoformat(t) for t, _ in points], [v for _, v in points],
                        "s--" if ref != "torch" else "^:", color=line.get_color(), alpha=0.6,
                        label=f"  {ref}")
        first = next(iter(cases.values()))[0]
        ax.set_title(f"{benchmark}: {metric} on {device} ({first['better']} is better)")
        ax.set_ylabel(first["unit"])
        if all(r["value"] > 0 for s in cases.values() for r in s):
            ax.set_yscale("log")  # sizes from small to large span decades
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.autofmt_xdate()
        written.append(save(fig, out / f"{device}_{benchmark}_{metric}.png"))
    return written


def parse_params(text: str) -> dict:
    return dict(item.split("=", 1) for item in text.split())


def sweeps(rows: list[dict]) -> dict:
    """(device, benchmark, case, metric) -> the rows of its latest run, for every case whose
    latest run measured it at three or more values of SWEEP."""
    latest = {}
    for r in rows:
        if SWEEP in parse_params(r["params"]):
            key = (r["device"], r["benchmark"], r["case"], r["metric"])
            latest[key] = max(latest.get(key, ""), r["timestamp"])
    groups = defaultdict(list)
    for r in rows:
        key = (r["device"], r["benchmark"], r["case"], r["metric"])
        if latest.get(key) == r["timestamp"]:
            groups[key].append(r)
    return {key: series for key, series in groups.items()
            if len({parse_params(r["params"])[SWEEP] for r in series}) >= 3}


def plot_sweeps(rows: list[dict], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for (device, benchmark, case, metric), series in sorted(sweeps(rows).items()):
        lines = defaultdict(list)  # the other parameters -> (SWEEP's value, row)
        for r in series:
            params = parse_params(r["params"])
            at = int(params.pop(SWEEP))
            lines[" ".join(f"{k}={v}" for k, v in params.items())].append((at, r))
        fig, ax = plt.subplots(figsize=(8, 5))
        for label, points in sorted(lines.items()):
            points.sort(key=lambda p: p[0])
            line, = ax.plot([at for at, _ in points], [r["value"] for _, r in points], "o-",
                            label=f"ember {label}")
            measured = [(at, r) for at, r in points if r["reference_value"] is not None]
            if measured:
                ax.plot([at for at, _ in measured], [r["reference_value"] for _, r in measured],
                        "^:", color=line.get_color(), label=f"{measured[0][1]['reference']}")
        first = series[0]
        ax.set_title(f"{benchmark} {case}: {metric} on {device} against {SWEEP} "
                     f"({first['timestamp'][:10]}, {first['better']} is better)")
        ax.set_xlabel(SWEEP)
        ax.set_ylabel(first["unit"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        written.append(save(fig, out / f"{device}_{benchmark}_{case}_{metric}_by_{SWEEP}.png"))
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, default=HERE / "out" / "plots")
    args = p.parse_args(argv)
    rows = committed_rows()
    if not rows:
        print("plot.py: no committed results under " + ", ".join(HISTORY), file=sys.stderr)
        return 1
    for path in plot(rows, args.out) + plot_sweeps(rows, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
