"""End to end: an MLP learns two interleaved spirals (NumPy-generated) to >= 95 % accuracy on
held-out points, with DataLoader, Adam, a cosine schedule and CrossEntropyLoss, in a few
seconds on the CPU."""

import numpy as np

import ember
from ember import nn, optim
from ember.data import DataLoader, TensorDataset


def spirals(n, seed):
    """n points per class on two interleaved spirals, with a little noise."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.1, 1.0, 2 * n)
    theta = 3 * np.pi * r + np.repeat([0.0, np.pi], n)
    x = np.stack([r * np.cos(theta), r * np.sin(theta)], 1) + rng.normal(0, 0.02, (2 * n, 2))
    return x.astype(np.float32), np.repeat([0, 1], n)


def test_mlp_learns_two_spirals():
    ember.manual_seed(0)
    x, y = spirals(500, seed=0)
    loader = DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=100,
                        shuffle=True, generator=0)
    model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 2))
    epochs = 80
    opt = optim.Adam(model.parameters(), lr=0.02)
    schedule = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()
        schedule.step()
    xt, yt = spirals(500, seed=1)
    model.eval()
    with ember.no_grad():
        predicted = model(ember.tensor(xt)).argmax(dim=1).numpy()
    accuracy = (predicted == yt).mean()
    assert accuracy >= 0.95, f"accuracy {accuracy:.3f}"
