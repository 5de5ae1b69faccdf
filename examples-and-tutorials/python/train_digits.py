"""Trains a small CNN on scikit-learn's handwritten digits, resized to 28 x 28.

    python examples-and-tutorials/python/train_digits.py [--epochs 20] [--device cpu]

The 1 797 digits ship with scikit-learn, so nothing is downloaded. Writes to --out: curves.png
(loss and accuracy per epoch), confusion.png, misclassified.png, metrics.json and
checkpoint.safetensors, from which --resume continues exactly where the run stopped."""

import digits
import models
import training

import ember


def main():
    parser = training.base_parser(__doc__.splitlines()[0], out="out/train_digits", epochs=20,
                                  batch_size=32, lr=0.03)
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (0.9)")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="L2 penalty (5e-4)")
    args = parser.parse_args()
    data = digits.load_digits_split(size=28, seed=args.seed)  # images [N, 1, 28, 28]
    ember.manual_seed(args.seed)
    model = models.small_cnn().to(args.device)
    optimizer, scheduler = training.sgd_cosine(model, args, len(data[0]))
    print(model)
    print(f"{len(data[0])} training and {len(data[2])} test images, device {args.device}")
    training.fit(args, model, optimizer, data, scheduler)


if __name__ == "__main__":
    main()
