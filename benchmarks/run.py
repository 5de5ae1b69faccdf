"""Runs benchmark families, Ember against its reference in the same run, and writes one CSV in
the schema of benchmarks/README.md.

  python3 benchmarks/run.py                          every family, CPU
  python3 benchmarks/run.py matmul memory            only these families
  python3 benchmarks/run.py --quick --out q.csv      the quick CI subset
  python3 benchmarks/run.py --device cuda --out benchmarks/results    on a GPU machine
  python3 benchmarks/run.py --list                   the families
  python3 benchmarks/run.py --case "matmul/matmul/m=256 n=256 k=256 algo=tiled"   one case

It first builds benchmarks/cpp (ember_bench) in --build-dir, building core-runtime from this
checkout, or linking an installed one with --ember-prefix; --ember-bench skips the build, and so
does a selection whose every case calls Ember through its Python bindings (params via=python,
the training family), which `import ember` finds. A case that fails is reported and skipped; the
CSV is written with the rest and the exit code is 1 (for a via=python case, any error it
raises). A case that cannot run here (the ember package not importable) is skipped with the
reason, and is no failure.
"""

import argparse
import datetime
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import families
from harness import bindings, ember, machine
from harness.case import Context, Skipped, params_text
from harness.references import import_torch, references_for
from harness.schema import write_csv
from harness.timer import TimerOptions

HERE = Path(__file__).resolve().parent


def all_families() -> dict:
    return {m.name: importlib.import_module(f"families.{m.name}")
            for m in pkgutil.iter_modules(families.__path__)}


def parse_args(argv, known):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("families", nargs="*", metavar="FAMILY",
                   help="families to run (default: all; see --list)")
    p.add_argument("--list", action="store_true", help="list the families and exit")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--quick", action="store_true", help="only the cases marked quick (CI gate)")
    p.add_argument("--case", action="append", default=[], metavar="FAMILY/OP/PARAMS",
                   help="only this case (repeatable), named by the CSV's benchmark, case and "
                        "params columns")
    p.add_argument("--out", type=Path, default=HERE / "out",
                   help="a .csv file, or a folder to write DATE_MACHINE_DEVICE.csv in "
                        "(default: %(default)s)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--min-sample-ms", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=1,
                   help="time each case this many times, Ember and references in turn; report "
                        "the median of the rounds and their spread")
    p.add_argument("--threads", type=int,
                   help="hold Ember (its pool) and the references (OpenBLAS, torch) to this many "
                        "threads; the gate uses 1")
    p.add_argument("--build-dir", type=Path, help="default: benchmarks/out/build-DEVICE")
    p.add_argument("--ember-prefix", help="an installed core-runtime (cmake --install prefix)")
    p.add_argument("--ember-bench", type=Path, help="a built ember_bench: skip the build")
    p.add_argument("--cmake-arg", action="append", default=[], help="passed to cmake configure")
    p.add_argument("--build-only", action="store_true", help="build ember_bench and exit")
    args = p.parse_args(argv)
    unknown = [f for f in args.families if f not in known]
    if unknown:
        p.error(f"unknown family {', '.join(unknown)}; known: {', '.join(known)}")
    return args


def split_run_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """A wrapper's own arguments (gate.py, baseline.py) and those after --, which are run.py's."""
    if "--" not in argv:
        return argv, []
    split = argv.index("--")
    return argv[:split], argv[split + 1:]


def case_name(family: str, case) -> str:
    """FAMILY/OP/PARAMS, as --case takes it and gate.py writes it from a CSV row."""
    return f"{family}/{case.op}/{params_text(case.params, ' ')}"


def with_python_side(cases):
    """Each case, followed by its variant through the Python bindings where it declares one
    (KernelCase.ember)."""
    for case in cases:
        yield case
        if getattr(case, "ember", None) is not None and not case.in_process:
            yield case.on_python()


def select_cases(selected: dict, device: str, quick: bool, names: list[str]):
    """(family name, case) for every case of the selected families on device, only the quick
    ones with quick, only those named (FAMILY/OP/PARAMS) when names are given."""
    for name, family in selected.items():
        for case in with_python_side(family.cases(device)):
            if (not quick or case.quick) and (not names or case_name(name, case) in names):
                yield name, case


def row(info: dict, family: str, case, m) -> dict:
    """A CSV row: the run's shared columns, then one Measurement of one case."""
    return {**info, "benchmark": family, "case": case.op, "params": params_text(case.params, " "),
            "metric": m.metric, "unit": m.unit, "better": m.better, "value": m.value,
            "spread": m.spread, "reference": m.reference, "reference_value": m.reference_value,
            "reference_spread": m.reference_spread, "ratio": m.ratio}


def output_path(out: Path, info: dict, quick: bool) -> Path:
    if out.suffix == ".csv":
        return out
    date = info["timestamp"][:10]
    return out / f"{date}_{machine.slug(info)}_{info['device']}{'_quick' if quick else ''}.csv"


def main(argv=None) -> int:
    known = all_families()
    args = parse_args(argv, known)
    if args.list:
        for name, module in known.items():
            print(f"{name:14} {module.__doc__.strip().splitlines()[0]}")
        return 0
    selected = {name: known[name] for name in (args.families or known)}
    cases = list(select_cases(selected, args.device, args.quick, args.case))
    in_process = [getattr(case, "in_process", False) for _, case in cases]
    if args.threads:  # before numpy, torch and ember load OpenBLAS and OpenMP; ember_bench
        os.environ.update(OMP_NUM_THREADS=str(args.threads),  # inherits the environment
                          OPENBLAS_NUM_THREADS=str(args.threads))

    bench = args.ember_bench
    if bench is None and (args.build_only or not all(in_process)):
        try:
            bench = ember.build(args.build_dir or HERE / "out" / f"build-{args.device}",
                                args.device, args.ember_prefix, args.cmake_arg)
        except subprocess.CalledProcessError as e:
            print(f"run.py: building ember_bench failed ({' '.join(e.cmd)}), see above",
                  file=sys.stderr)
            return 2
    if args.build_only:
        print(bench)
        return 0
    torch = import_torch()
    if args.device == "cuda" and (torch is None or not torch.cuda.is_available()):
        print("run.py: --device cuda needs a GPU; PyTorch with CUDA provides the references",
              file=sys.stderr)
        return 2
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    python, python_missing = bindings.load(args.device) if any(in_process) else (None, "")
    timer = TimerOptions(args.warmup, args.repeat, args.min_sample_ms)
    ctx = Context(args.device, bench and ember.Program(bench, args.device, timer), timer,
                  references_for(args.device, torch), args.rounds, python, python_missing)
    info = machine.describe(args.device, torch, args.threads)

    rows, failures, skipped = [], [], {}
    started = datetime.datetime.now()
    for name, case in cases:
        label = f"{name} {case.op} {params_text(case.params, ' ')}"
        try:
            measurements = case.measure(ctx)
        except ember.BenchError as e:
            failures.append(label)
            print(f"FAILED {label}: {e}", file=sys.stderr)
            continue
        except Skipped as e:
            skipped.setdefault(str(e), []).append(label)
            continue
        except Exception as e:  # from Ember's Python side: ember.EmberError and its kin
            if not getattr(case, "in_process", False):
                raise
            failures.append(label)
            print(f"FAILED {label}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        rows += [row(info, name, case, m) for m in measurements]
        for m in measurements:
            versus = (f" | {m.reference} {m.reference_value:.4g} {m.unit}, ratio {m.ratio:.3f}"
                      if m.ratio is not None else "")
            print(f"{label}: {m.metric} {m.value:.4g} {m.unit}{versus}", flush=True)

    path = output_path(args.out, info, args.quick)
    write_csv(path, rows)
    elapsed = (datetime.datetime.now() - started).total_seconds()
    print(f"wrote {len(rows)} rows to {path} in {elapsed:.0f} s", file=sys.stderr)
    for reason, labels in skipped.items():
        print(f"{len(labels)} case(s) skipped: {reason}", file=sys.stderr)
    if failures:
        print(f"{len(failures)} case(s) failed: " + "; ".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
