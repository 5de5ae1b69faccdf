"""ember.debug: quick looks at tensors and gradients while a model misbehaves."""

from ember import _core


def _nonfinite(t):
    """Whether t holds a NaN or an infinity (x * 0 is 0 exactly for finite x)."""
    return bool(_core.ne(t.detach() * 0, 0).any())


def check_nan_gradients(params):
    """The name of the first parameter whose grad holds a NaN or an infinity, or None. params:
    named_parameters() pairs, or plain tensors (named by position, 'param 3')."""
    for i, item in enumerate(params):
        name, p = item if isinstance(item, tuple) else (f"param {i}", item)
        if p.grad is not None and _nonfinite(p.grad):
            return name
    return None


def tensor_stats(t):
    """{'shape', 'dtype', 'device', 'min', 'max', 'mean', 'std', 'nan_count', 'inf_count'} of a
    tensor, as Python numbers (the statistics of a floating tensor include its NaNs)."""
    x = t.detach()
    stats = {"shape": tuple(x.shape), "dtype": x.dtype, "device": x.device}
    if x.numel() == 0:
        return stats
    f = x if x.is_floating_point() else x.double()
    stats.update(
        min=f.min().item(),
        max=f.max().item(),
        mean=f.mean().item(),
        std=f.std().item() if x.numel() > 1 else 0.0,
        nan_count=int(_core.ne(f, f).sum().item()),
        inf_count=int(_core.eq(_core.abs(f), float("inf")).sum().item()),
    )
    return stats
