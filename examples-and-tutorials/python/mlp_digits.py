"""Trains a multilayer perceptron on scikit-learn's 8 x 8 handwritten digits, flattened to 64
inputs, with Adam, a linear warm-up followed by a cosine decay of the learning rate
(SequentialLR), and gradient-norm clipping.

    python examples-and-tutorials/python/mlp_digits.py [--epochs 20] [--device cpu]

Writes the same files as train_digits.py to --out (default out/mlp_digits)."""

import digits
import models
import training

import ember
from ember import optim


def schedule(optimizer, warmup_steps, total_steps):
    """lr rises linearly from 10 % over warmup_steps, then falls along half a cosine to 0."""
    warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, end_factor=1.0,
                                         total_iters=warmup_steps)
    decay = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps - warmup_steps)
    return optim.lr_scheduler.SequentialLR(optimizer, [warmup, decay], milestones=[warmup_steps])


def main():
    parser = training.base_parser(__doc__.splitlines()[0], out="out/mlp_digits", epochs=20,
                                  batch_size=32, lr=3e-3)
    parser.add_argument("--hidden", type=int, nargs="+", default=[128, 64],
                        help="hidden layer widths (128 64)")
    parser.add_argument("--warmup-epochs", type=float, default=1.0, help="linear warm-up (1)")
    parser.add_argument("--clip", type=float, default=1.0, help="max gradient norm (1.0)")
    args = parser.parse_args()
    data = digits.load_digits_split(size=8, seed=args.seed)  # images [N, 1, 8, 8]
    ember.manual_seed(args.seed)
    model = models.mlp(64, args.hidden).to(args.device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    steps_per_epoch = -(-len(data[0]) // args.batch_size)
    warmup = max(1, round(args.warmup_epochs * steps_per_epoch))
    scheduler = schedule(optimizer, warmup, max(warmup + 1, args.epochs * steps_per_epoch))
    print(model)
    training.fit(args, model, optimizer, data, scheduler=scheduler, clip=args.clip)


if __name__ == "__main__":
    main()
