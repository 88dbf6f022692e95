#!/usr/bin/env python3
"""Export torchvision's ResNet-18 to ONNX with a symbolic batch dim, for
`examples/onnx_resnet.rs` (and `anygrad onnx run`). Needs torch and torchvision; with
`--pretrained` torchvision downloads the ImageNet weights (otherwise they are random).

    pip install torch torchvision onnx            # onnxscript too for PyTorch's dynamo exporter
    python3 scripts/onnx/export_resnet18.py /tmp/resnet18.onnx [--pretrained]
    cargo run --release -p anygrad --example onnx_resnet -- /tmp/resnet18.onnx

The input is `input` [batch, 3, 224, 224] (normalized RGB, as torchvision's transforms give),
the output `logits` [batch, 1000]. The weights are stored inside the .onnx file (no external
data file). With `--pretrained`, `--labels FILE` also writes the 1000 ImageNet class names, one
a line, for the example's `--labels`.

PyTorch 2.5+ exports through torch.export (the "dynamo" exporter, which needs the onnxscript
package) when onnxscript is installed, else through the TorchScript exporter; `--exporter`
chooses. Either way the classifier ends in the `fc` layer's Gemm (or MatMul and Add), whose
weight and bias the example fine-tunes.
"""

import argparse
import importlib.util
import inspect
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="the .onnx file to write")
    parser.add_argument(
        "--pretrained",
        action="store_true",
        help="torchvision's ImageNet weights (downloaded) instead of random ones",
    )
    parser.add_argument(
        "--labels", help="with --pretrained: also write the class names to this file"
    )
    parser.add_argument(
        "--exporter",
        choices=["auto", "dynamo", "torchscript"],
        default="auto",
        help="dynamo when onnxscript is installed and torch supports it (auto), else torchscript",
    )
    parser.add_argument("--opset", type=int, help="opset version (default: 18 dynamo, 17 else)")
    args = parser.parse_args()
    try:
        import torch
        import torchvision
    except ImportError:
        print("needs torch and torchvision: pip install torch torchvision onnx", file=sys.stderr)
        return 1

    weights = torchvision.models.ResNet18_Weights.DEFAULT if args.pretrained else None
    model = torchvision.models.resnet18(weights=weights).eval()
    if args.labels:
        if weights is None:
            print("--labels needs --pretrained (random weights have no classes)", file=sys.stderr)
            return 1
        with open(args.labels, "w", encoding="utf-8") as handle:
            handle.write("\n".join(weights.meta["categories"]) + "\n")

    # A batch of two: a sample batch of one would let the exporter fix the batch dim at 1.
    example = torch.randn(2, 3, 224, 224)
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    exporter = args.exporter
    if exporter == "auto":
        exporter = (
            "dynamo" if has_dynamo and importlib.util.find_spec("onnxscript") else "torchscript"
        )
    if exporter == "dynamo":
        if not has_dynamo:
            print(f"torch {torch.__version__} has no dynamo exporter", file=sys.stderr)
            return 1
        if not importlib.util.find_spec("onnxscript"):
            print("the dynamo exporter needs onnxscript: pip install onnxscript", file=sys.stderr)
            return 1
        torch.onnx.export(
            model,
            (example,),
            args.output,
            input_names=["input"],
            output_names=["logits"],
            opset_version=args.opset or 18,
            dynamo=True,
            dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=4096)},),
            external_data=False,
        )
    else:
        extra = {"dynamo": False} if has_dynamo else {}
        torch.onnx.export(
            model,
            (example,),
            args.output,
            input_names=["input"],
            output_names=["logits"],
            opset_version=args.opset or 17,
            dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
            **extra,
        )

    summary = f"wrote {args.output} ({exporter} exporter, "
    summary += "pretrained weights)" if args.pretrained else "random weights)"
    try:
        import onnx

        exported = onnx.load(args.output)
        onnx.checker.check_model(exported)
        dims = [
            d.dim_param or d.dim_value for d in exported.graph.input[0].type.tensor_type.shape.dim
        ]
        summary += f": input `{exported.graph.input[0].name}` {dims}"
    except ImportError:
        pass
    print(summary)

    # The exported model against PyTorch, where onnxruntime is installed.
    if importlib.util.find_spec("onnxruntime"):
        import numpy as np
        import onnxruntime

        session = onnxruntime.InferenceSession(args.output, providers=["CPUExecutionProvider"])
        batch = torch.randn(3, 3, 224, 224)
        with torch.no_grad():
            expected = model(batch).numpy()
        (actual,) = session.run(None, {session.get_inputs()[0].name: batch.numpy()})
        difference = float(np.abs(actual - expected).max() / np.abs(expected).max())
        print(f"onnxruntime vs PyTorch, a batch of 3: largest relative difference {difference:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
