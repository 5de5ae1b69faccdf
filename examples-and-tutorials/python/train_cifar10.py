"""Trains a small ResNet on CIFAR-10, read from its Python batches in --data, with random crop
and flip augmentation done by Ember ops, gradient accumulation and an optional memory cap.

    python examples-and-tutorials/python/train_cifar10.py --data ~/data/cifar-10-batches-py \\
        [--subset 5000] [--accumulate 4 --memory-limit 2GiB]

--data holds data_batch_1 .. data_batch_5 and test_batch, as unpacked from cifar-10-python.tar.gz
(https://www.cs.toronto.edu/~kriz/cifar.html); nothing is downloaded, and a missing or damaged
file stops the script with a message saying which file to put where (exit status 2). Each
optimizer step sums the gradients of --accumulate batches of --batch-size images (an effective
batch of their product); --memory-limit caps the device's memory, and past the cap the
OutOfMemoryError is shown with what to change (exit status 3). Writes the same files as
train_digits.py."""

import sys

import cifar
import models
import training

import ember


def parse_args(argv=None):
    """The common options (training.base_parser) and this example's own, from argv (default
    the command line); sets the memory cap."""
    parser = training.base_parser(__doc__.splitlines()[0], out="out/train_cifar10", epochs=15,
                                  batch_size=128, lr=0.1)
    parser.add_argument("--data", required=True, help="directory with the CIFAR-10 batches")
    parser.add_argument("--subset", type=int, default=0,
                        help="train on the first N training images only (all 50 000)")
    parser.add_argument("--accumulate", type=int, default=1, metavar="K",
                        help="batches per optimizer step: the effective batch is K x batch size")
    parser.add_argument("--memory-limit", metavar="BYTES",
                        help="cap the device's memory, e.g. 2GiB or 512MiB (no cap beyond "
                        "EMBER_MEMORY_LIMIT's)")
    parser.add_argument("--width", type=int, default=16,
                        help="channels of the first stage; the others have 2x and 4x (16)")
    parser.add_argument("--blocks", type=int, default=1,
                        help="residual blocks per stage: 1 is ResNet-8, 3 ResNet-20 (1)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (0.9)")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="L2 penalty (5e-4)")
    args = parser.parse_args(argv)
    if args.accumulate < 1:
        parser.error(f"--accumulate is {args.accumulate}; pass 1 or more")
    try:  # the cap is set before anything is allocated on the device
        if args.memory_limit:
            ember.set_memory_limit(args.memory_limit, str(ember.device(args.device)))
    except ember.ValueError as e:
        parser.error(f"--memory-limit: {e}")
    return args


def build(args, x_train):
    """The model (Normalize by the training set's channel statistics, RandomCropFlip, then the
    ResNet) on args.device, its optimizer and its schedule."""
    mean, std = cifar.channel_stats(x_train)
    stem = (cifar.Normalize(mean, std), cifar.RandomCropFlip(pad=4))
    model = models.resnet(args.width, args.blocks, stem=stem).to(args.device)
    optimizer, scheduler = training.sgd_cosine(model, args, len(x_train), args.accumulate)
    return model, optimizer, scheduler


def out_of_memory(args, error):
    """Reports an OutOfMemoryError with what to change, and exits with status 3."""
    print(f"train_cifar10: ember.OutOfMemoryError: {error}\n"
          f"Fix: lower --batch-size (now {args.batch_size}) and raise --accumulate (now "
          f"{args.accumulate}) so that their product, the effective batch, stays "
          f"{args.batch_size * args.accumulate}; or raise --memory-limit (now "
          f"{args.memory_limit or 'none'}).", file=sys.stderr)
    sys.exit(3)


def main(argv=None):
    args = parse_args(argv)
    try:
        data = cifar.load(args.data, args.subset)
    except (ember.data.DataNotFoundError, ember.data.DataFormatError) as e:
        print(f"train_cifar10: {e}", file=sys.stderr)
        sys.exit(2)
    ember.manual_seed(args.seed)
    try:
        model, optimizer, scheduler = build(args, data[0])
        print(f"{len(data[0])} training and {len(data[2])} test images, device {args.device}, "
              f"effective batch {args.batch_size} x {args.accumulate}")
        training.fit(args, model, optimizer, data, scheduler, class_names=cifar.CLASSES,
                     accumulate=args.accumulate)
    except ember.OutOfMemoryError as e:
        out_of_memory(args, e)


if __name__ == "__main__":
    main()
