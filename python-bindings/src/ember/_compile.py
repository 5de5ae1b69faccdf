"""ember.compile: trace a whole training step once, replay it in C++ (autodiff-engine's compiled
mode, compile/compile.h).

    @ember.compile                      # or ember.compile(fn, memory_budget=64 << 20)
    def train_step(x, y):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

The first call runs the step eagerly and records every op it runs into one graph; later calls
replay that graph with no Python between ops while the guards hold: each tensor argument's shape,
dtype, device and requires_grad, the identity of every state tensor, grad mode, the training mode
of the modules the step uses and its other (non-tensor) arguments. Parameters, gradients,
buffers and optimizer state are read and updated in place, live, at every call: a learning-rate
schedule or ``load_state_dict`` between calls needs no new trace. What a replay cannot repeat
(``.item()``, printing a tensor, ``if`` on a tensor, tensors from Python data) raises
``ember.CaptureError`` while tracing, naming the line of the step that did it.
"""

import functools
import inspect
import os
import traceback
import warnings
import weakref

from ember import _core
from ember.nn.module import Module, structure_version
from ember.optim.optimizer import Optimizer

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class RetraceWarning(UserWarning):
    """A compiled step was traced again because a guard changed (warned once per guard)."""


def _owners(fn):
    """The modules and optimizers the step can reach by name: its globals it names, its closure
    cells, and the object of a bound method, as (name, object)."""
    found = []
    code = getattr(fn, "__code__", None)
    if hasattr(fn, "__self__"):
        found.append(("self", fn.__self__))
    if code is not None:
        scope = getattr(fn, "__globals__", {})
        found += [(n, scope[n]) for n in code.co_names if n in scope]
        cells = getattr(fn, "__closure__", None) or ()
        for name, cell in zip(code.co_freevars, cells):
            try:
                found.append((name, cell.cell_contents))
            except ValueError:  # an empty cell
                continue
    return [(n, o) for n, o in found if isinstance(o, (Module, Optimizer))]


def _state_names(owners):
    """(tensor, "model.0.weight") for each parameter and buffer of the modules found."""
    names = []
    for name, obj in owners:
        if isinstance(obj, Module):
            names += [(p, f"{name}.{n}") for n, p in obj.named_parameters()]
            names += [(b, f"{name}.{n}") for n, b in obj.named_buffers() if b is not None]
    return names


_MODULE_TABLES = ("training", "_parameters", "_buffers", "_modules")


def _attribute_text(value):
    """repr of a plain number, string, None or tuple/list of them; else type and identity."""
    plain = (bool, int, float, str, type(None))
    if isinstance(value, plain) or (
            isinstance(value, (tuple, list)) and all(isinstance(x, plain) for x in value)):
        return repr(value)
    return f"<{type(value).__name__} {id(value):x}>"


def _plain_attributes(module):
    """'p=0.5, inplace=False': a module's attributes other than its tables and mode; values that
    are not plain numbers, strings or tuples of them stand as their type and identity."""
    return ", ".join(f"{k}={_attribute_text(v)}" for k, v in vars(module).items()
                     if k not in _MODULE_TABLES)


def _user_frame(error):
    """'file:line: code' of the innermost frame of the traceback outside the ember package."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"
    return None


class CompiledFunction:
    """A compiled step: call it like the function. explain() and graph() show what the compiler
    did; traces and replays count the calls of each kind."""

    def __init__(self, fn, memory_budget=None, optimize=True, fuse=True):
        if not callable(fn):
            raise _core.ValueError(f"compile: expected a function, got {type(fn).__name__}")
        if memory_budget is not None and (not isinstance(memory_budget, int) or memory_budget < 0):
            raise _core.ValueError(
                f"compile: memory_budget is {memory_budget!r}; pass a number of bytes (an int "
                ">= 0), or None for no budget")
        functools.update_wrapper(self, fn)
        self._fn, self._budget, self._optimize = fn, memory_budget or 0, optimize
        self._fuse = bool(fuse)
        self._step = None
        self._owners = []
        self._specs = {}  # plan id -> how the returned tensors are structured
        self._call = None  # the current call's arguments, while the step runs
        self._module_guards = None  # (structure_version(), the module guards read then)

    # ---- the call ----
    def __call__(self, *args, **kwargs):
        if _core._tracing():
            raise _core.CaptureError(
                f"compile: {self.__name__} was called while another compiled step is traced. "
                f"Fix: call the undecorated function inside it ({self.__name__}.__wrapped__)")
        tensors, self._call = [], (args, kwargs)
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, _core.Tensor):
                tensors.append(a)
        if self._step is None:
            self._step = self._make_step(args, kwargs)
        try:
            out = self._step(tensors)
        except _core.CaptureError as e:
            where = _user_frame(e)
            message = f"{e}\n  in {self.__name__} at {where}" if where else str(e)
            raise type(e)(message).with_traceback(e.__traceback__) from None
        finally:
            self._call = None
        return self._rebuild(self._specs[self._step.plan_id], out)

    def _make_step(self, args, kwargs):
        self._owners = _owners(self._fn)
        try:
            params = list(inspect.signature(self._fn).bind(*args, **kwargs).arguments.items())
        except (TypeError, ValueError):
            params = [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
        names = [n for n, a in params if isinstance(a, _core.Tensor)]
        # The engine holds these callbacks: through a weak reference, so that the step and its
        # plans go when this object does (the engine's references are invisible to Python's GC).
        this = weakref.ref(self)
        return _core._CompiledStep(
            lambda tensors: this()._run(tensors), self.__name__, self._budget, names,
            _state_names(self._owners), lambda: this()._guards(),
            lambda message: this()._warn(message), self._optimize, self._fuse)

    def _run(self, tensors):
        """Called by the compiled step while it traces: the function on this call's arguments,
        its result flattened to a list of tensors."""
        args, kwargs = self._call
        result = self._fn(*args, **kwargs)
        spec, flat = self._flatten(result)
        self._specs[self._step.traces + 1] = spec
        return flat

    def _guards(self):
        """The guards the engine cannot see: training modes, the non-tensor arguments."""
        version = structure_version()
        if self._module_guards is None or self._module_guards[0] != version:
            self._module_guards = (version, self._read_module_guards())
        out = list(self._module_guards[1])
        args, kwargs = self._call
        for i, a in enumerate(list(args) + list(kwargs.values())):
            if not isinstance(a, _core.Tensor):
                out.append((f"argument {i}", f"{type(a).__name__} {a!r}"))
        return out

    def _read_module_guards(self):
        """Each module's training modes and the identity of its parameters and buffers: read
        again only after a module changed (nn.module.structure_version), since walking every
        module at every call costs more than a small step's replay."""
        out = []
        for name, obj in self._owners:
            if isinstance(obj, Module):
                modules = list(obj.named_modules())
                modes = "".join("t" if m.training else "e" for _, m in modules)
                out.append((f"{name}.training", modes))
                # A parameter or buffer replaced by another tensor object (model.fc.weight =
                # Parameter(...)): the step must bind the new one.
                tensors = [*obj.parameters(), *(b for b in obj.buffers() if b is not None)]
                ids = hash(tuple(id(t) for t in tensors))
                out.append((f"{name} tensors", f"{len(tensors)} objects, identity {ids:x}"))
                # The numbers a module's forward reads from its attributes (Dropout's p,
                # BatchNorm's momentum, a stride) are constants of the traced graph.
                for path, m in modules:
                    attrs = _plain_attributes(m)
                    if attrs:
                        out.append((f"{name}.{path}" if path else name, attrs))
        return out

    def _warn(self, message):
        warnings.warn(message, RetraceWarning, stacklevel=4)

    # ---- what the step returns ----
    def _flatten(self, result):
        if result is None:
            return None, []
        if isinstance(result, _core.Tensor):
            return "tensor", [result]
        if isinstance(result, (tuple, list)) and all(isinstance(r, _core.Tensor) for r in result):
            return (type(result), len(result)), list(result)
        raise _core.CaptureError(
            f"compile: {self.__name__} returned {type(result).__name__}; a compiled step "
            "returns a tensor, a tuple or list of tensors, or None. Fix: return tensors and "
            "convert them after the call")

    @staticmethod
    def _rebuild(spec, out):
        if spec is None:
            return None
        if spec == "tensor":
            return out[0]
        kind, _ = spec
        return kind(out)

    # ---- what the compiler did ----
    def explain(self):
        """Every decision of the newest plan, as text: the trace, the guards, each pass, the
        memory plan and the replay."""
        if self._step is None:
            return f"{self.__name__}: not traced yet (the first call traces)\n"
        return self._step.explain()

    def graph(self):
        """The newest plan's graph after the passes, one typed line per node (as .graph())."""
        if self._step is None:
            raise _core.ValueError(f"{self.__name__}: not traced yet; call it once first")
        return self._step.graph()

    def source(self, group=0):
        """The generated kernel source of the newest plan's fused group ``group`` (explain()'s
        fusion section numbers the groups)."""
        if self._step is None:
            raise _core.ValueError(f"{self.__name__}: not traced yet; call it once first")
        return self._step.source(group)

    @property
    def fused_groups(self):
        """How many fused groups (one generated kernel each) the newest plan runs."""
        return 0 if self._step is None else self._step.fused_groups

    @property
    def traces(self):
        return 0 if self._step is None else self._step.traces

    @property
    def replays(self):
        return 0 if self._step is None else self._step.replays


def compile(fn=None, *, memory_budget=None, optimize=True, fuse=True):  # noqa: A001 (as torch.compile)
    """Compiles a training step: ``@ember.compile`` or ``ember.compile(fn, memory_budget=N)``.
    memory_budget: bytes the step's planned memory may take (forward values are recomputed in
    the backward pass to fit). optimize=False replays the traced graph without passes.
    fuse=False keeps chains of elementwise ops as the library's kernels instead of generated
    fused kernels (EMBER_FUSION=0 does too)."""
    if fn is None:
        return functools.partial(compile, memory_budget=memory_budget, optimize=optimize,
                                 fuse=fuse)
    return CompiledFunction(fn, memory_budget=memory_budget, optimize=optimize, fuse=fuse)
