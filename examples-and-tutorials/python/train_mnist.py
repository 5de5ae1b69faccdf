"""Trains the small CNN of train_digits.py on MNIST or Fashion-MNIST, read from the IDX files
in --data (gzipped or not). Nothing is downloaded: when a file is missing or damaged, the
message says which file to put where.

    python examples-and-tutorials/python/train_mnist.py --data ~/data/mnist [--kind fashion]

The directory holds train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte
and t10k-labels-idx1-ubyte (each may end in .gz). Writes the same files as train_digits.py."""

import sys

import models
import numpy as np
import training

import ember

FASHION = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Boot"]


def load(directory, kind, subset):
    """(x_train, y_train, x_test, y_test): images float32 [N, 1, 28, 28] normalised with the
    training set's statistics, labels int64 [N]; the first subset training images when given."""
    x_train, y_train = ember.data.load_mnist(directory, train=True, kind=kind)
    x_test, y_test = ember.data.load_mnist(directory, train=False, kind=kind)
    if subset:
        x_train, y_train = x_train[:subset], y_train[:subset]
    x_train, x_test = (x.astype(np.float32)[:, None] / 255 for x in (x_train, x_test))
    mean, std = x_train.mean(), x_train.std()
    return (x_train - mean) / std, y_train, (x_test - mean) / std, y_test


def main():
    parser = training.base_parser(__doc__.splitlines()[0], out="out/train_mnist", epochs=3,
                                  batch_size=128, lr=0.05)
    parser.add_argument("--data", required=True, help="directory with the four IDX files")
    parser.add_argument("--kind", choices=["mnist", "fashion"], default="mnist",
                        help="MNIST digits or Fashion-MNIST clothes (mnist)")
    parser.add_argument("--subset", type=int, default=0,
                        help="train on the first N training images only (all)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (0.9)")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="L2 penalty (5e-4)")
    args = parser.parse_args()
    try:
        data = load(args.data, args.kind, args.subset)
    except (ember.data.DataNotFoundError, ember.data.DataFormatError) as e:
        print(f"train_mnist: {e}", file=sys.stderr)
        sys.exit(2)
    ember.manual_seed(args.seed)
    model = models.small_cnn().to(args.device)
    optimizer, scheduler = training.sgd_cosine(model, args, len(data[0]))
    print(f"{args.kind}: {len(data[0])} training and {len(data[2])} test images, "
          f"device {args.device}")
    names = FASHION if args.kind == "fashion" else None
    training.fit(args, model, optimizer, data, scheduler, class_names=names)


if __name__ == "__main__":
    main()
