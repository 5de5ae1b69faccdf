"""The optimizers of ember.optim: PyTorch's constructors (parameter groups as dicts, betas=...)
over autodiff-engine's optimizers, whose step() runs in C++: one fused update per group for SGD,
Adam, AdamW and RMSprop, a few elementwise ops per parameter for the others."""

from collections.abc import MutableMapping

from ember import _core
from ember.nn.module import zero_grads

_FLAGS = ("nesterov", "maximize", "centered", "decoupled_weight_decay", "master_weights")


def _engine_options(options, where):
    """PyTorch's option names and values as the engine's: betas -> beta1/beta2, flags -> 0/1."""
    out = {}
    for name, value in options.items():
        if name == "betas":
            out["beta1"], out["beta2"] = (float(b) for b in value)
        elif name in ("amsgrad", "foreach", "fused", "capturable", "differentiable"):
            if value:
                raise _core.NotSupportedError(f"{where}: option '{name}' is not supported")
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        else:
            raise _core.ValueError(f"{where}: option '{name}' must be a number, not {value!r}")
    return out


def _torch_options(options):
    """The engine's options as PyTorch names them: beta1/beta2 -> betas, flags -> bools."""
    out = {}
    for name, value in options.items():
        if name == "beta1":
            out["betas"] = (value, options["beta2"])
        elif name != "beta2":
            out[name] = bool(value) if name in _FLAGS else value
    return out


class ParamGroup(MutableMapping):
    """One parameter group, a mapping as PyTorch's dict: 'params' and the options, read from the
    optimizer. Setting an option (group['lr'] = 0.01) sets it in the optimizer, checked."""

    def __init__(self, optimizer, index, params):
        self._optimizer, self._index, self._params = optimizer, index, params

    def _options(self):
        return _torch_options(self._optimizer._impl.group_options(self._index))

    def __getitem__(self, name):
        return self._params if name == "params" else self._options()[name]

    def __setitem__(self, name, value):
        if name == "params":
            raise _core.NotSupportedError("param_groups: a group's params cannot be replaced")
        where = f"{self._optimizer._impl.name}.param_groups[{self._index}]"
        for key, v in _engine_options({name: value}, where).items():
            self._optimizer._impl.set_option(self._index, key, v)

    def __delitem__(self, name):
        raise _core.NotSupportedError("param_groups: a group's options cannot be deleted")

    def __iter__(self):
        return iter(["params", *self._options()])

    def __len__(self):
        return 1 + len(self._options())

    def __repr__(self):
        return repr({k: (f"<{len(v)} tensors>" if k == "params" else v) for k, v in self.items()})


class Optimizer:
    """An optimizer over parameters: an iterable of Tensors, or a list of dicts, each with
    'params' and options that override the constructor's defaults for that group.

    Every optimizer takes ``master_weights`` (default False; a group option too): each
    float16/bfloat16 parameter is then updated through a float32 copy of itself kept in the
    optimizer's state (``state_dict()['state'][i]['master']``), with float32 gradients and
    buffers, and set to that copy rounded to its dtype after each step, so that updates smaller
    than the half-precision spacing still add up. Parameters of other dtypes are unaffected."""

    _engine = None  # the ember._core optimizer class

    def __init__(self, params, **defaults):
        name = type(self).__name__
        self.defaults = dict(defaults)
        groups = list(params)
        if not groups:
            raise _core.ValueError(f"{name}: the parameter list is empty; pass at least one")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        first = None
        self.param_groups = []
        for i, group in enumerate(groups):
            group = dict(group)
            tensors = group.pop("params")
            tensors = [tensors] if isinstance(tensors, _core.Tensor) else list(tensors)
            options = _engine_options(group, f"{name} group {i}")
            if first is None:
                first = self._impl = self._engine(tensors, _engine_options(defaults, name))
                for key, value in options.items():
                    self._impl.set_option(0, key, value)
            else:
                self._impl.add_param_group(tensors, options)
            self.param_groups.append(ParamGroup(self, i, tensors))

    def add_param_group(self, group):
        """Adds a group: a dict with 'params' and the options it overrides."""
        group = dict(group)
        tensors = group.pop("params")
        tensors = [tensors] if isinstance(tensors, _core.Tensor) else list(tensors)
        self._impl.add_param_group(tensors, _engine_options(group, type(self).__name__))
        self.param_groups.append(ParamGroup(self, len(self.param_groups), tensors))

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's grad (set_to_none, PyTorch's default), or with
        set_to_none=False fills each grad there is with zeros, in place."""
        if set_to_none:
            self._impl.zero_grad()
        else:
            zero_grads((p for g in self.param_groups for p in g["params"]), False)

    def step(self):
        """Updates every parameter that has a grad, without recording history."""
        self._impl.step()

    def state_dict(self):
        """{'state': {index: {'step': int, buffer: Tensor}}, 'param_groups': [{option: value,
        'params': [index]}]}: deep copies, so later steps leave it unchanged."""
        saved = self._impl.state_dict()
        for group in saved["param_groups"]:
            params = group.pop("params")
            group.update(_torch_options(group), params=params)
            group.pop("beta1", None), group.pop("beta2", None)
        return saved

    def load_state_dict(self, state_dict):
        """Restores a state_dict() of an optimizer of this kind over parameters of the same
        shapes in the same groups (the step counts and buffers bit for bit)."""
        groups = []
        for group in state_dict["param_groups"]:
            group = dict(group)
            params = group.pop("params")
            groups.append({**_engine_options(group, type(self).__name__), "params": params})
        state = {int(k): dict(v) for k, v in state_dict["state"].items()}
        self._impl.load_state_dict({"state": state, "param_groups": groups})

    def __repr__(self):
        lines = [f"    group {i}: {g!r}" for i, g in enumerate(self.param_groups)]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

    _engine = _core._SGD

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, maximize=False, master_weights=False):
        super().__init__(params, lr=lr, momentum=momentum, dampening=dampening,
                         weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                         master_weights=master_weights)


class Adam(Optimizer):
    """Adam (Kingma and Ba) with L2 weight decay."""

    _engine = _core._Adam

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 maximize=False, amsgrad=False, master_weights=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         maximize=maximize, amsgrad=amsgrad,
                         master_weights=master_weights)


class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov and Hutter)."""

    _engine = _core._AdamW

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 maximize=False, amsgrad=False, master_weights=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         maximize=maximize, amsgrad=amsgrad,
                         master_weights=master_weights)


class RMSprop(Optimizer):
    """RMSprop, plain or centered, with momentum and weight decay."""

    _engine = _core._RMSprop

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, maximize=False, master_weights=False):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                         momentum=momentum, centered=centered, maximize=maximize,
                         master_weights=master_weights)


class Adadelta(Optimizer):
    """Adadelta (Zeiler): steps scaled by running averages of squared gradients and updates."""

    _engine = _core._Adadelta

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False,
                 master_weights=False):
        super().__init__(params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                         maximize=maximize,
                         master_weights=master_weights)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): steps scaled by the root of the sum of squared gradients."""

    _engine = _core._Adagrad

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0.0, eps=1e-10, maximize=False,
                 master_weights=False):
        super().__init__(params, lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                         initial_accumulator_value=initial_accumulator_value, eps=eps,
                         maximize=maximize,
                         master_weights=master_weights)


class Adamax(Optimizer):
    """Adamax (Kingma and Ba): Adam with the infinity norm of past gradients."""

    _engine = _core._Adamax

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 maximize=False, master_weights=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         maximize=maximize,
                         master_weights=master_weights)


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum and a momentum warm-up (momentum_decay)."""

    _engine = _core._NAdam

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False,
                 master_weights=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         momentum_decay=momentum_decay,
                         decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                         master_weights=master_weights)


class RAdam(Optimizer):
    """RAdam (Liu et al.): Adam whose adaptive step is rectified while its variance is high."""

    _engine = _core._RAdam

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, maximize=False, master_weights=False):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                         master_weights=master_weights)
