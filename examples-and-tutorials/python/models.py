"""The models of the examples, built from ember.nn layers."""

from ember import nn


def small_cnn(num_classes=10):
    """Two conv + batch-norm + ReLU + 2x2 max-pool stages and a linear classifier, for
    one-channel 28 x 28 images."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3),  # [N, 1, 28, 28] -> [N, 16, 26, 26]
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),  # -> [N, 16, 13, 13]
        nn.Conv2d(16, 32, 3),  # -> [N, 32, 11, 11]
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),  # -> [N, 32, 5, 5]
        nn.Flatten(),  # -> [N, 800]
        nn.Linear(800, num_classes),  # -> [N, 10]
    )


def mlp(in_features=64, hidden=(128, 64), num_classes=10):
    """A multilayer perceptron: Linear + ReLU per hidden width, then a linear classifier."""
    layers, width = [nn.Flatten()], in_features  # [N, 1, 8, 8] -> [N, 64]
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, num_classes))  # -> [N, 10]
    return nn.Sequential(*layers)
