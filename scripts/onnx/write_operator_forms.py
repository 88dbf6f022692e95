#!/usr/bin/env python3
"""Write single-node ONNX models of the operators in the forms torchvision's classifiers and
BERT use when exported (pooling with `ceil_mode`, DenseNet's batch norm before a convolution,
ShuffleNet's channel shuffle and opset-18 Split, depthwise and 1x7 convolutions, AlexNet's
11x11 convolution and LRN, LayerNormalization, attention's Softmax and 4-D MatMul, ...), for
`scripts/onnx/compare_with_onnxruntime.py`: a check of those forms that needs no torch.

    python3 scripts/onnx/write_operator_forms.py /tmp/operator-forms
    python3 scripts/onnx/compare_with_onnxruntime.py /tmp/operator-forms --device cpu --device gpu

Weights are seeded random (numpy, seed 0). Needs numpy and onnx.
"""

import argparse
import sys
from pathlib import Path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where to write the .onnx files (created if missing)")
    args = parser.parse_args()
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("error: needs numpy and onnx: pip install numpy onnx", file=sys.stderr)
        return 2

    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)

    def weight(name, shape, scale=1.0):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def constant(name, values, dtype=np.float32):
        return numpy_helper.from_array(np.array(values, dtype), name)

    def save(name, nodes, inputs, initializers=(), opset=18):
        graph = helper.make_graph(
            nodes,
            name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in inputs],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in nodes[-1].output],
            list(initializers),
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        onnx.save(model, str(folder / f"{name}.onnx"))

    node = helper.make_node
    pool3 = {"kernel_shape": [3, 3]}
    save("maxpool_ceil_k3s2", [node("MaxPool", ["x"], ["y"], strides=[2, 2], ceil_mode=1, **pool3)], [("x", [1, 64, 112, 112])])
    save("maxpool_ceil_k3s2_odd", [node("MaxPool", ["x"], ["y"], strides=[2, 2], ceil_mode=1, **pool3)], [("x", [1, 96, 109, 109])])
    save("maxpool_ceil_k3s1p1", [node("MaxPool", ["x"], ["y"], strides=[1, 1], pads=[1, 1, 1, 1], ceil_mode=1, **pool3)], [("x", [1, 192, 28, 28])])
    save("maxpool_ceil_k2s2", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)], [("x", [1, 832, 13, 13])])
    save("maxpool_k3s2p1", [node("MaxPool", ["x"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1], **pool3)], [("x", [1, 64, 112, 112])])
    save("avgpool_k3s1p1_include_pad", [node("AveragePool", ["x"], ["y"], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1, **pool3)], [("x", [1, 192, 35, 35])])
    save("avgpool_k3s1p1_exclude_pad", [node("AveragePool", ["x"], ["y"], strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=0, **pool3)], [("x", [1, 192, 35, 35])])
    save("avgpool_k2s2", [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [("x", [1, 128, 56, 56])])
    save("avgpool_ceil_k3s2", [node("AveragePool", ["x"], ["y"], strides=[2, 2], ceil_mode=1, count_include_pad=0, **pool3)], [("x", [1, 32, 28, 28])])
    save("avgpool_k13", [node("AveragePool", ["x"], ["y"], kernel_shape=[13, 13])], [("x", [1, 1000, 13, 13])])
    save("global_avgpool", [node("GlobalAveragePool", ["x"], ["y"])], [("x", [1, 2048, 7, 7])])
    save("reducemean_hw", [node("ReduceMean", ["x", "axes"], ["y"], keepdims=1)], [("x", [1, 1024, 7, 7])], [constant("axes", [-1, -2], np.int64)])
    batch_norm = [
        weight("scale", [256]),
        weight("bias", [256]),
        weight("mean", [256], 0.1),
        numpy_helper.from_array(rng.uniform(0.5, 2, 256).astype(np.float32), "variance"),
    ]
    save(
        "batchnorm_relu_conv",
        [
            node("BatchNormalization", ["x", "scale", "bias", "mean", "variance"], ["normalized"], epsilon=1e-5),
            node("Relu", ["normalized"], ["activated"]),
            node("Conv", ["activated", "w"], ["y"]),
        ],
        [("x", [1, 256, 28, 28])],
        batch_norm + [weight("w", [128, 256, 1, 1], 0.05)],
    )
    save("concat_24_inputs", [node("Concat", [f"x{i}" for i in range(24)], ["y"], axis=1)], [(f"x{i}", [1, 32, 14, 14]) for i in range(24)])
    save(
        "channel_shuffle",
        [
            node("Reshape", ["x", "grouped"], ["a"]),
            node("Transpose", ["a"], ["b"], perm=[0, 2, 1, 3, 4]),
            node("Reshape", ["b", "flat"], ["y"]),
        ],
        [("x", [1, 116, 28, 28])],
        [constant("grouped", [1, 2, 58, 28, 28], np.int64), constant("flat", [1, 116, 28, 28], np.int64)],
    )
    save("split_num_outputs", [node("Split", ["x"], ["y", "z"], axis=1, num_outputs=2)], [("x", [1, 116, 28, 28])])
    save(
        "depthwise_conv_s2",
        [node("Conv", ["x", "w"], ["y"], group=116, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
        [("x", [1, 116, 28, 28])],
        [weight("w", [116, 1, 3, 3], 0.3)],
    )
    save("gemm_transb", [node("Gemm", ["x", "w", "b"], ["y"], transB=1)], [("x", [2, 4096])], [weight("w", [1000, 4096], 0.02), weight("b", [1000])])
    save(
        "conv_11x11_s4_p2",
        [node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[11, 11], strides=[4, 4], pads=[2, 2, 2, 2])],
        [("x", [1, 3, 224, 224])],
        [weight("w", [64, 3, 11, 11], 0.05), weight("b", [64])],
    )
    save("conv_1x7", [node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 7], pads=[0, 3, 0, 3])], [("x", [1, 128, 17, 17])], [weight("w", [128, 128, 1, 7], 0.03)])
    save("conv_7x1", [node("Conv", ["x", "w"], ["y"], kernel_shape=[7, 1], pads=[3, 0, 3, 0])], [("x", [1, 128, 17, 17])], [weight("w", [128, 128, 7, 1], 0.03)])
    save(
        "layer_normalization",
        [node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-12)],
        [("x", [2, 128, 384])],
        [weight("gamma", [384]), weight("beta", [384])],
    )
    save("softmax_attention", [node("Softmax", ["x"], ["y"], axis=-1)], [("x", [2, 12, 128, 128])])
    save("matmul_4d", [node("MatMul", ["x", "z"], ["y"])], [("x", [2, 12, 128, 32]), ("z", [2, 12, 32, 128])])
    save(
        "gelu_erf",
        [
            node("Div", ["x", "root_two"], ["a"]),
            node("Erf", ["a"], ["e"]),
            node("Add", ["e", "one"], ["f"]),
            node("Mul", ["x", "f"], ["g"]),
            node("Mul", ["g", "half"], ["y"]),
        ],
        [("x", [2, 128, 1536])],
        [constant("root_two", 1.4142135), constant("one", 1.0), constant("half", 0.5)],
    )
    save("lrn", [node("LRN", ["x"], ["y"], size=5, alpha=1e-4, beta=0.75, bias=1.0)], [("x", [1, 96, 55, 55])])
    save("tanh", [node("Tanh", ["x"], ["y"])], [("x", [2, 384])])
    count = len(list(folder.glob("*.onnx")))
    print(f"wrote {count} models to {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
