"""Clear errors for calls with arguments of the wrong kind. pybind11 answers such a call with
"incompatible function arguments" and the repr of every argument (a model's weights, a whole
NumPy array); every function of ember._core and op method of Tensor has one more overload,
tried last (bind_argument_errors.cpp), that calls ``raise_explained``: an ``ArgumentTypeError``
naming the function, each argument's name and kind (type, shape, dtype: never values), the
signature expected and the fix."""

import numpy as np

from ember import _core


class ArgumentTypeError(_core.EmberError, TypeError):
    """A function was called with an argument of the wrong kind, or without one it needs (a
    TypeError)."""


def kind(value):
    """'Tensor [2, 3] float32 cpu', 'numpy.ndarray [2, 3] float64', 'list of 3', 'int': what a
    value is, for an error message, without its contents."""
    if isinstance(value, _core.Tensor):
        return f"Tensor {list(value.shape)} {str(value.dtype).replace('ember.', '')} {value.device}"
    if isinstance(value, np.ndarray):
        return f"numpy.ndarray {list(value.shape)} {value.dtype}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def numpy_fix(where, value):
    """The error for a NumPy array passed where a Tensor goes."""
    return ArgumentTypeError(
        f"{where} is a {kind(value)}, not an ember.Tensor. Fix: convert it with "
        "ember.from_numpy(array) (shares its memory) or ember.tensor(array) (copies)"
    )


def _signatures(fn):
    """The signature lines of a pybind11 function's docstring, without the module prefixes."""
    lines = (fn.__doc__ or "").splitlines()
    name = fn.__name__ + "("
    found = [line.split(". ", 1)[-1] if line[:1].isdigit() else line for line in lines]
    found = [line.strip() for line in found if line.strip().startswith(name)]
    # not pybind11's header line of an overloaded function, nor the explaining overload
    found = [line for line in found if "->" in line and "arguments: object" not in line]
    return [_plain(line.replace("ember._core.", "").replace("ember.", "")) for line in found]


def _plain(signature):
    """pybind11's typing protocols as the Python types a reader passes."""
    for protocol, plain in (("typing.SupportsInt | typing.SupportsIndex", "int"),
                            ("typing.SupportsFloat | typing.SupportsIndex", "float")):
        signature = signature.replace(protocol, plain)
    return signature


def _parameters(signature):
    """The parameter names of one signature line: 'f(input: Tensor, dim: int = 1) -> Tensor'
    gives [('input', False), ('dim', True)] (name, has a default)."""
    inner = signature[signature.index("(") + 1:signature.rindex(")")]
    names, depth, part = [], 0, ""
    for ch in inner + ",":
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            part = part.strip()
            if part and part not in ("*", "/") and not part.startswith("*"):
                names.append((part.split(":")[0].split("=")[0].strip(), "=" in part))
            part = ""
        else:
            part += ch
    return names


def _explained(name, fn, args, kwargs):
    """The ArgumentTypeError for fn(*args, **kwargs) that pybind11 refused."""
    signatures = _signatures(fn)
    params = _parameters(signatures[0]) if signatures else []
    got, missing = [], []
    for i, value in enumerate(args):
        label = params[i][0] if i < len(params) else f"argument {i + 1}"
        got.append(f"{label}={kind(value)}")
    for key, value in kwargs.items():
        got.append(f"{key}={kind(value)}")
    for i, (param, has_default) in enumerate(params):
        if i >= len(args) and param not in kwargs and not has_default:
            missing.append(param)
    arrays = [v for v in (*args, *kwargs.values()) if isinstance(v, np.ndarray)]
    message = f"{name}(): got ({', '.join(got)})"
    if missing:
        message += f"; missing {', '.join(repr(m) for m in missing)}"
    if signatures:
        message += "; expected " + " or ".join(signatures)
    if arrays:
        message += (". Fix: convert NumPy arrays with ember.from_numpy(array) (shares memory) or "
                    "ember.tensor(array) (copies)")
    elif missing:
        message += f". Fix: pass {', '.join(missing)}"
    else:
        message += ". Fix: pass arguments of the types above"
    return ArgumentTypeError(message)


def raise_explained(name, fn, args, kwargs):
    """Raises the ArgumentTypeError for fn(*args, **kwargs), which no overload of fn takes."""
    raise _explained(name, fn, args, kwargs) from None
