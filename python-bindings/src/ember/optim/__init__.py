"""ember.optim: optimizers (SGD, Adam, AdamW, RMSprop, Adadelta, Adagrad, Adamax, NAdam, RAdam)
and learning-rate schedules (ember.optim.lr_scheduler), autodiff-engine's C++ classes with
PyTorch's Python interface."""

from ember.optim import lr_scheduler
from ember.optim.optimizer import (
    SGD,
    Adadelta,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    NAdam,
    Optimizer,
    RAdam,
    RMSprop,
)

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "Optimizer", "RAdam",
           "RMSprop", "lr_scheduler"]
