"""Losses as modules: each calls its bound op (or nn.functional's) with the options given at
construction."""

from ember import _core
from ember.nn import functional
from ember.nn.module import Module


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction='{self.reduction}'"


class CrossEntropyLoss(_Loss):
    """Cross entropy of logits [N, C] against int64 class indices [N] or class probabilities of
    the logits' shape (nn.functional.cross_entropy)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.weight, self.ignore_index, self.label_smoothing = weight, ignore_index, label_smoothing

    def forward(self, input, target):
        return functional.cross_entropy(input, target, self.weight, self.ignore_index,
                                        self.reduction, self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log likelihood of log-probabilities against class indices (ember.nll_loss)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):
        return _core.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class MSELoss(_Loss):
    """(input - target)^2, reduced (ember.mse_loss)."""

    def forward(self, input, target):
        return _core.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """|input - target|, reduced (ember.l1_loss)."""

    def forward(self, input, target):
        return _core.l1_loss(input, target, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits against probabilities of their shape, each element's loss
    scaled by weight (broadcast to it) and its positive term by pos_weight, PyTorch's order of
    arguments (ember.binary_cross_entropy_with_logits)."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.weight, self.pos_weight = weight, pos_weight

    def forward(self, input, target):
        return functional.binary_cross_entropy_with_logits(input, target, self.weight,
                                                           self.reduction, self.pos_weight)
