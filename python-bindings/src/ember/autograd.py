"""ember.autograd: grad mode (no_grad, enable_grad, set_grad_enabled, inference_mode), grad()
and the recorded graph of a tensor (Graph: its text form, DOT, and a rendering by Graphviz)."""

import functools
import html
import shutil
import subprocess

from ember import _core

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

    def render(self, path, format: str = "svg") -> str:  # noqa: A002 (Graphviz's name)
        """Writes the graph drawn by Graphviz's dot to path (svg, png, pdf...); returns path."""
        dot = shutil.which("dot")
        if dot is None:
            raise _core.NotSupportedError(
                "render: Graphviz's `dot` program is not installed. Install the graphviz "
                "package (apt install graphviz, brew install graphviz or conda install "
                "graphviz), or write to_dot() to a file and render it elsewhere")
        subprocess.run([dot, f"-T{format}", "-o", str(path)], input=self.to_dot(), text=True,
                       check=True)
        return str(path)
