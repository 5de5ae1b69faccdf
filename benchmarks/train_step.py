"""One eager training step of the seeds' small CNN, Ember (from C++) against PyTorch eager.

The model: conv 1->16 3x3, batch-norm, relu, 2x2 max-pool, conv 16->32 3x3, batch-norm, relu,
2x2 max-pool, linear 800->10, cross-entropy, SGD (lr 0.01, momentum 0.9), on [batch, 1, 28, 28].
A step is forward + backward + update; both sides time it the same way (median over the steps
after a warm-up, the device synchronised before each clock read) and report the allocator's peak
during the timed steps. Ember's side is cpp/train/ember_train_bench, built here against an
installed core-runtime + autodiff-engine (--ember-prefix).

  python3 benchmarks/train_step.py --ember-prefix .install --device cpu --out results.csv
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from harness import machine, schema  # noqa: E402

BATCHES = (32, 256)


def build(prefix: Path, build_dir: Path) -> Path:
    subprocess.run(["cmake", "-S", str(HERE / "cpp/train"), "-B", str(build_dir), "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefix.resolve()}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build_dir)], check=True, stdout=subprocess.DEVNULL)
    return build_dir / "ember_train_bench"


def ember_step(program: Path, device: str, batch: int, steps: int) -> dict:
    out = subprocess.run([str(program), "--device", device, "--batch", str(batch),
                          "--steps", str(steps)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def torch_step(torch, device: str, batch: int, steps: int, warmup: int = 5) -> dict:
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(800, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28, device=device)
    target = torch.randint(0, 10, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()
    cuda = device.startswith("cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), target).backward()
        opt.step()

    for _ in range(warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    median = statistics.median(times)
    iqr = (times[len(times) * 3 // 4] - times[len(times) // 4]) / median
    peak = torch.cuda.max_memory_allocated() if cuda else None
    return {"ms": median, "iqr": iqr, "peak_bytes": peak}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ember-prefix", type=Path, required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--build-dir", type=Path, default=HERE / "out/build-train")
    ap.add_argument("--out", type=Path, default=HERE / "out/train_step.csv")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    program = build(args.ember_prefix, args.build_dir)
    run = machine.describe(args.device, torch, None)
    rows = []
    for batch in BATCHES:
        ours = ember_step(program, args.device, batch, args.steps)
        ref = torch_step(torch, args.device, batch, args.steps) if torch else None
        base = dict(run, benchmark="training", case="cnn_eager_step", params=f"batch={batch}")
        rows.append(dict(base, metric="time", unit="ms", better="lower", value=ours["ms"],
                         spread=ours["iqr"], reference="torch" if ref else "",
                         reference_value=ref and ref["ms"], reference_spread=ref and ref["iqr"],
                         ratio=ref and ours["ms"] / ref["ms"]))
        ref_peak = ref and ref["peak_bytes"]
        rows.append(dict(base, metric="peak_bytes", unit="B", better="lower",
                         value=float(ours["peak_bytes"]), spread=0.0,
                         reference="torch" if ref_peak else "", reference_value=ref_peak,
                         reference_spread=0.0 if ref_peak else None,
                         ratio=ref_peak and ours["peak_bytes"] / ref_peak))
        print(f"batch {batch}: ember {ours['ms']:.3f} ms (backward graphs built {ours['built']}, "
              f"reused {ours['reused']})" + (f", torch {ref['ms']:.3f} ms" if ref else ""))
    schema.write_csv(args.out, rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
