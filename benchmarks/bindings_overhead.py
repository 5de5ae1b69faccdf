"""Per-call overhead of small ops from Python: Ember through its bindings and PyTorch, timed in
the same process with the same timer (harness/timer.py).

Cases (CPU, float32): `a + b` on 1-element tensors, `x.relu()` on one element, a Linear(16, 16)
forward on [1, 16]; each with and without a tensor that requires grad (so recording is timed
too). At these sizes the time is the call path itself: argument parsing, dispatch, the output's
allocation, recording.

  python3 benchmarks/bindings_overhead.py --out out/bindings.csv
"""

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import machine, schema  # noqa: E402
from harness.references import import_torch  # noqa: E402
from harness.timer import TimerOptions, time_calls  # noqa: E402


def cases(lib, nn):
    """name -> (params, the call to time), built the same way for ember and torch."""
    out = {}
    for grad in (False, True):
        a = lib.ones(1, requires_grad=grad)
        b = lib.ones(1)
        x = lib.ones(1, requires_grad=grad)
        layer = nn.Linear(16, 16)
        layer_in = lib.ones(1, 16, requires_grad=grad)
        for p in layer.parameters():
            p.requires_grad_(grad)
        tag = f"requires_grad={int(grad)}"
        out[("add", f"n=1 {tag}")] = lambda a=a, b=b: a + b
        out[("relu", f"n=1 {tag}")] = lambda x=x: x.relu()
        out[("linear_forward", f"in=16 out=16 batch=1 {tag}")] = lambda m=layer, t=layer_in: m(t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "out/bindings_overhead.csv")
    args = ap.parse_args()
    import ember

    torch = import_torch()
    if torch is not None:
        torch.set_num_threads(1)
    opt = TimerOptions(warmup=3, repeat=30, min_sample_ms=10.0)
    ours = cases(ember, ember.nn)
    theirs = cases(torch, torch.nn) if torch is not None else {}
    run = machine.describe("cpu", torch, None)
    for fn in [*ours.values(), *theirs.values()]:  # first calls: imports, caches, allocator
        time_calls(fn, lambda: None, TimerOptions(warmup=3, repeat=3))
    rows = []
    for (op, params), fn in ours.items():
        e = time_calls(fn, lambda: None, opt)
        t = time_calls(theirs[(op, params)], lambda: None, opt) if theirs else None
        rows.append(dict(run, benchmark="bindings", case=op, params=params, metric="time",
                         unit="us", better="lower", value=e.median_ms * 1e3, spread=e.spread,
                         reference="torch" if t else "", reference_value=t and t.median_ms * 1e3,
                         reference_spread=t and t.spread,
                         ratio=t and e.median_ms / t.median_ms))
        print(f"{op:15s} {params:32s} ember {e.median_ms * 1e3:7.2f} us"
              + (f"  torch {t.median_ms * 1e3:7.2f} us  ratio {e.median_ms / t.median_ms:.2f}"
                 if t else ""))
    schema.write_csv(args.out, rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
