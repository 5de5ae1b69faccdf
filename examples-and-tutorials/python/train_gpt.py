"""A character-level GPT trained on the reference documentation that ships inside every Python
installation, then asked to write some of its own.

    python examples-and-tutorials/python/train_gpt.py [--steps 600] [--autocast bf16]

The text is the standard library's pydoc_data/topics.py: the language reference's topics as
plain English with code (about 465 000 characters, 103 distinct, in CPython 3.11), the text
`help("if")` prints. It is on every machine that runs Python, so nothing is downloaded, and it
is large enough that a small model cannot memorise it within the run: the validation loss is a
fair measure. The first 90 % (topics in sorted order) is for training, the rest for validation.

The defaults (4 layers, 128 channels, 4 heads, 64 characters of context, batch 32, 600 AdamW
steps with a linear warm-up and a cosine decay, gradients clipped to norm 1) are sized for a few
minutes on a 2-core CPU; the examples' README gives the figures measured. A uniform guess costs
ln 103 = 4.6 nats per character; the validation loss is printed every --eval-every steps.
Writes --out/loss.png (training and validation loss against the step), --out/samples.txt,
--out/metrics.json and --out/checkpoint.safetensors (--resume continues from it, exactly as if
uninterrupted)."""

import argparse
import json
import os
import pydoc_data.topics
import sys
import time

import matplotlib
import numpy as np
import training
from gpt import GPT

import ember
import ember.nn.functional as F

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)

AUTOCAST = {"none": None, "bf16": ember.bfloat16}


def corpus():
    """(train, validation) int64 arrays of character ids and the alphabet (a sorted string)."""
    text = "".join(pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics))
    alphabet = "".join(sorted(set(text)))
    ids = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    lookup = {ord(c): i for i, c in enumerate(alphabet)}
    data = np.array([lookup[int(c)] for c in ids], np.int64)
    cut = int(0.9 * len(data))
    return data[:cut], data[cut:], alphabet


def batch(data, starts, block_size, device):
    """Windows of block_size characters at starts, and the same shifted by one (the targets):
    two [B, block_size] int64 tensors."""
    rows = starts[:, None] + np.arange(block_size)
    return ember.tensor(data[rows]).to(device), ember.tensor(data[rows + 1]).to(device)


def random_starts(data, batch_size, block_size):
    """Window offsets drawn from ember's generator: a checkpoint's RNG state restores them."""
    return ember.randint(0, len(data) - block_size - 1, (batch_size,)).numpy()


def loss_of(model, x, y, autocast_dtype):
    """Mean cross-entropy of the next character, under autocast when a dtype is given."""
    with ember.autocast(x.device.type, dtype=autocast_dtype or ember.bfloat16,
                        enabled=autocast_dtype is not None):
        logits = model(x)  # [B, T, vocab]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@ember.no_grad()
def evaluate(model, data, starts, args):
    """Mean loss over fixed windows of data (the same ones at every evaluation)."""
    model.eval()
    losses = [loss_of(model, *batch(data, s, args.block_size, args.device), AUTOCAST[args.autocast])
              .item() for s in np.array_split(starts, max(1, len(starts) // args.batch_size))]
    model.train()
    return float(np.mean(losses))


def warmup_cosine(optimizer, args):
    """lr rises linearly over --warmup steps, then falls along half a cosine to lr / 10."""
    warm = ember.optim.lr_scheduler.LinearLR(optimizer, start_factor=1.0 / args.warmup,
                                             total_iters=args.warmup)
    decay = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps - args.warmup,
                                                       eta_min=args.lr / 10)
    return ember.optim.lr_scheduler.SequentialLR(optimizer, [warm, decay], [args.warmup])


def plot(history, path):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(history["step"], history["train_loss"], label="train (mean since last point)")
    ax.plot(history["step"], history["val_loss"], marker="o", label="validation")
    ax.set(xlabel="step", ylabel="loss (nats per character)", title="character-level GPT")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=training.default_device(), type=training.device_argument,
                   help="cpu, cuda or cuda:N (default: cuda when a GPU is usable, else cpu)")
    p.add_argument("--steps", type=int, default=600, help="optimizer steps (default 600)")
    p.add_argument("--batch-size", type=int, default=32, help="windows per step (default 32)")
    p.add_argument("--block-size", type=int, default=64, help="context length (default 64)")
    p.add_argument("--layers", type=int, default=4, help="transformer blocks (default 4)")
    p.add_argument("--channels", type=int, default=128, help="model width (default 128)")
    p.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout rate (default 0)")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    p.add_argument("--warmup", type=int, default=50, help="warm-up steps (default 50)")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW's (default 0.1)")
    p.add_argument("--clip", type=float, default=1.0, help="gradient norm clip (default 1)")
    p.add_argument("--autocast", choices=sorted(AUTOCAST), default="none",
                   help="bf16: matrix products in bfloat16 (ember.autocast), default none")
    p.add_argument("--eval-every", type=int, default=100, help="steps between evaluations")
    p.add_argument("--eval-windows", type=int, default=256,
                   help="validation windows per evaluation (default 256)")
    p.add_argument("--sample-chars", type=int, default=400,
                   help="characters to generate at the end (default 400)")
    p.add_argument("--prompt", default="The ", help="text the samples start from")
    p.add_argument("--temperature", type=float, default=0.8, help="sampling temperature")
    p.add_argument("--seed", type=int, default=0, help="seeds the init, batches and sampling")
    p.add_argument("--out", default="out/train_gpt", help="directory for the outputs")
    p.add_argument("--resume", metavar="CHECKPOINT", help="continue from a checkpoint")
    p.add_argument("--stop-after", type=int, metavar="STEP",
                   help="stop after this step, as an interrupted run would (then --resume)")
    p.add_argument("--max-val-loss", type=float, default=float("inf"),
                   help="exit with status 1 if the final validation loss is above this")
    args = p.parse_args(argv)
    if not 0 < args.warmup < args.steps:
        p.error(f"--warmup ({args.warmup}) must lie between 0 and --steps ({args.steps})")
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    ember.manual_seed(args.seed)
    train, val, alphabet = corpus()
    model = GPT(len(alphabet), args.block_size, args.layers, args.channels, args.heads,
                args.dropout).to(args.device)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "position" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "position" not in n)]
    optimizer = ember.optim.AdamW([{"params": decay}, {"params": rest, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    scheduler = warmup_cosine(optimizer, args)
    val_starts = np.random.default_rng(args.seed).integers(
        0, len(val) - args.block_size - 1, args.eval_windows)
    print(f"{len(train)} training and {len(val)} validation characters, alphabet of "
          f"{len(alphabet)}; {sum(p.numel() for p in model.parameters())} parameters on "
          f"{args.device}, autocast {args.autocast}")

    step, history = 0, {"step": [], "train_loss": [], "val_loss": []}
    if args.resume:
        step, history = training.load_checkpoint(args.resume, model, optimizer, scheduler)
        print(f"resumed after step {step}")
    start, running = time.perf_counter(), []
    last = min(args.steps, args.stop_after or args.steps)
    while step < last:
        x, y = batch(train, random_starts(train, args.batch_size, args.block_size),
                     args.block_size, args.device)
        optimizer.zero_grad()
        loss = loss_of(model, x, y, AUTOCAST[args.autocast])
        loss.backward()
        ember.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        scheduler.step()
        step += 1
        running.append(loss.item())
        if step % args.eval_every == 0 or step == args.steps:
            history["step"].append(step)
            history["train_loss"].append(float(np.mean(running)))
            history["val_loss"].append(evaluate(model, val, val_starts, args))
            running = []
            print(f"step {step:5d}  train {history['train_loss'][-1]:.3f}  "
                  f"val {history['val_loss'][-1]:.3f}  ({time.perf_counter() - start:.0f} s)")
    training.save_checkpoint(os.path.join(args.out, "checkpoint.safetensors"), model, optimizer,
                             step, history, scheduler)
    if step < args.steps:
        print(f"stopped after step {step} (--stop-after); continue with --resume")
        return 0

    plot(history, os.path.join(args.out, "loss.png"))
    prompt = [alphabet.index(c) for c in args.prompt if c in alphabet] or [0]
    tokens = model.generate(ember.tensor([prompt], device=args.device), args.sample_chars,
                            args.temperature, np.random.default_rng(args.seed))
    sample = "".join(alphabet[t] for t in tokens)
    with open(os.path.join(args.out, "samples.txt"), "w") as f:
        f.write(sample + "\n")
    final = history["val_loss"][-1]
    seconds = time.perf_counter() - start
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump({"val_loss": final, "seconds": seconds, "history": history,
                   "args": vars(args)}, f, indent=1)
    print(f"validation loss {final:.3f} after {step} steps ({seconds:.0f} s); a sample:\n")
    print(sample)
    if final > args.max_val_loss:
        print(f"validation loss {final:.3f} is above --max-val-loss {args.max_val_loss}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
