"""ember.Generator, a random stream of its own, and the random functions that take one
(``generator=``), as torch.Generator.

Ember's random ops draw from one default generator (seeded by ember.manual_seed): a Philox seed
and an offset, the count of op calls drawn so far. A Generator owns such a (seed, offset) pair;
a call given ``generator=g`` swaps g's state in as the default one, draws, keeps the advanced
state in g and puts the default state back, so the default stream is as if the call never
happened. The swap holds a lock against other Generator calls; a thread that draws from the
default generator at the same moment must not run alongside one (as when sharing any state).
"""

import contextlib
import os
import threading

from ember import _core

_swap_lock = threading.Lock()
_DEFAULT_SEED = 67280421310721  # core-runtime's Generator::kDefaultSeed (PyTorch's too)


class Generator:
    """A random stream of its own: the same seed gives the same numbers, and drawing from it
    leaves ember's default generator (ember.manual_seed's) untouched. Pass it to rand, randn,
    randint, randperm, Tensor.uniform_/normal_, nn.init's random initialisers and DataLoader."""

    def __init__(self, device="cpu"):
        self.device = _core.device(device)
        self._state = {"seed": _DEFAULT_SEED, "offset": 0}

    def manual_seed(self, seed):
        """Reseeds the stream (offset back to 0); returns self."""
        self._state = {"seed": int(seed) % 2**64, "offset": 0}
        return self

    def seed(self):
        """Reseeds from the operating system's entropy; returns the new seed."""
        seed = int.from_bytes(os.urandom(8), "little") >> 1  # 63 bits, as PyTorch's
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed the stream started from."""
        return self._state["seed"]

    def get_state(self):
        """The state, {'seed': int, 'offset': int} (as ember.get_rng_state: a copy)."""
        return dict(self._state)

    def set_state(self, new_state):
        """Restores a state from get_state() (or ember.get_rng_state()); returns self."""
        try:
            self._state = {"seed": int(new_state["seed"]), "offset": int(new_state["offset"])}
        except (KeyError, TypeError, ValueError):
            raise _core.ValueError(
                f"Generator.set_state: {new_state!r} is not a state; pass what get_state() or "
                "ember.get_rng_state() returned ({'seed': int, 'offset': int})") from None
        return self

    @contextlib.contextmanager
    def _installed(self):
        """The body draws from this generator's stream instead of the default one."""
        with _swap_lock:
            default = _core.get_rng_state()
            _core.set_rng_state(self._state)
            try:
                yield
            finally:
                self._state = _core.get_rng_state()
                _core.set_rng_state(default)

    def __repr__(self):
        return f"<ember.Generator device={self.device} seed={self.initial_seed()}>"


def _check(op, generator):
    if generator is not None and not isinstance(generator, Generator):
        raise _core.DTypeError(
            f"{op}: generator is a {type(generator).__name__}; expected an ember.Generator "
            "(or None for the default generator)")


def _draw(op, generator, fn, *args, **kwargs):
    """fn(*args, **kwargs) drawing from generator (the default generator when None)."""
    if generator is None:
        return fn(*args, **kwargs)
    _check(op, generator)
    with generator._installed():
        return fn(*args, **kwargs)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform random values on [0, 1) of the given size."""
    return _draw("rand", generator, _core.rand, *size, dtype=dtype, device=device,
                 requires_grad=requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal random values of the given size."""
    return _draw("randn", generator, _core.randn, *size, dtype=dtype, device=device,
                 requires_grad=requires_grad)


def randint(low, high, size=None, *, generator=None, dtype=None, device=None):
    """Random integers on [low, high): randint(low, high, size) or randint(high, size)."""
    return _draw("randint", generator, _core.randint, low, high, size, dtype=dtype,
                 device=device)


def randperm(n, *, generator=None, dtype=None, device=None):
    """A random permutation of 0 .. n-1."""
    return _draw("randperm", generator, _core.randperm, n, dtype=dtype, device=device)


_uniform_ = _core.Tensor.uniform_
_normal_ = _core.Tensor.normal_


def _tensor_uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fills with uniform values on [a, b) (from generator when given); returns self."""
    return _draw("uniform_", generator, _uniform_, self, a, b)


def _tensor_normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fills with normal values (from generator when given); returns self."""
    return _draw("normal_", generator, _normal_, self, mean, std)


_core.Tensor.uniform_ = _tensor_uniform_
_core.Tensor.normal_ = _tensor_normal_
