"""What the training examples share: the command line, one epoch of training with a progress
bar, evaluation, checkpoints that resume exactly, and the final report."""

import argparse
import itertools
import json
import os
import sys
import time

import numpy as np
import plots
from tqdm import tqdm

import ember


def default_device():
    """'cuda' when a GPU is usable here, else 'cpu'."""
    return "cuda" if ember.cuda.is_available() else "cpu"


def device_argument(text):
    """--device's type: the device named by text, refused in one line (argparse's usage error,
    no traceback) when it is malformed or names a GPU this machine cannot use."""
    try:
        device = ember.device(text)
    except ember.EmberError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a device ({e}); use cpu, cuda or "
                                         "cuda:N") from None
    if device.type == "cuda" and not ember.cuda.is_available():
        raise argparse.ArgumentTypeError(
            f"{text!r} asks for a GPU, but none is usable here (ember.cuda.is_available() is "
            "False: no NVIDIA GPU or driver, or Ember built without CUDA); use --device cpu")
    if device.type == "cuda" and device.index is not None and \
            device.index >= ember.cuda.device_count():
        raise argparse.ArgumentTypeError(
            f"{text!r}: this machine has {ember.cuda.device_count()} GPU(s), numbered from 0")
    return str(device)


def base_parser(description, out, epochs, batch_size, lr):
    """The options every training example takes, with that example's defaults."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default=default_device(), type=device_argument,
                   help="cpu, cuda or cuda:N (default: cuda when a GPU is usable, else cpu)")
    p.add_argument("--epochs", type=int, default=epochs, help=f"default {epochs}")
    p.add_argument("--batch-size", type=int, default=batch_size, help=f"default {batch_size}")
    p.add_argument("--lr", type=float, default=lr, help=f"learning rate (default {lr})")
    p.add_argument("--seed", type=int, default=0, help="seeds the split, init and shuffling")
    p.add_argument("--out", default=out, help=f"directory for plots and checkpoint ({out})")
    p.add_argument("--resume", metavar="CHECKPOINT",
                   help="continue from a checkpoint this script wrote")
    p.add_argument("--stop-after", type=int, metavar="EPOCH",
                   help="stop after this epoch, as an interrupted run would (then --resume)")
    p.add_argument("--min-accuracy", type=float, default=0.0,
                   help="exit with status 1 if the final test accuracy is below this (0..1)")
    return p


def sgd_cosine(model, args, train_size, accumulate=1):
    """SGD with momentum and weight decay; lr falls along half a cosine to 0 over the run,
    one step per optimizer step (accumulate batches). Returns (optimizer, scheduler)."""
    optimizer = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                weight_decay=args.weight_decay)
    steps = args.epochs * -(-(-(-train_size // args.batch_size)) // accumulate)
    return optimizer, ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)


def loader(x, y, batch_size):
    """Shuffled batches of (images, labels) tensors. The order is drawn from ember's generator,
    so ember.manual_seed, and the RNG state a checkpoint restores, fix it."""
    return ember.data.DataLoader(ember.data.TensorDataset(x, y), batch_size=batch_size,
                                 shuffle=True)


def train_step(model, batches, loss_fn, optimizer, device, clip=None):
    """One optimizer step over batches, a list of (images, labels) micro-batches: each loss is
    divided by their number and back-propagated at once, so .grad sums to the gradient of the
    mean loss (of equal micro-batches) while only one micro-batch's activations are alive
    (gradient accumulation). clip, when given, clips the gradients' joint norm to it first.
    Returns (sum of loss x images, images)."""
    optimizer.zero_grad()
    total, count = 0.0, 0
    for images, labels in batches:
        images, labels = images.to(device), labels.to(device)
        loss = loss_fn(model(images), labels)
        (loss / len(batches)).backward()
        total += loss.item() * len(labels)  # .item() waits for the device
        count += len(labels)
    if clip is not None:
        ember.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return total, count


def train_epoch(model, loader, loss_fn, optimizer, device, epoch, scheduler=None, clip=None,
                accumulate=1):
    """One pass over loader; returns (mean loss, images per second). Each optimizer step takes
    accumulate batches (train_step); scheduler, when given, steps after every optimizer step;
    clip, when given, clips the gradients' joint norm to it."""
    model.train()
    total, count = 0.0, 0
    start = time.perf_counter()
    bar = tqdm(total=len(loader), desc=f"epoch {epoch}", unit="batch", leave=False, disable=None)
    batches = iter(loader)
    while group := list(itertools.islice(batches, accumulate)):
        loss, n = train_step(model, group, loss_fn, optimizer, device, clip)
        if scheduler is not None:
            scheduler.step()
        total += loss
        count += n
        rate = count / (time.perf_counter() - start)
        bar.update(len(group))
        bar.set_postfix(loss=f"{loss / n:.4f}", img_s=f"{rate:.0f}")
    bar.close()
    return total / count, count / (time.perf_counter() - start)


def predict(model, x, device, batch_size=512):
    """The predicted class of every image of x (a NumPy array), as a NumPy array."""
    model.eval()
    out = []
    with ember.no_grad():
        for i in range(0, len(x), batch_size):
            logits = model(ember.tensor(x[i:i + batch_size]).to(device))  # [B, classes]
            out.append(logits.argmax(1).cpu().numpy())
    return np.concatenate(out)


def save_checkpoint(path, model, optimizer, epoch, history, scheduler=None):
    """Model, optimizer (and schedule) state, ember's RNG state, the epoch and the history."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "rng": ember.get_rng_state(), "epoch": epoch, "history": history}
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    ember.save(state, path)


def load_checkpoint(path, model, optimizer, scheduler=None):
    """Restores what save_checkpoint wrote; returns (epoch done, history)."""
    state = ember.load(path)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    ember.set_rng_state(state["rng"])
    return state["epoch"], state["history"]


def peak_memory(device):
    """Peak bytes held by tensors on device (the caching allocator's statistics)."""
    return ember.max_memory_allocated(str(ember.device(device)))


def memory_limit(device):
    """The device's memory cap in bytes (set_memory_limit or EMBER_MEMORY_LIMIT), 0 for none."""
    return ember.memory_stats(str(ember.device(device)))["limit"]


def finish(args, history, seconds, images_per_s):
    """Prints the final report (peak memory against the cap, when there is one), writes
    metrics.json and exits 1 below --min-accuracy."""
    accuracy = history["test_accuracy"][-1]
    peak, limit = peak_memory(args.device), memory_limit(args.device)
    cap = f" of a {limit / 2**20:.0f} MiB cap ({peak / limit:.0%})" if limit else ""
    print(f"test accuracy {accuracy:.2%} | {images_per_s:.0f} images/s (training) | "
          f"{seconds:.1f} s | device {args.device} | peak memory {peak / 2**20:.1f} MiB{cap}")
    metrics = {"history": history, "test_accuracy": accuracy, "images_per_s": images_per_s,
               "seconds": seconds, "device": args.device, "peak_memory_bytes": peak,
               "memory_limit_bytes": limit}
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    if accuracy < args.min_accuracy:
        print(f"test accuracy {accuracy:.2%} is below --min-accuracy {args.min_accuracy:.2%}",
              file=sys.stderr)
        sys.exit(1)


def fit(args, model, optimizer, data, scheduler=None, clip=None, class_names=None, accumulate=1):
    """Trains model for args.epochs epochs (continuing from args.resume), tests after each,
    checkpoints after each, then writes the plots and the report. data: (x_train, y_train,
    x_test, y_test) NumPy arrays; scheduler steps per optimizer step, which takes accumulate
    batches of args.batch_size."""
    x_train, y_train, x_test, y_test = data
    os.makedirs(args.out, exist_ok=True)
    checkpoint = os.path.join(args.out, "checkpoint.safetensors")
    history, done = {"train_loss": [], "test_accuracy": [], "images_per_s": []}, 0
    if args.resume:
        done, history = load_checkpoint(args.resume, model, optimizer, scheduler)
        print(f"resumed from {args.resume} after epoch {done}")
    train = loader(x_train, y_train, args.batch_size)
    loss_fn = ember.nn.CrossEntropyLoss()
    ember.reset_peak_memory_stats(str(ember.device(args.device)))
    start = time.perf_counter()
    last = min(args.epochs, args.stop_after or args.epochs)
    for epoch in range(done + 1, last + 1):
        loss, rate = train_epoch(model, train, loss_fn, optimizer, args.device, epoch,
                                 scheduler, clip, accumulate)
        accuracy = float(np.mean(predict(model, x_test, args.device) == y_test))
        for key, value in zip(history, (loss, accuracy, rate)):
            history[key].append(value)
        print(f"epoch {epoch:3d}  train loss {loss:.4f}  test accuracy {accuracy:.2%}  "
              f"{rate:.0f} images/s", flush=True)
        save_checkpoint(checkpoint, model, optimizer, epoch, history, scheduler)
    seconds = time.perf_counter() - start
    predictions = predict(model, x_test, args.device)
    plots.curves(history, os.path.join(args.out, "curves.png"))
    plots.confusion(y_test, predictions, os.path.join(args.out, "confusion.png"), class_names)
    plots.misclassified(x_test, y_test, predictions, os.path.join(args.out, "misclassified.png"),
                        class_names=class_names)
    finish(args, history, seconds, float(np.mean(history["images_per_s"][done:] or [0.0])))
