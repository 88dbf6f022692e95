"""``anygrad.onnx``: run and fine-tune ONNX models on any device.

``load(path, device)`` reads a ``.onnx`` file (external data beside it) with the library's
importer (``anygrad-onnx``: 162 operators, ONNX's own node test cases as its conformance
suite, docs/ONNX.md) and returns an ``OnnxModel``: call it with tensors (positionally in the
graph's input order, or by name) to run it. Its float initializers are trainable:
``parameters()`` gives the very tensors the model computes with, so ``loss.backward()`` fills
their ``.grad`` and an optimizer stepping them fine-tunes the model; ``save_safetensors``
writes them."""

import os

from . import _native


class OnnxModel:
    """An ONNX model on a device (see the module's documentation)."""

    def __init__(self, native):
        self._native = native
        self._inputs = native.inputs()
        self._outputs = native.outputs()

    @property
    def device(self):
        """The device the model runs on."""
        return _native.device(self._native.device)

    @property
    def input_names(self):
        """The graph's input names, in order."""
        return [name for name, _, _ in self._inputs]

    @property
    def output_names(self):
        """The graph's output names, in order."""
        return [name for name, _, _ in self._outputs]

    def inputs(self):
        """``(name, element type, shape)`` of each input; symbolic dims are strings."""
        return list(self._inputs)

    def outputs(self):
        """``(name, element type, shape)`` of each output."""
        return list(self._outputs)

    def unsupported_nodes(self):
        """``(op_type, node name)`` of every node the importer cannot run."""
        return self._native.unsupported_nodes()

    def named_parameters(self):
        """``(name, tensor)`` of each float initializer, each requiring grad."""
        return iter(self._native.parameters())

    def parameters(self):
        """The float initializers as trainable tensors (for an optimizer)."""
        return iter(tensor for _, tensor in self._native.parameters())

    def run(self, feeds):
        """Run on a dict ``{input name: tensor}``; a dict ``{output name: tensor}``."""
        if not isinstance(feeds, dict):
            raise TypeError(f"OnnxModel.run expects a dict of input tensors, got {type(feeds).__name__}")
        import anygrad

        pairs = []
        for name, value in feeds.items():
            if not isinstance(value, anygrad.Tensor):
                value = anygrad.as_tensor(value)
            pairs.append((name, value))
        return dict(self._native.run(pairs))

    def __call__(self, *args, **kwargs):
        """Run with the inputs in the graph's order (and/or by name); one output comes back
        as a tensor, several as a tuple in the graph's order."""
        names = self.input_names
        if len(args) > len(names):
            raise TypeError(f"the model takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
        feeds = dict(zip(names, args))
        for name, value in kwargs.items():
            if name in feeds:
                raise TypeError(f"input {name!r} given twice")
            feeds[name] = value
        outputs = self.run(feeds)
        values = tuple(outputs[name] for name in self.output_names)
        return values[0] if len(values) == 1 else values

    def save_safetensors(self, path):
        """Write the float initializers (their current values) to a safetensors file."""
        self._native.save_safetensors(os.fspath(path))

    def __repr__(self):
        return f"OnnxModel(inputs={self.input_names}, outputs={self.output_names}, device='{self._native.device}')"


def load(path, device=None):
    """Load the ONNX model at ``path`` onto ``device`` (the CPU by default)."""
    return OnnxModel(_native.OnnxModel(os.fspath(path), device))
