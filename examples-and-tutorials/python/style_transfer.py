"""Neural style transfer with a small CNN whose weights are drawn at random (not trained): an
image is optimised so that its deep features match one sample image's (content) and the Gram
matrices of its features match the other's (style).

    python examples-and-tutorials/python/style_transfer.py [--steps 150] [--size 64]

Random convolutional features already capture texture statistics well enough for a visible
effect (Ulyanov et al. and He et al. observed this); a trained network would do better. The two
images are scikit-learn's sample photos (china.jpg as content, flower.jpg as style). Writes
--out/stylized.png (content, style, result) and --out/loss.png."""

import argparse
import os
import sys
import time

import matplotlib
import numpy as np
import training
from sklearn.datasets import load_sample_images

import ember
from ember import nn

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after choosing the backend)


def downscale(image, height):
    """An image [H, W, 3] uint8 shrunk by block averages to about height rows, as float32
    [1, 3, h, w] in [0, 1]."""
    f = image.shape[0] // height
    h, w = image.shape[0] // f, image.shape[1] // f
    blocks = image[:h * f, :w * f].reshape(h, f, w, f, 3).mean((1, 3)) / 255
    return blocks.transpose(2, 0, 1)[None].astype(np.float32)


def features(layers, x):
    """The activations after every ReLU of layers, for x [1, 3, H, W]."""
    out = []
    for layer in layers:
        x = layer(x)
        if isinstance(layer, nn.ReLU):
            out.append(x)
    return out


def gram(f):
    """The Gram matrix of features f [1, C, H, W]: channel correlations [C, C], averaged over
    positions."""
    flat = f.reshape(f.shape[1], -1)  # [C, H*W]
    return flat @ flat.T / flat.shape[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=training.default_device(), type=training.device_argument,
                   help="cpu, cuda or cuda:N (default: cuda when a GPU is usable, else cpu)")
    p.add_argument("--steps", type=int, default=150, help="Adam steps on the image (150)")
    p.add_argument("--size", type=int, default=64, help="image height in pixels (64)")
    p.add_argument("--lr", type=float, default=0.03, help="Adam's learning rate (0.03)")
    p.add_argument("--style-weight", type=float, default=1e3,
                   help="weight of the style (Gram matrix) loss against the content loss (1000)")
    p.add_argument("--seed", type=int, default=0, help="seeds the random feature layers (0)")
    p.add_argument("--out", default="out/style_transfer",
                   help="directory for the images and the loss curve (out/style_transfer)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ember.manual_seed(args.seed)

    china, flower = load_sample_images().images
    content = ember.tensor(downscale(china, args.size)).to(args.device)  # [1, 3, h, w]
    style = ember.tensor(downscale(flower, args.size)).to(args.device)
    layers = nn.Sequential(  # random weights, never trained
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(),
    ).to(args.device).requires_grad_(False)
    with ember.no_grad():
        content_target = features(layers, content)[-1]
        style_targets = [gram(f) for f in features(layers, style)]

    image = content.clone().requires_grad_()  # start from the content image
    optimizer = ember.optim.Adam([image], lr=args.lr)
    losses, start = [], time.perf_counter()
    for step in range(1, args.steps + 1):
        feats = features(layers, image)
        content_loss = nn.functional.mse_loss(feats[-1], content_target)
        style_loss = sum(nn.functional.mse_loss(gram(f), g) for f, g in zip(feats, style_targets))
        loss = content_loss + args.style_weight * style_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with ember.no_grad():
            image[...] = image.clamp(0, 1)  # keep a valid picture
        losses.append(loss.item())
        if step == 1 or step % 25 == 0:
            print(f"step {step:4d}  loss {losses[-1]:.4f}  (content {content_loss.item():.4f},"
                  f" style {style_loss.item():.6f})", flush=True)
    print(f"{args.steps} steps in {time.perf_counter() - start:.1f} s on {args.device}; "
          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")

    pictures = [content, style, image.detach()]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    for ax, picture, title in zip(axes, pictures, ["content", "style", "result"]):
        ax.imshow(picture.cpu().numpy()[0].transpose(1, 2, 0))
        ax.set_title(title)
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "stylized.png"), dpi=100)
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.semilogy(losses)
    ax.set(xlabel="step", ylabel="loss")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "loss.png"), dpi=100)
    if not losses[-1] < losses[0]:
        sys.exit("style_transfer: the loss did not fall")


if __name__ == "__main__":
    main()
