"""nn.utils: gradient clipping over a model's parameters (autodiff-engine's clip_grad)."""

from ember import _core


def _params(parameters):
    return [parameters] if isinstance(parameters, _core.Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales every grad so that their joint norm_type-norm is at most max_norm; returns the
    total norm before clipping (a 0-d tensor). norm_type may be float('inf')."""
    return _core._clip_grad_norm_(
        _params(parameters), float(max_norm), float(norm_type), error_if_nonfinite
    )


def clip_grad_value_(parameters, clip_value):
    """Clamps every grad element into [-clip_value, clip_value]."""
    _core._clip_grad_value_(_params(parameters), float(clip_value))
