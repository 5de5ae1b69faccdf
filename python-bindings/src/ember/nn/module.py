"""nn.Module: the base of every layer and model. Parameters, buffers and submodules assigned as
attributes are registered by name, so a model knows its weights (``parameters()``), can be saved
and restored (``state_dict()``), moved (``to()``) and switched between training and evaluation.

An ``ember.EmberError`` raised inside a forward is re-raised by the outermost module call as the
same exception class, its message prefixed with the type and path (``features.0``) of the
innermost module that raised it."""

import threading
from collections import OrderedDict

import numpy as np

from ember import _core
from ember._arguments import numpy_fix
from ember.autograd import no_grad
from ember.nn.parameter import Parameter

_calls = threading.local()  # the stack of module calls in progress, per thread

# Bumped by every change to any module's attributes, tables or modes, so that a compiled step
# (ember.compile) recomputes its module guards only after something changed rather than walking
# every module at every call. Any module's change bumps it: a needless recomputation is cheap, a
# missed one would replay a stale plan.
_structure_version = 0


def _structure_changed():
    global _structure_version
    _structure_version += 1


def structure_version():
    """A number that changes whenever any module's attributes, parameters, buffers, submodules
    or training mode change."""
    return _structure_version


def _name_tensors(module, prefix):
    """Gives every parameter and buffer of module its dotted name under prefix ('0.weight',
    '1.running_mean'): the names printed graphs show (Tensor.graph()). Called where tensors or
    submodules are registered, so that each registration names its subtree: a model's
    parameters end up named from the outermost module they were registered into."""
    for name, p in module.named_parameters(prefix):
        p._set_name(name)
    for name, b in module.named_buffers(prefix):
        if isinstance(b, _core.Tensor):
            b._set_name(name, buffer=True)


def zero_grads(params, set_to_none):
    """Module.zero_grad and Optimizer.zero_grad: each grad None, or zeroed in place."""
    for p in params:
        if set_to_none:
            p.grad = None
        elif p.grad is not None:
            with no_grad():
                p.grad.zero_()


def describe(t):
    """'[32, 3, 28, 28] float32 cpu': a tensor's shape, dtype and device, for error messages."""
    return f"{list(t.shape)} {str(t.dtype).replace('ember.', '')} {t.device}"


def _located(error, root, module):
    """The same kind of error, its message prefixed with the module's type and path in root."""
    path = next((name for name, m in root.named_modules() if m is module), None)
    # The module that was called (path ""), whether a layer used on its own or a whole model,
    # needs no path; a submodule gets its path in root.
    where = "" if path == "" else f" {path!r}" if path else " (called directly)"
    located = type(error)(f"{type(module).__name__}{where}: {error}")
    located.module_path = path
    return located.with_traceback(error.__traceback__)


class Module:
    """The base class of layers and models: subclasses set parameters, buffers and submodules as
    attributes in ``__init__`` and define ``forward``; calling the module calls ``forward``."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    # ---- registration by attribute ----
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}: call super().__init__() before assigning '{name}'"
            )
        _structure_changed()
        if isinstance(value, (Parameter, Module)):
            self._forget(name)
            table = self._parameters if isinstance(value, Parameter) else self._modules
            table[name] = value
            _name_entry(self, name, value)
        elif name in self._buffers or (name in self._parameters and value is None):
            (self._buffers if name in self._buffers else self._parameters)[name] = value
            _name_entry(self, name, value)
        elif name in self._parameters:
            raise TypeError(
                f"{type(self).__name__}.{name} is a parameter; assign an nn.Parameter or None, "
                f"not {type(value).__name__} (or copy values into it under ember.no_grad())"
            )
        else:
            self._forget(name)
            object.__setattr__(self, name, value)

    def _forget(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table, {})
            if name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        _structure_changed()
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                return
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """Registers a tensor that is state but not a parameter (BatchNorm's running stats); it
        is in state_dict() unless persistent is False, and moves with to()."""
        _structure_changed()
        self._buffers[name] = tensor
        _name_entry(self, name, tensor)
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)

    def register_parameter(self, name, param):
        """Registers a Parameter (or None) under name, as assigning it does."""
        _structure_changed()
        self._parameters[name] = param
        _name_entry(self, name, param)

    def add_module(self, name, module):
        """Registers a submodule under name, as assigning it does."""
        _structure_changed()
        self._modules[name] = module
        _name_entry(self, name, module)

    # ---- calling ----
    def forward(self, *args, **kwargs):
        """The computation; every subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        for value in args:
            if isinstance(value, np.ndarray):
                raise numpy_fix(f"{type(self).__name__}: the input", value)
        stack = _calls.__dict__.setdefault("stack", [])
        stack.append(self)
        try:
            pre_hooks, hooks = self.__dict__.get("_pre_hooks"), self.__dict__.get("_hooks")
            if pre_hooks:
                args, kwargs = _run_pre_hooks(self, pre_hooks, args, kwargs)
            output = self.forward(*args, **kwargs)
            if hooks:
                output = _run_hooks(self, hooks, args, kwargs, output)
            return output
        except _core.EmberError as error:
            if not hasattr(error, "_ember_module"):
                error._ember_module = self
            if len(stack) > 1:
                raise
            raise _located(error, self, error._ember_module) from None
        finally:
            stack.pop()

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Calls hook(module, args) before each forward (hook(module, args, kwargs) with
        with_kwargs); a result other than None replaces the positional arguments (a non-tuple
        becomes a 1-tuple), or is (args, kwargs) with with_kwargs. Hooks run in the order
        registered (prepend puts this one first). Returns a handle whose remove() drops it."""
        return _add_hook(self, "_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Calls hook(module, args, output) after each forward (hook(module, args, kwargs,
        output) with with_kwargs); a result other than None replaces the output. Returns a
        handle whose remove() drops it."""
        return _add_hook(self, "_hooks", hook, prepend, with_kwargs)

    # ---- traversal ----
    def named_modules(self, prefix=""):
        """(path, module) for this module ('' or prefix) and every submodule, depth first."""
        seen = set()

        def walk(module, path):
            if id(module) in seen:
                return
            seen.add(id(module))
            yield path, module
            for name, child in module._modules.items():
                if child is not None:
                    yield from walk(child, f"{path}.{name}" if path else name)

        yield from walk(self, prefix)

    def modules(self):
        """This module and every submodule."""
        return (m for _, m in self.named_modules())

    def named_children(self):
        """(name, module) of the direct submodules."""
        return ((n, m) for n, m in self._modules.items() if m is not None)

    def children(self):
        """The direct submodules."""
        return (m for _, m in self.named_children())

    def _named(self, table, prefix, recurse):
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for path, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{path}.{name}" if path else name), value

    def named_parameters(self, prefix="", recurse=True):
        """(dotted name, Parameter) of every parameter, each once."""
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        """Every parameter, each once (what an optimizer takes)."""
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        """(dotted name, Tensor) of every buffer."""
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        """Every buffer."""
        return (b for _, b in self.named_buffers(recurse=recurse))

    # ---- modes and bulk operations ----
    def train(self, mode=True):
        """Sets training mode (Dropout drops, BatchNorm uses batch statistics) here and below."""
        _structure_changed()
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """Sets evaluation mode: train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Sets requires_grad of every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drops the grad of every parameter (set_to_none, PyTorch's default), or with
        set_to_none=False fills each grad there is with zeros, in place."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        """Calls fn(module) on every submodule, then on this module; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Moves and/or casts every parameter and buffer (integer buffers only move), as
        Tensor.to takes its arguments. A parameter that changes becomes a new Parameter (build
        optimizers after to()); one already there stays itself. Returns self."""
        _structure_changed()
        for module in self.modules():
            for name, p in module._parameters.items():
                moved = p.detach().to(*args, **kwargs) if p is not None else None
                if moved is not None and (moved.dtype, moved.device) != (p.dtype, p.device):
                    module._parameters[name] = Parameter(moved, requires_grad=p.requires_grad)
                    module._parameters[name]._set_name(p._name)  # the name it had
            for name, b in module._buffers.items():
                if b is not None:
                    if b.is_floating_point():
                        module._buffers[name] = b.to(*args, **kwargs)
                    else:
                        device = kwargs.get("device") or next(
                            (a for a in args if _is_device(a)), None
                        )
                        module._buffers[name] = b.to(device) if device is not None else b
                    module._buffers[name]._set_name(b._name, buffer=True)
        return self

    def cpu(self):
        """to('cpu')."""
        return self.to("cpu")

    def cuda(self, device=0):
        """to(f'cuda:{device}')."""
        return self.to(f"cuda:{device}")

    def double(self):
        """Casts floating parameters and buffers to float64."""
        return self.to(_core.float64)

    def float(self):
        """Casts floating parameters and buffers to float32."""
        return self.to(_core.float32)

    # ---- state ----
    def state_dict(self, prefix=""):
        """An ordered dict of every parameter and persistent buffer by dotted name: the tensors
        themselves (detached, sharing storage), for ember.save and load_state_dict."""
        out = OrderedDict()
        for path, module in self.named_modules(prefix):
            skip = module.__dict__.get("_non_persistent", set())
            for table in (module._parameters, module._buffers):
                for name, value in table.items():
                    if value is not None and name not in skip:
                        out[f"{path}.{name}" if path else name] = value.detach()
        return out

    def load_state_dict(self, state_dict, strict=True):
        """Copies the tensors of state_dict into this module's parameters and buffers, in place.
        Misshapen tensors are always an error; with strict, so are missing and unexpected keys.
        Returns (missing_keys, unexpected_keys). Nothing changes when there is an error."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems = []
        for key, value in state_dict.items():
            if key in own and tuple(own[key].shape) != tuple(value.shape):
                problems.append(
                    f"'{key}': the checkpoint has shape {list(value.shape)}, "
                    f"the model {list(own[key].shape)}"
                )
        if strict:
            problems += [f"missing key '{k}' ({describe(own[k])})" for k in missing]
            problems += [f"unexpected key '{k}' ({_described(state_dict[k])})" for k in unexpected]
        if problems:
            raise _core.ShapeError(
                f"{type(self).__name__}.load_state_dict: "
                + "; ".join(problems)
                + ". Fix: load a state_dict saved from the same architecture"
                + (", or pass strict=False to skip missing/unexpected keys" if strict else "")
            )
        for key, value in state_dict.items():
            if key in own:
                own[key][...] = _as_tensor(value).to(own[key].dtype, own[key].device)
        return missing, unexpected

    # ---- printing ----
    def extra_repr(self):
        """The arguments shown in this module's repr line; layers override it."""
        return ""

    def __repr__(self):
        lines = [f"({name}): " + _indent(repr(m)) for name, m in self.named_children()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        count = sum(p.numel() for p in self.parameters())
        return head + "\n  " + "\n  ".join(lines) + f"\n)  # {count:,} parameters"


class RemovableHandle:
    """Removes the hook it was returned for (remove(), or leaving a with-block)."""

    _next_id = 0

    def __init__(self, table):
        self._table, self.id = table, RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(module, table_name, hook, prepend, with_kwargs):
    table = module.__dict__.setdefault(table_name, OrderedDict())
    handle = RemovableHandle(table)
    table[handle.id] = (hook, with_kwargs)
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def _run_pre_hooks(module, hooks, args, kwargs):
    for hook, with_kwargs in list(hooks.values()):
        if with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise TypeError(
                        f"forward pre-hook {hook!r} registered with_kwargs returned "
                        f"{type(result).__name__}; it must return None or (args, kwargs)")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    return args, kwargs


def _run_hooks(module, hooks, args, kwargs, output):
    for hook, with_kwargs in list(hooks.values()):
        result = hook(module, args, kwargs, output) if with_kwargs else hook(module, args, output)
        if result is not None:
            output = result
    return output


def _name_entry(module, name, value):
    """Names what was just registered in module under name (see _name_tensors)."""
    if isinstance(value, Module):
        _name_tensors(value, name)
    elif isinstance(value, Parameter):
        value._set_name(name)
    elif isinstance(value, _core.Tensor):
        value._set_name(name, buffer=name in module._buffers)


def _indent(text):
    return text.replace("\n", "\n  ")


def _is_device(arg):
    return isinstance(arg, _core.device) or (
        isinstance(arg, str) and (arg.startswith("cpu") or arg.startswith("cuda"))
    )


def _described(value):
    return describe(value) if hasattr(value, "shape") and hasattr(value, "dtype") else type(value)


def _as_tensor(value):
    return value if isinstance(value, _core.Tensor) else _core.tensor(value)

