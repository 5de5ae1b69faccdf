"""Trains train_digits.py's CNN data-parallel over several processes (DistributedDataParallel).

    python -m ember.distributed.run --nproc-per-node 2 \\
        examples-and-tutorials/python/train_digits_ddp.py --epochs 5

Each process trains the same model on its share of every epoch (DistributedSampler) with
--batch-size images per step; the gradients are averaged over the processes during backward, so
all copies stay identical. Rank 0 evaluates and writes --out/metrics.json (the epochs' loss,
seconds and images per second, the test accuracy). On CUDA each process uses the GPU of its
LOCAL_RANK through NCCL; on the CPU, Gloo. The launcher sets OMP_NUM_THREADS=1: one thread each.
--compile runs each step as one ember.compile'd step: traced once, then replayed, the gradients'
all-reduces nodes of its graph (step.explain() lists the buckets).
"""

import argparse
import json
import os
import pathlib
import time

import digits
import models
import numpy as np

import ember
import ember.distributed as dist
from ember import nn


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cpu (gloo) or cuda (nccl, the GPU of LOCAL_RANK); default cpu")
    p.add_argument("--epochs", type=int, default=5, help="default 5")
    p.add_argument("--batch-size", type=int, default=32, help="per process (default 32)")
    p.add_argument("--lr", type=float, default=0.03, help="learning rate (default 0.03)")
    p.add_argument("--seed", type=int, default=0, help="seeds the split, init and shuffling")
    p.add_argument("--timeout", type=float, default=300, help="seconds before a rank that "
                   "does not answer is an error (300)")
    p.add_argument("--out", default="out/train_digits_ddp", help="rank 0's metrics.json")
    p.add_argument("--compile", action="store_true",
                   help="run each training step as an ember.compile'd step")
    p.add_argument("--min-accuracy", type=float, default=0.0,
                   help="exit with status 1 if the final test accuracy is below this (0..1)")
    return p.parse_args()


def main():
    args = parse_args()
    backend = "nccl" if args.device == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=args.timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}" if args.device == "cuda" else "cpu"
    x_train, y_train, x_test, y_test = digits.load_digits_split(size=28, seed=args.seed)
    train_set = ember.data.TensorDataset(ember.tensor(x_train), ember.tensor(y_train))
    sampler = ember.data.DistributedSampler(train_set, shuffle=True, seed=args.seed)
    loader = ember.data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler,
                                   device=device)

    ember.manual_seed(args.seed)
    model = nn.parallel.DistributedDataParallel(models.small_cnn().to(device),
                                                device_ids=[device] if backend == "nccl" else None)
    optimizer = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    if rank == 0:
        print(f"{world} process(es), backend {backend}, {len(train_set)} training images, "
              f"{len(sampler)} per process per epoch, batch {args.batch_size} per process")

    def train_step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    step = ember.compile(train_step) if args.compile else train_step

    history = {"train_loss": [], "seconds": [], "images_per_s": []}
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        start = time.perf_counter()
        total, count = ember.zeros(2, dtype=ember.float64, device=device), 0
        for x, y in loader:
            loss = step(x, y)
            with ember.no_grad():
                total += ember.stack([loss.detach().to(ember.float64) * len(y),
                                      ember.tensor(float(len(y)), dtype=ember.float64,
                                                   device=device)])
            count += len(y)
        dist.all_reduce(total)  # every rank's loss sum and image count
        dist.barrier()  # the epoch ends when the slowest rank's does
        seconds = time.perf_counter() - start
        loss_sum, images = total.tolist()
        history["train_loss"].append(loss_sum / images)
        history["seconds"].append(seconds)
        history["images_per_s"].append(images / seconds)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {loss_sum / images:.4f}, "
                  f"{seconds:.2f} s, {images / seconds:.0f} images/s")

    accuracy = None
    if rank == 0:
        model.eval()
        with ember.no_grad():
            logits = model.module(ember.tensor(x_test, device=device))
        accuracy = float(np.mean(logits.argmax(1).cpu().numpy() == y_test))
        print(f"test accuracy {accuracy:.4f}")
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(json.dumps(
            {"world_size": world, "backend": backend, "test_accuracy": accuracy,
             "history": history}, indent=1))
    dist.destroy_process_group()
    if rank == 0 and accuracy < args.min_accuracy:
        raise SystemExit(f"test accuracy {accuracy:.4f} is below --min-accuracy "
                         f"{args.min_accuracy}")


if __name__ == "__main__":
    main()
