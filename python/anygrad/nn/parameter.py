"""``nn.Parameter``: a tensor that a module registers as learnable, and ``nn.Buffer``."""

from .. import _native


class Parameter(_native.Tensor):
    """A learnable tensor: assigned as a module attribute, it is registered as a parameter
    (``parameters()``, ``state_dict()``). It requires grad unless told otherwise."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _native.zeros(0)
        instance = _native.Tensor.__new__(cls, data)
        if requires_grad and instance.is_floating_point():
            instance.requires_grad_(True)
        return instance

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self):
        return (Parameter, (self.detach().clone(), self.requires_grad))

    def __deepcopy__(self, memo):
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class Buffer:
    """A tensor registered as a module buffer when assigned as an attribute
    (``self.mean = nn.Buffer(torch.zeros(3))``)."""

    def __init__(self, data, persistent=True):
        self.data = data
        self.persistent = persistent
