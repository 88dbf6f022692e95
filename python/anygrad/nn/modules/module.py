"""``nn.Module``: the base class of layers and models, subclassed in Python as in PyTorch.

Attributes that are ``Parameter``s, ``Module``s (``Sequential``, ``ModuleList``, ...) or
``Buffer``s register themselves; ``parameters()``, ``named_parameters()``, ``children()``,
``modules()``, ``state_dict()``, ``load_state_dict(strict=)``, ``train()``, ``eval()``,
``to()``, ``zero_grad()``, ``apply()``, forward hooks and backward hooks follow PyTorch's names and order.
"""

from collections import OrderedDict, namedtuple
import itertools

from ... import _native
from ..parameter import Buffer, Parameter
from .backward_hooks import hooked_call

_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class RemovableHandle:
    """What ``register_*_hook`` returns: ``remove()`` unregisters the hook."""

    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self):
        """Unregister the hook."""
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Module:
    """The base class of every layer and model: write ``__init__`` (assign layers and
    parameters as attributes) and ``forward``; call the module to run it."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() takes no arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())

    def _check_initialised(self, name):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() call: call super().__init__() first"
            )

    def forward(self, *args, **kwargs):
        """The computation; every subclass defines it."""
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def __call__(self, *args, **kwargs):
        state = self.__dict__
        if not (
            state["_forward_pre_hooks"]
            or state["_forward_hooks"]
            or state.get("_backward_hooks")
            or state.get("_backward_pre_hooks")
        ):
            # No hooks: the common case, without building the hook lists.
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        if self.__dict__.get("_backward_hooks") or self.__dict__.get("_backward_pre_hooks"):
            output = hooked_call(self, args, lambda inputs: self.forward(*inputs, **kwargs))
        else:
            output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, output)
            if result is not None:
                output = result
        return output

    # Registration -------------------------------------------------------------------------

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_initialised(name)
            self._remove_everywhere(name)
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None and not isinstance(value, _native.Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} (Parameter or None expected)")
            params[name] = value if value is None or isinstance(value, Parameter) else Parameter(value)
            return
        if isinstance(value, Module):
            self._check_initialised(name)
            self._remove_everywhere(name)
            self._modules[name] = value
            return
        modules = self.__dict__.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module {name!r} (Module or None expected)")
            modules[name] = None
            return
        if isinstance(value, Buffer):
            self._check_initialised(name)
            self.register_buffer(name, value.data, value.persistent)
            return
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _native.Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} (Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _remove_everywhere(self, name):
        for store in ("_parameters", "_modules", "_buffers"):
            self.__dict__[store].pop(name, None)
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        state = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            entries = state.get(store)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = set(super().__dir__())
        for store in ("_parameters", "_buffers", "_modules"):
            names.update(self.__dict__.get(store, {}))
        return sorted(names)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        self._check_initialised(name)
        if "." in name or name == "":
            raise KeyError(f"parameter name {name!r} must be non-empty and contain no '.'")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} as parameter {name!r} (Parameter or None expected)")
        self._remove_everywhere(name)
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register ``tensor`` as a buffer: saved in the state dict (unless not
        ``persistent``) and moved with the module, never trained."""
        self._check_initialised(name)
        if "." in name or name == "":
            raise KeyError(f"buffer name {name!r} must be non-empty and contain no '.'")
        if tensor is not None and not isinstance(tensor, _native.Tensor):
            raise TypeError(f"cannot assign {type(tensor).__name__} as buffer {name!r} (Tensor or None expected)")
        self._remove_everywhere(name)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_initialised(name)
        self._remove_everywhere(name)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The module at the dotted path ``target``."""
        module = self
        for part in target.split(".") if target else []:
            module = getattr(module, part)
            if not isinstance(module, Module):
                raise AttributeError(f"{part} is not an nn.Module")
        return module

    def get_parameter(self, target):
        """The parameter at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        return getattr(self.get_submodule(module_path), name)

    # Traversal ----------------------------------------------------------------------------

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Every module of the tree with its dotted name (this one first, as "")."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            child_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self):
        """Every module of the tree (this one first)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """The direct children with their names."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        """The direct children."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, store, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in module.__dict__[store].items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Every parameter with its dotted name (``conv1.weight``), each once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """Every parameter, each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """Every buffer with its dotted name."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # State --------------------------------------------------------------------------------

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """The parameters and persistent buffers by dotted name (detached unless
        ``keep_vars``), in registration order."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy values from ``state_dict`` into the parameters and buffers; with ``strict``,
        missing or unexpected keys are an error. Shapes must match."""
        own = self.state_dict(keep_vars=True)
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        errors = []
        if strict and (missing or unexpected):
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, _native.Tensor):
                import anygrad

                value = anygrad.as_tensor(value)
            if tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from checkpoint, "
                    f"the shape in current model is {tuple(target.shape)}."
                )
                continue
            from ... import no_grad

            with no_grad():
                target.copy_(value.to(device=target.device, dtype=target.dtype))
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)

    # Modes and devices --------------------------------------------------------------------

    def train(self, mode=True):
        """Training mode (dropout active, batch norm uses batch statistics) for the tree."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        """Evaluation mode for the tree."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` of every parameter."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear every parameter's gradient."""
        for param in self.parameters():
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad = param.grad.detach() * 0

    def _apply(self, convert):
        """Replace every parameter's values and every buffer by ``convert`` of them; the
        parameter objects stay the same (optimizers keep working)."""
        for module in self.modules():
            for name, param in module._parameters.items():
                if param is not None:
                    param.data = convert(param.data)
                    if param.grad is not None:
                        param.grad = convert(param.grad)
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[name] = convert(buffer)
        return self

    def to(self, *args, **kwargs):
        """Move (``to("cuda")``) and/or convert floats (``to(anygrad.float16)``) in place.
        ``memory_format`` (``anygrad.channels_last``, ...) and ``non_blocking`` are accepted
        and change no values: anygrad chooses layouts itself (its GPU convolutions run
        channels-last internally)."""
        import anygrad
        from ..._memory_format import check

        check("Module.to", kwargs.get("memory_format"))
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for arg in args:
            if isinstance(arg, anygrad.dtype):
                dtype = arg
            elif isinstance(arg, _native.Tensor):
                device, dtype = arg.device, arg.dtype
            else:
                device = arg
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")

        def convert(tensor):
            if device is not None:
                tensor = tensor.to(device)
            if dtype is not None and tensor.is_floating_point():
                tensor = tensor.to(dtype)
            return tensor

        return self._apply(convert)

    def cuda(self, device=None):
        """Move to GPU ``device`` (0 by default)."""
        return self.to("gpu" if device is None else f"gpu:{device}" if isinstance(device, int) else device)

    def cpu(self):
        """Move to the CPU."""
        return self.to("cpu")

    def float(self):
        """Floats as float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Floats as float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Floats as float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def type(self, dst_type):
        """Floats as ``dst_type``."""
        return self.to(dst_type)

    def apply(self, fn):
        """Call ``fn`` on every module, children first, then this one."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # Hooks --------------------------------------------------------------------------------

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` after each forward; a non-None result replaces the
        output."""
        if with_kwargs:
            raise NotImplementedError("register_forward_hook: with_kwargs=True is not supported")
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` before each forward; a non-None result replaces the
        arguments."""
        if with_kwargs:
            raise NotImplementedError("register_forward_pre_hook: with_kwargs=True is not supported")
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` once the gradients of a call's inputs
        are computed (``grad_input`` entries are None for inputs that need none); a non-None
        result replaces ``grad_input`` (see ``backward_hooks.py``)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` once the gradients of a call's outputs are in; a
        non-None result replaces ``grad_output``."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    register_backward_hook = register_full_backward_hook

    # Printing -----------------------------------------------------------------------------

    def extra_repr(self):
        """The settings shown inside this module's ``repr``."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, module in self._modules.items():
            text = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __getstate__(self):
        return self.__dict__.copy()
