"""Python idioms of ember.Tensor that need no C++: iteration, NumPy's operator deferral and the
recorded graph."""

from ember._core import Tensor
from ember.autograd import Graph


def _iter(self):
    """The slices along dim 0, as a list's items."""
    return (self[i] for i in range(len(self)))


def _graph(self):
    """The recorded forward graph that made this tensor and its backward graph (a Graph)."""
    return Graph(self._graph_str(), self._graph_dot())


Tensor.__iter__ = _iter
Tensor.graph = _graph
# numpy.float64(2) * tensor: NumPy defers to Tensor.__rmul__ instead of making an array.
Tensor.__array_ufunc__ = None
Tensor.__array_priority__ = 1000
Tensor.__module__ = "ember"
