"""ember.optim.lr_scheduler: PyTorch's learning-rate schedules, each autodiff-engine's (which
computes the numbers PyTorch does). A schedule sets its optimizer's lr once per step()."""

from ember import _core


class LRScheduler:
    """The base of the schedules: step(), get_last_lr(), last_epoch, state_dict()."""

    def __init__(self, optimizer, impl):
        self.optimizer, self._impl = optimizer, impl

    def step(self):
        """To the next epoch: sets every group's lr."""
        self._impl.step()

    def get_last_lr(self):
        """Every group's lr as set by the last step (a list)."""
        return list(self._impl.get_last_lr())

    @property
    def last_epoch(self):
        """The epoch of the last step (0 after construction)."""
        return self._impl.last_epoch

    @property
    def base_lrs(self):
        """Every group's initial lr."""
        return list(self._impl.base_lrs)

    def state_dict(self):
        """{'last_epoch', '_step_count', 'base_lrs', '_last_lr', 'children'}: numbers and lists,
        with the states of the schedules a composite one runs. Restore the optimizer too: its
        lrs are its own state."""
        return self._impl.state_dict()

    def load_state_dict(self, state_dict):
        """Restores a state_dict() of a schedule built the same way."""
        self._impl.load_state_dict(state_dict)


class StepLR(LRScheduler):
    """lr = base * gamma^(epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1):
        super().__init__(optimizer, _core._StepLR(optimizer._impl, step_size, gamma))


class MultiStepLR(LRScheduler):
    """lr = base * gamma^(number of milestones reached)."""

    def __init__(self, optimizer, milestones, gamma=0.1):
        super().__init__(optimizer, _core._MultiStepLR(optimizer._impl, list(milestones), gamma))


class ExponentialLR(LRScheduler):
    """lr = base * gamma^epoch."""

    def __init__(self, optimizer, gamma):
        super().__init__(optimizer, _core._ExponentialLR(optimizer._impl, gamma))


class CosineAnnealingLR(LRScheduler):
    """Half a cosine from base down to eta_min over T_max epochs."""

    def __init__(self, optimizer, T_max, eta_min=0.0):  # noqa: N803 (PyTorch's name)
        super().__init__(optimizer, _core._CosineAnnealingLR(optimizer._impl, T_max, eta_min))


class LinearLR(LRScheduler):
    """A linear change of the factor from start_factor to end_factor over total_iters."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5):
        impl = _core._LinearLR(optimizer._impl, start_factor, end_factor, total_iters)
        super().__init__(optimizer, impl)


class SequentialLR(LRScheduler):
    """schedulers[i] runs from milestones[i - 1] on, each starting over at its milestone."""

    def __init__(self, optimizer, schedulers, milestones):
        self._schedulers = list(schedulers)
        impl = _core._SequentialLR(
            optimizer._impl, [s._impl for s in self._schedulers], list(milestones)
        )
        super().__init__(optimizer, impl)


class ChainedScheduler(LRScheduler):
    """Steps every schedule in turn, so their factors multiply."""

    def __init__(self, schedulers, optimizer=None):
        self._schedulers = list(schedulers)
        optimizer = optimizer or self._schedulers[0].optimizer
        impl = _core._ChainedScheduler(optimizer._impl, [s._impl for s in self._schedulers])
        super().__init__(optimizer, impl)


def _per_group(value):
    """A number or a list/tuple of numbers (one per group) as the list the engine takes."""
    return [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)]


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the lr rises from max_lr / div_factor to max_lr over the first
    pct_start of the steps, then anneals to max_lr / (div_factor * final_div_factor); the
    momentum (or beta1) cycles the other way between max_momentum and base_momentum. Step it
    once per batch: total_steps, or epochs * steps_per_epoch, steps in all."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise _core.ValueError(
                    "OneCycleLR: pass total_steps, or both epochs and steps_per_epoch")
            for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(value, int) or value <= 0:
                    raise _core.ValueError(
                        f"OneCycleLR: {name} is {value!r}; pass a positive int")
            total_steps = epochs * steps_per_epoch
        impl = _core._OneCycleLR(
            optimizer._impl, _per_group(max_lr), total_steps, pct_start, anneal_strategy,
            cycle_momentum, _per_group(base_momentum), _per_group(max_momentum), div_factor,
            final_div_factor, three_phase)
        super().__init__(optimizer, impl)

    @property
    def total_steps(self):
        """How many steps the schedule runs (stepping past it is an error)."""
        return self._impl.total_steps


class ReduceLROnPlateau(LRScheduler):
    """Multiplies every group's lr by factor (not below min_lr) once a metric has not improved
    for more than patience epochs, then waits cooldown epochs; step(metric) once per epoch.

    mode 'min' (a loss) or 'max' (an accuracy); an improvement must beat the best by threshold,
    relative (threshold_mode 'rel') or absolute ('abs'); changes of eps or less are skipped.
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0.0, eps=1e-8):
        impl = _core._ReduceLROnPlateau(optimizer._impl, mode, factor, patience, threshold,
                                        threshold_mode, cooldown, _per_group(min_lr), eps)
        super().__init__(optimizer, impl)

    def step(self, metrics):
        """One epoch's metric: a number or a one-element tensor."""
        self._impl.step(float(metrics))

    @property
    def best(self):
        """The best metric so far."""
        return self._impl.best

    @property
    def num_bad_epochs(self):
        """Epochs in a row without improvement."""
        return self._impl.num_bad_epochs

    @property
    def in_cooldown(self):
        """Whether the schedule waits after a reduction."""
        return self._impl.in_cooldown

    def state_dict(self):
        """{'last_epoch', 'best', 'num_bad_epochs', 'cooldown_counter', '_last_lr'}. Restore
        the optimizer too: its lrs are its own state."""
        return self._impl.state_dict()
