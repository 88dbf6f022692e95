"""``anygrad.jit`` (``torch.jit``): ``script`` and ``trace`` return the module or function
they are given, unchanged, as ``anygrad.compile`` does. anygrad runs eagerly and fuses
elementwise chains without a compile step, so the result computes exactly what the original
does; there is no TorchScript program to save (``save``/``load`` here are the package's
pickle-based ``anygrad.save``/``anygrad.load``, for modules saved whole)."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``torch.jit.script``: ``obj`` (a module or function) itself."""
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """``torch.jit.trace``: ``func`` (a module or function) itself; the example inputs are
    not run."""
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False, _store_inputs=True):
    """``torch.jit.trace_module``: ``mod`` itself."""
    return mod


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore``: the function itself (used as ``@ignore`` or ``@ignore(...)``)."""
    if callable(drop):
        return drop
    return lambda function: function


def unused(fn):
    """``@torch.jit.unused``: the function itself."""
    return fn


def export(fn):
    """``@torch.jit.export``: the function itself."""
    return fn


def is_scripting():
    """False: nothing in anygrad runs as TorchScript."""
    return False


def is_tracing():
    """False: nothing in anygrad is traced."""
    return False


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``torch.jit.freeze``: the module itself."""
    return mod


def save(m, f, _extra_files=None):
    """The module saved whole with ``anygrad.save`` (pickle), read back by ``jit.load``."""
    from ._serialization import save as save_pickle

    save_pickle(m, f)


def load(f, map_location=None, _extra_files=None):
    """A module saved by ``jit.save`` (``anygrad.load``; ``map_location`` as there)."""
    from ._serialization import load as load_pickle

    return load_pickle(f, map_location=map_location)
