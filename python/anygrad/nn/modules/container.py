"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``,
``ParameterDict``."""

from collections import OrderedDict

from .module import Module
from ..parameter import Parameter


class Sequential(Module):
    """Modules run one after another; children are named ``0``, ``1``, ... or by the keys
    of an ``OrderedDict``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def forward(self, input):
        """Run every module in order."""
        for module in self._modules.values():
            input = module(input)
        return input

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        modules = list(self._modules.values())
        if not -len(modules) <= index < len(modules):
            raise IndexError(f"index {index} is out of range")
        return modules[index]

    def __setitem__(self, index, module):
        key = list(self._modules.keys())[index]
        self.add_module(key, module)

    def __delitem__(self, index):
        key = list(self._modules.keys())[index]
        del self._modules[key]

    def append(self, module):
        """Add a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Add modules at the end."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        """Insert a module at ``index`` (children renumbered)."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for position, child in enumerate(modules):
            self.add_module(str(position), child)
        return self


class ModuleList(Module):
    """A list of modules, registered as ``0``, ``1``, ... (use it for layers kept in a list)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        modules = list(self._modules.values())
        if not -len(modules) <= index < len(modules):
            raise IndexError(f"index {index} is out of range")
        return modules[index]

    def __setitem__(self, index, module):
        key = list(self._modules.keys())[index]
        self.add_module(key, module)

    def __delitem__(self, index):
        modules = list(self._modules.values())
        del modules[index]
        self._modules.clear()
        for position, child in enumerate(modules):
            self.add_module(str(position), child)

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        """Add a module at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Add modules at the end."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        """Insert a module at ``index``."""
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._modules.clear()
        for position, child in enumerate(modules):
            self.add_module(str(position), child)

    def forward(self, *args):
        """A ModuleList is not called; iterate over it."""
        raise NotImplementedError("ModuleList has no forward; iterate over its modules")


class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        """The keys."""
        return self._modules.keys()

    def values(self):
        """The modules."""
        return self._modules.values()

    def items(self):
        """``(key, module)`` pairs."""
        return self._modules.items()

    def update(self, modules):
        """Add modules from a dict or pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self.add_module(key, module)


class ParameterList(Module):
    """A list of parameters, registered as ``0``, ``1``, ..."""

    def __init__(self, values=None):
        super().__init__()
        for value in values or []:
            self.append(value)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, index):
        return list(self._parameters.values())[index]

    def append(self, value):
        """Add a parameter at the end."""
        if not isinstance(value, Parameter):
            value = Parameter(value)
        self.register_parameter(str(len(self)), value)
        return self

    def extend(self, values):
        """Add parameters at the end."""
        for value in values:
            self.append(value)
        return self


class ParameterDict(Module):
    """A dict of parameters, registered under their keys."""

    def __init__(self, parameters=None):
        super().__init__()
        for key, value in (parameters or {}).items():
            self[key] = value

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if not isinstance(value, Parameter):
            value = Parameter(value)
        self.register_parameter(key, value)

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        """The keys."""
        return self._parameters.keys()

    def values(self):
        """The parameters."""
        return self._parameters.values()

    def items(self):
        """``(key, parameter)`` pairs."""
        return self._parameters.items()
