"""ember.utils.data: ember.data under PyTorch's import path, so that
``from ember.utils.data import DataLoader, Dataset, TensorDataset, random_split`` works."""

from ember.data import *  # noqa: F403
from ember.data import __all__  # noqa: F401
