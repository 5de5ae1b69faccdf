"""ember.optim: optimizers (SGD, Adam, AdamW, RMSprop) and learning-rate schedules
(ember.optim.lr_scheduler), autodiff-engine's C++ classes with PyTorch's Python interface."""

from ember.optim import lr_scheduler
from ember.optim.optimizer import SGD, Adam, AdamW, Optimizer, RMSprop

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
