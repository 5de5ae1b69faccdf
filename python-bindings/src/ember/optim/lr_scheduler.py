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
