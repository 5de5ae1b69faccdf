"""nn.Parameter: the tensor a Module registers as a learnable weight."""

from ember._core import Tensor


class Parameter(Tensor):
    """A leaf Tensor that requires grad (by default) and that a Module assigned it as an
    attribute registers as one of its parameters. It shares the storage of ``data``."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = Tensor([])
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        raise TypeError("a Parameter is not picklable; save a state_dict with ember.save")
