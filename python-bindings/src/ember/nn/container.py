"""Containers: Sequential, ModuleList, ModuleDict, and Identity."""

from collections import OrderedDict

from ember.nn.module import Module


class Identity(Module):
    """Returns its input."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Sequential(Module):
    """Calls its modules in order, each on the previous one's output. Built from modules (named
    '0', '1', ...) or from one OrderedDict of named modules."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def __getitem__(self, i):
        """The module at i; a slice is a container of the same type with those modules, under
        their names (the same module objects, as PyTorch's)."""
        if isinstance(i, slice):
            return type(self)(OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[i]

    def __setitem__(self, i, module):
        """Puts module in place of the one at index i (under the same name), as PyTorch's."""
        self.add_module(self._name_at(i), module)

    def _name_at(self, i):
        names = list(self._modules)
        if not isinstance(i, int) or not -len(names) <= i < len(names):
            raise IndexError(f"Sequential: index {i!r} is out of range for {len(names)} modules")
        return names[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Adds a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(Module):
    """A list of modules, registered as '0', '1', ...; it has no forward of its own."""

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module):
        """Adds a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Adds modules at the end."""
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        """The module at i; a slice is a container of the same type with those modules,
        renumbered from '0' (the same module objects, as PyTorch's)."""
        if isinstance(i, slice):
            return type(self)(list(self._modules.values())[i])
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of named modules; it has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        for name, m in dict(modules or {}).items():
            self.add_module(name, m)

    def __getitem__(self, name):
        return self._modules[name]

    def __setitem__(self, name, module):
        self.add_module(name, module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, name):
        return name in self._modules

    def keys(self):
        """The names."""
        return self._modules.keys()

    def values(self):
        """The modules."""
        return self._modules.values()

    def items(self):
        """(name, module) pairs."""
        return self._modules.items()
