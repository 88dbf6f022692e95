#!/usr/bin/env python3
"""Write a small image classifier shaped like a tiny ResNet to an ONNX file, with only the
`onnx` package and numpy (no PyTorch): the model `examples/onnx_resnet.rs` fine-tunes when no
exported torchvision model is at hand.

    pip install "onnx==1.23.*" numpy
    python3 scripts/onnx/write_small_cnn.py /tmp/small_cnn.onnx
    cargo run --release -p anygrad --example onnx_resnet -- /tmp/small_cnn.onnx

The graph (opset 17), with torchvision's parameter names:

    input [batch, 3, 32, 32]
    conv1 (3x3, 16) -> bn1 -> relu                          stem
    layer1.0: conv 3x3 -> bn -> relu -> conv 3x3 -> bn, + identity, relu
    layer2.0: conv 3x3 stride 2 -> bn -> relu -> conv 3x3 -> bn,
              + downsample (conv 1x1 stride 2 -> bn), relu  [batch, 32, 16, 16]
    GlobalAveragePool -> Flatten -> fc (Gemm, transB) -> logits [batch, 10]

Weights are random (He initialization, a fixed seed) and the batch-norm statistics plausible,
so the classes' scores differ; the model has learned nothing.
"""

import argparse
import sys


def build(seed: int = 0, classes: int = 10):
    """The model as an `onnx.ModelProto` (checked by `onnx.checker`)."""
    import numpy as np
    from onnx import TensorProto, checker, helper, numpy_helper

    rng = np.random.default_rng(seed)
    initializers = []
    nodes = []

    def add_initializer(name, values):
        initializers.append(numpy_helper.from_array(values.astype(np.float32), name))
        return name

    def conv(name, source, in_channels, out_channels, kernel, stride):
        """A convolution without bias (as torchvision's ResNets have) with He-initialized
        weights; returns its output's name."""
        fan_in = in_channels * kernel * kernel
        shape = (out_channels, in_channels, kernel, kernel)
        weight = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
        add_initializer(f"{name}.weight", weight)
        pad = kernel // 2
        nodes.append(
            helper.make_node(
                "Conv",
                [source, f"{name}.weight"],
                [f"{name}.out"],
                name=name,
                kernel_shape=[kernel, kernel],
                strides=[stride, stride],
                pads=[pad, pad, pad, pad],
            )
        )
        return f"{name}.out"

    def batch_norm(name, source, channels):
        """Inference-mode batch normalization with random affine parameters and running
        statistics; returns its output's name."""
        add_initializer(f"{name}.weight", rng.uniform(0.8, 1.2, channels))
        add_initializer(f"{name}.bias", rng.normal(0.0, 0.1, channels))
        add_initializer(f"{name}.running_mean", rng.normal(0.0, 0.1, channels))
        add_initializer(f"{name}.running_var", rng.uniform(0.5, 1.5, channels))
        nodes.append(
            helper.make_node(
                "BatchNormalization",
                [source]
                + [f"{name}.{p}" for p in ("weight", "bias", "running_mean", "running_var")],
                [f"{name}.out"],
                name=name,
                epsilon=1e-5,
            )
        )
        return f"{name}.out"

    def relu(name, source):
        nodes.append(helper.make_node("Relu", [source], [f"{name}.out"], name=name))
        return f"{name}.out"

    def basic_block(name, source, in_channels, out_channels, stride):
        """torchvision's BasicBlock: two 3x3 convolutions and a residual Add (through a 1x1
        convolution where the shape changes)."""
        h = conv(f"{name}.conv1", source, in_channels, out_channels, 3, stride)
        h = relu(f"{name}.relu1", batch_norm(f"{name}.bn1", h, out_channels))
        h = conv(f"{name}.conv2", h, out_channels, out_channels, 3, 1)
        h = batch_norm(f"{name}.bn2", h, out_channels)
        shortcut = source
        if stride != 1 or in_channels != out_channels:
            shortcut = conv(f"{name}.downsample.0", source, in_channels, out_channels, 1, stride)
            shortcut = batch_norm(f"{name}.downsample.1", shortcut, out_channels)
        nodes.append(helper.make_node("Add", [h, shortcut], [f"{name}.add"], name=f"{name}.add"))
        return relu(f"{name}.relu2", f"{name}.add")

    h = relu("relu", batch_norm("bn1", conv("conv1", "input", 3, 16, 3, 1), 16))
    h = basic_block("layer1.0", h, 16, 16, 1)
    h = basic_block("layer2.0", h, 16, 32, 2)
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["avgpool.out"], name="avgpool"))
    nodes.append(
        helper.make_node("Flatten", ["avgpool.out"], ["flatten.out"], name="flatten", axis=1)
    )
    bound = 1.0 / np.sqrt(32)
    add_initializer("fc.weight", rng.uniform(-bound, bound, (classes, 32)))
    add_initializer("fc.bias", rng.uniform(-bound, bound, classes))
    nodes.append(
        helper.make_node(
            "Gemm", ["flatten.out", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1
        )
    )

    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])],
        initializers,
    )
    model = helper.make_model(
        graph,
        producer_name="anygrad scripts/onnx/write_small_cnn.py",
        opset_imports=[helper.make_opsetid("", 17)],
    )
    # IR version 8 (ONNX 1.10+): readable by older onnx and onnxruntime releases too.
    model.ir_version = 8
    checker.check_model(model, full_check=True)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="the .onnx file to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights (0)")
    parser.add_argument("--classes", type=int, default=10, help="number of classes (10)")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401
        import onnx
    except ImportError:
        print(
            "needs the onnx and numpy packages: pip install 'onnx==1.23.*' numpy",
            file=sys.stderr,
        )
        return 1
    model = build(args.seed, args.classes)
    onnx.save(model, args.output)
    parameters = sum(int(numpy.prod(t.dims)) for t in model.graph.initializer)
    print(
        f"wrote {args.output}: {len(model.graph.node)} nodes, {parameters} parameters, "
        f"{args.classes} classes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
