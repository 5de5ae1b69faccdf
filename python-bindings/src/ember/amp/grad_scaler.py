"""ember.amp.GradScaler: dynamic loss scaling for float16 training, with PyTorch's interface.

float16 keeps 5 exponent bits: gradients below about 6e-8 flush to zero and values above 65504
overflow. The scaler multiplies the loss by a large factor before backward (so the gradients
are that factor larger and stay representable), divides the gradients by it before the
optimizer step, skips a step whose gradients hold an inf or NaN (and halves the factor), and
doubles the factor after ``growth_interval`` steps in a row without one:

    scaler = ember.amp.GradScaler()
    for x, y in batches:
        optimizer.zero_grad()
        with ember.autocast("cuda", dtype=ember.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)            # optional: to clip the true gradients
        ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)                # skipped if a gradient is inf/NaN
        scaler.update()                       # lowers or grows the scale

bfloat16 has float32's range and needs no scaler."""

from ember import _core
from ember.autograd import no_grad

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Dynamic loss scaling. ``init_scale`` is the first factor; a step with inf/NaN gradients
    multiplies it by ``backoff_factor``, and ``growth_interval`` finite steps in a row multiply it
    by ``growth_factor``. With ``enabled=False`` every method passes through (scale returns its
    input, step calls optimizer.step()), so one script serves both precisions."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        where = "ember.amp.GradScaler"
        if not init_scale > 0:
            raise _core.ValueError(f"{where}: init_scale must be > 0, not {init_scale}")
        if not growth_factor > 1.0:
            raise _core.ValueError(f"{where}: growth_factor must be > 1, not {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise _core.ValueError(
                f"{where}: backoff_factor must lie in (0, 1), not {backoff_factor}")
        if not (isinstance(growth_interval, int) and growth_interval > 0):
            raise _core.ValueError(
                f"{where}: growth_interval must be a positive int, not {growth_interval!r}")
        self.device = device
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0  # finite steps in a row since the scale last changed
        self._per_optimizer = {}  # id(optimizer) -> {"stage": ..., "found_inf": bool}

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current factor (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def scale(self, outputs):
        """outputs (a tensor, or a list/tuple of them, nested) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, _core.Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise _core.ValueError(
            f"GradScaler.scale: outputs must be a tensor or a list/tuple of tensors, not "
            f"{type(outputs).__name__}")

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": False})

    def unscale_(self, optimizer):
        """Divides the gradients of optimizer's parameters by the scale, in place, and notes
        whether any holds an inf or NaN. At most once per optimizer between update() calls."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise _core.ValueError(
                "GradScaler.unscale_: already called on this optimizer since the last update(); "
                "call it once per step, before step()")
        if state["stage"] == _STEPPED:
            raise _core.ValueError("GradScaler.unscale_: called after step(); call update() first")
        inv_scale = 1.0 / self._scale
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inv_scale)
                    found_inf = found_inf or not bool(_core.isfinite(p.grad).all().item())
        state.update(stage=_UNSCALED, found_inf=found_inf)

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless unscale_ did) and runs optimizer.step(*args,
        **kwargs) if they are all finite; returns what it returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise _core.ValueError(
                "GradScaler.step: already called on this optimizer since the last update()")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Sets the scale for the next step: new_scale if given; else lowered by backoff_factor
        if any optimizer stepped (or was unscaled) with inf/NaN gradients, raised by
        growth_factor after growth_interval finite steps in a row."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = float(new_scale.item() if isinstance(new_scale, _core.Tensor) else new_scale)
            if not value > 0:
                raise _core.ValueError(f"GradScaler.update: new_scale must be > 0, not {value}")
            self._scale = value
        elif any(s["found_inf"] for s in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        elif self._per_optimizer:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self):
        """{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'}
        as PyTorch saves them ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise _core.ValueError(
                "GradScaler.load_state_dict: the state is empty (saved from a disabled scaler)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
