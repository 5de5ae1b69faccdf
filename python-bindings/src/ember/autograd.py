"""ember.autograd: grad mode (no_grad, enable_grad, set_grad_enabled, inference_mode), grad(),
ops of your own with their gradients (Function), gradcheck() and the recorded graph of a tensor
(Graph: its text form, DOT, and a rendering by Graphviz)."""

import functools
import html
import pathlib
import shutil
import subprocess

from ember import _core
from ember._gradcheck import GradcheckError, gradcheck  # noqa: F401 (ember.autograd's own)

is_grad_enabled = _core.is_grad_enabled
RemovableHandle = _core.RemovableHandle


class _GradMode:
    """Sets grad mode inside a with-block or a decorated function, then restores it."""

    mode = True

    def __enter__(self):
        self._previous = _core.is_grad_enabled()
        _core.set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _core.set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):  # noqa: N801 (named as in PyTorch)
    """Ops inside run without recording history (a context manager or a decorator)."""

    mode = False


class enable_grad(_GradMode):  # noqa: N801
    """Ops inside are recorded again, even within no_grad."""

    mode = True


class inference_mode(_GradMode):  # noqa: N801
    """Ops inside run without recording history, as in no_grad (Ember's tensors carry no extra
    inference state); inference_mode(False) changes nothing. A context manager or a decorator,
    with or without the call: @inference_mode and @inference_mode() alike."""

    def __new__(cls, mode=True):
        if callable(mode):  # used bare as a decorator: @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.enabled = bool(mode)

    def __enter__(self):
        self._previous = _core.is_grad_enabled()
        if self.enabled:
            _core.set_grad_enabled(False)
        return self

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(self.enabled):
                return fn(*args, **kwargs)

        return wrapper


class set_grad_enabled(_GradMode):  # noqa: N801
    """Turns recording on or off: at once, and back when used as a context manager exits."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._previous = _core.is_grad_enabled()
        _core.set_grad_enabled(self.mode)

    def __enter__(self):
        return self


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """The gradients of outputs with respect to inputs, as a tuple (not accumulated in .grad).

    outputs and inputs are tensors or sequences of them; grad_outputs weigh outputs of more than
    one element; create_graph records the gradients so that they can be differentiated again.
    """
    return _core.grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)


class FunctionCtx:
    """What a Function's forward and backward share (PyTorch's ctx): the tensors forward saves
    with save_for_backward, read back in backward as saved_tensors; needs_input_grad, one bool
    per forward argument; and any attribute forward sets (ctx.scale = 2)."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self._to_save = ()
        self._non_differentiable = ()
        self._saved = None

    def save_for_backward(self, *tensors):
        """Keeps tensors (inputs, outputs or others; None too) for backward. A saved input or
        output changed in place before backward makes backward raise, as for any op."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, _core.Tensor):
                raise _core.ValueError(
                    f"save_for_backward: argument {i} is a {type(t).__name__}; it saves tensors "
                    "(or None). Keep other values as attributes of ctx (ctx.k = ...)")
        self._to_save = tensors

    @property
    def saved_tensors(self):
        """The tensors save_for_backward kept, in its order (in backward only)."""
        if self._saved is None:
            raise _core.ValueError(
                "saved_tensors: read them in backward; forward saves them with "
                "save_for_backward, and they are freed once backward has run (pass "
                "retain_graph=True to backward to run it again)")
        return self._saved

    def mark_non_differentiable(self, *outputs):
        """Outputs of forward that get no gradient (indices, masks): they do not require grad."""
        self._non_differentiable = outputs


def _index_of(t, tensors):
    """The position of the very object t in tensors, or None."""
    return next((i for i, x in enumerate(tensors) if x is t), None)


class Function:
    """An op of your own, with its gradient (torch.autograd.Function)::

        class Exp(ember.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, grad):
                (y,) = ctx.saved_tensors
                return grad * y

        y = Exp.apply(x)

    forward runs without recording, on the arguments as given (tensors and other values), and
    returns a tensor or a tuple of tensors. backward gets one gradient per output (zeros where
    none arrives, None for an output that is not floating) and returns one per argument of
    forward: None, or a tensor of the argument's shape, dtype and device.

    The call is one node of the recorded graph (custom_function); its gradient is one node of
    the backward graph (custom_function_backward) that calls backward back in Python. With
    create_graph=True, backward runs on tensors with their history and records its ops, so
    the gradient can be differentiated again when backward computes it with ember ops (one
    computed another way, with NumPy say, has no gradient of its own). Each call builds its
    backward graph anew (it is not reused from the backward cache).
    """

    @staticmethod
    def forward(ctx, *args):
        """The op: tensors (and other values) in, a tensor or a tuple of tensors out."""
        raise NotImplementedError("a Function subclass defines forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """The gradient of each argument of forward from the gradient of each output."""
        raise NotImplementedError("a Function subclass defines backward(ctx, *grad_outputs)")

    @classmethod
    def apply(cls, *args):
        """Runs forward on args and records it, so that backward gives its gradient."""
        name = cls.__name__
        is_tensor = [isinstance(a, _core.Tensor) for a in args]
        ctx = FunctionCtx(tuple(t and a.requires_grad for t, a in zip(is_tensor, args)))
        with no_grad():
            result = cls.forward(ctx, *args)
        single = isinstance(result, _core.Tensor)
        outputs = (result,) if single else result
        if (not isinstance(outputs, tuple) or not outputs
                or not all(isinstance(y, _core.Tensor) for y in outputs)):
            raise _core.ValueError(
                f"{name}.forward returned {type(result).__name__}; return a tensor or a "
                "non-empty tuple of tensors")
        if not (_core.is_grad_enabled() and any(ctx.needs_input_grad)):
            return result
        inputs = [a for t, a in zip(is_tensor, args) if t]
        # Saved inputs and outputs go through the graph (with their history, version-checked);
        # other saved tensors stay with ctx.
        saved_inputs, saved_outputs, plan = [], [], []
        for t in ctx._to_save:
            k, j = _index_of(t, inputs), _index_of(t, outputs)
            if t is not None and k is not None:
                plan.append(("input", len(saved_inputs)))
                saved_inputs.append(k)
            elif t is not None and j is not None:
                plan.append(("output", len(saved_outputs)))
                saved_outputs.append(j)
            else:
                plan.append(("value", t))
        non_differentiable = [j for j, y in enumerate(outputs)
                              if _index_of(y, ctx._non_differentiable) is not None]
        ctx._to_save = ctx._non_differentiable = ()

        def backward(grad_outputs, saved):
            ctx._saved = tuple(
                value if kind == "value"
                else saved[value if kind == "input" else len(saved_inputs) + value]
                for kind, value in plan)
            try:
                grads = cls.backward(ctx, *grad_outputs)
            finally:
                ctx._saved = None
            grads = grads if isinstance(grads, tuple) else (grads,)
            if len(grads) != len(is_tensor):
                raise _core.ValueError(
                    f"{name}.backward returned {len(grads)} gradients but forward takes "
                    f"{len(is_tensor)} arguments; return one per argument of forward (None for "
                    "one without a gradient)")
            for i, (tensor, g) in enumerate(zip(is_tensor, grads)):
                if g is not None and not isinstance(g, _core.Tensor):
                    raise _core.ValueError(
                        f"{name}.backward: gradient {i} is a {type(g).__name__}; return a "
                        "tensor or None")
                if g is not None and not tensor:
                    raise _core.ValueError(
                        f"{name}.backward: argument {i} of forward is not a tensor, so its "
                        "gradient must be None")
            return [g for tensor, g in zip(is_tensor, grads) if tensor]

        recorded = _core._record_function(name, backward, inputs, list(outputs), saved_inputs,
                                          saved_outputs, non_differentiable)
        return recorded[0] if single else tuple(recorded)


class Graph:
    """The recorded forward graph of a tensor and its backward graph, one typed line per node.

    str(graph) is the text form; to_dot() the Graphviz DOT form; render() draws it with dot.
    """

    def __init__(self, text: str, dot: str):
        self.text = text
        self.dot = dot

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)

    def _repr_html_(self):
        return f"<pre>{html.escape(self.text)}</pre>"

    def to_dot(self) -> str:
        """The graph in Graphviz DOT: an ellipse per input, parameter or constant, a box per node
        (backward nodes shaded), an edge per value used, labelled with the value."""
        return self.dot

    def render(self, path, format: str | None = None) -> str:  # noqa: A002 (Graphviz's name)
        """Draws the graph with Graphviz's dot into path, in the format its extension names
        (.svg, .png or .pdf; format, if given, must agree with it); returns path."""
        path = pathlib.Path(path)
        suffix = path.suffix.lower().lstrip(".")
        if suffix not in _RENDER_FORMATS:
            raise _core.ValueError(
                f"render: cannot tell the format from the file name {str(path)!r}; give it one "
                f"of the extensions {', '.join('.' + f for f in _RENDER_FORMATS)}")
        if format is not None and format.lower() != suffix:
            raise _core.ValueError(
                f"render: format={format!r} but the file name {str(path)!r} says {suffix}; a "
                f"file holds what its extension says. Fix: name it {path.stem}.{format.lower()}"
                " or leave format out")
        dot = shutil.which("dot")
        if dot is None:
            raise _core.NotSupportedError(
                "render: Graphviz's `dot` program is not installed. Install the graphviz "
                "package (ci/install-system-deps.sh, apt install graphviz, brew install graphviz "
                "or conda install graphviz), or write to_dot() to a file and render it elsewhere")
        done = subprocess.run([dot, f"-T{suffix}", "-o", str(path)], input=self.to_dot(),
                              text=True, capture_output=True)
        if done.returncode != 0:
            raise _core.EmberError(f"render: dot -T{suffix} failed: {done.stderr.strip()}")
        return str(path)


# What render() writes, by file extension (each is also dot's -T name).
_RENDER_FORMATS = ("svg", "png", "pdf")
