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


class BasicBlock(nn.Module):
    """A ResNet basic block: x + two 3x3 convs (each with batch norm when norm), ReLU after the
    sum. When stride or width change, the shortcut is a strided 1x1 conv (and batch norm)."""

    def __init__(self, cin, cout, stride=1, norm=True):
        super().__init__()
        bn = nn.BatchNorm2d if norm else nn.Identity
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=not norm)
        self.bn1 = bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=not norm)
        self.bn2 = bn(cout)
        self.relu = nn.ReLU()
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=not norm),
                                          bn(cout))

    def forward(self, x):  # x: [N, cin, H, W] -> [N, cout, H / stride, W / stride]
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + self.shortcut(x))


def resnet(width=16, blocks=1, num_classes=10, norm=True, stem=()):
    """A small ResNet for 32 x 32 colour images: a 3x3 conv to width channels, three stages of
    blocks BasicBlocks at width, 2 width and 4 width channels (the last two halve the size),
    global average pooling and a linear classifier; blocks=1 is ResNet-8, 3 is ResNet-20.
    norm=False leaves out batch norm. stem: layers put first (input preparation)."""
    bn = nn.BatchNorm2d if norm else nn.Identity
    layers = [*stem, nn.Conv2d(3, width, 3, padding=1, bias=not norm), bn(width), nn.ReLU()]
    cin = width  # [N, 3, 32, 32] -> [N, width, 32, 32]
    for stage, cout in enumerate((width, 2 * width, 4 * width)):
        for b in range(blocks):
            layers.append(BasicBlock(cin, cout, 2 if stage and b == 0 else 1, norm))
            cin = cout  # stages end at 32, 16 and 8 pixels
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    return nn.Sequential(*layers)  # -> [N, num_classes]
