#!/usr/bin/env python3
"""Compare anygrad's outputs with onnxruntime's on real ONNX models.

For each model (files, or folders searched for *.onnx), the script builds seeded random
inputs from the graph's declared inputs, runs onnxruntime (CPUExecutionProvider) on them,
runs anygrad on the same inputs through its command line (`anygrad onnx run MODEL --input
NAME=FILE.npy ... --device D --output OUT.npz --json`) once per `--device`, and reports for
every output the largest difference relative to onnxruntime's largest output:

    max |anygrad - onnxruntime| / max |onnxruntime|        (pass: at most --tolerance, 1e-4)

One line per model and device (with one indented line per output when there are several),
then a summary. `--json FILE` writes one JSON object per model and device. The exit status is
1 when any comparison fails or any model cannot be run by either side, 2 for bad arguments.

    python3 scripts/onnx/compare_with_onnxruntime.py MODEL.onnx|FOLDER... \\
        [--device cpu] [--device gpu] [--anygrad target/release/anygrad] \\
        [--shape x=1,3,640,640] [--dim batch=1] [--dim sequence=128] [--default-dim 64] \\
        [--input NAME=FILE.npy] [--int-range input_ids=0:30522] [--repeat 3] [--json out.jsonl]

Inputs. Shapes come from the graph: a fixed dim is kept, a symbolic dim (`dim_param`) takes
`--dim NAME=VALUE`, and a dim still unresolved takes `--batch` (default 1) when it is the
first, else `--default-dim` (without it the model is reported as an error naming the dims);
`--shape INPUT=D0,D1,...` gives an input's whole shape. `--shape`, `--input` and
`--int-range` also take `MODEL:INPUT=...` (MODEL: the file name without `.onnx`), which applies
to that model only and wins over a plain `INPUT=...`. Floats are standard normal (or
uniform with `--float-range LOW:HIGH`). Integers are uniform in `--int-range NAME=LOW:HIGH`
when given, else ones for an input whose name contains `mask`, else in [0, N) where N is the
smallest first dim of the tables the input indexes through Gather (token ids below the
vocabulary size), else in [0, 10). Booleans are random. `--input NAME=FILE.npy` feeds a file
instead. The same inputs go to every device; the generator is seeded by `--seed` (default 0)
and the model's position in the list.

A GPU device (`gpu`, `gpu:N`) runs with ANYGRAD_REQUIRE_GPU=1 unless the environment sets it,
so that anygrad cannot fall back to the CPU silently; the device anygrad reports is printed.

Timings: onnxruntime's session creation and runs (the first, and the fastest of the others
with `--repeat N`), anygrad's load and runs as its `--json` output reports them (its first run
on a GPU includes shader compilation). Needs numpy, onnx and onnxruntime only.
"""

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOLERANCE = 1e-4


def fail_usage(message):
    """Stop with a usage error (exit status 2)."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_pairs(entries, option, convert):
    """`NAME=VALUE` options as a dict, VALUE through `convert` (its errors name the option)."""
    pairs = {}
    for entry in entries or []:
        name, separator, value = entry.partition("=")
        if not separator or not name:
            fail_usage(f"{option} `{entry}` must be NAME=VALUE")
        try:
            pairs[name] = convert(value)
        except ValueError as error:
            fail_usage(f"{option} `{entry}`: {error}")
    return pairs


def parse_shape(text):
    """`1,3,224,224` (or `1x3x224x224`) as a list of sizes."""
    parts = text.replace("x", ",").split(",") if text else []
    sizes = [int(part) for part in parts if part != ""]
    if any(size < 0 for size in sizes):
        raise ValueError("sizes must not be negative")
    return sizes


def parse_range(text):
    """`LOW:HIGH` as two numbers with LOW < HIGH."""
    low, separator, high = text.partition(":")
    if not separator:
        raise ValueError("must be LOW:HIGH")
    low, high = float(low), float(high)
    if not low < high:
        raise ValueError("LOW must be below HIGH")
    return low, high


def positive_int(text):
    """A whole number of at least 1 (a ValueError otherwise, which argparse reports)."""
    value = int(text)
    if value < 1:
        raise ValueError(f"{value} must be at least 1")
    return value


def find_models(paths):
    """The .onnx files named or found (recursively, sorted) in the folders named."""
    models = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.onnx") if p.is_file())
            if not found:
                print(f"warning: no .onnx file under {path}", file=sys.stderr)
            models.extend(found)
        elif path.is_file():
            models.append(path)
        else:
            fail_usage(f"{path} is neither a file nor a folder")
    return models


def numpy_dtype(element_type):
    """The numpy dtype of an ONNX element type, or None when numpy has none."""
    import numpy as np
    from onnx import TensorProto

    table = {
        TensorProto.FLOAT: np.float32,
        TensorProto.DOUBLE: np.float64,
        TensorProto.FLOAT16: np.float16,
        TensorProto.INT8: np.int8,
        TensorProto.INT16: np.int16,
        TensorProto.INT32: np.int32,
        TensorProto.INT64: np.int64,
        TensorProto.UINT8: np.uint8,
        TensorProto.UINT16: np.uint16,
        TensorProto.UINT32: np.uint32,
        TensorProto.UINT64: np.uint64,
        TensorProto.BOOL: np.bool_,
    }
    return table.get(element_type)


def gather_bounds(model):
    """For each graph input used (directly or through Cast, Identity, Reshape, Squeeze,
    Unsqueeze or Flatten) as Gather indices into a table of known shape (stored, or
    inferred by onnx's shape inference, e.g. an int8 table cast and scaled), the smallest
    size of the indexed axis: the exclusive upper bound of valid indices (the vocabulary
    size of an embedding)."""
    import onnx

    graph = model.graph
    shapes = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph.value_info
    except Exception:  # noqa: BLE001 -- inference is a help, not a requirement
        inferred = []
    for info in inferred:
        dims = info.type.tensor_type.shape.dim
        if info.type.HasField("tensor_type") and all(d.HasField("dim_value") for d in dims):
            shapes[info.name] = [d.dim_value for d in dims]
    shapes.update({t.name: list(t.dims) for t in graph.initializer})
    producers = {}
    for node in graph.node:
        for output in node.output:
            producers[output] = node
        if node.op_type == "Constant":
            for attribute in node.attribute:
                if attribute.name == "value" and node.output:
                    shapes[node.output[0]] = list(attribute.t.dims)

    def table_shape(name, depth=0):
        # The table may be dequantized or cast from a stored tensor first.
        if name in shapes:
            return shapes[name]
        node = producers.get(name)
        if node is None or depth > 4 or not node.input:
            return None
        if node.op_type in ("DequantizeLinear", "Cast", "Identity", "Mul"):
            return table_shape(node.input[0], depth + 1)
        return None

    consumers = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, position))
    passing = {"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"}
    bounds = {}
    for graph_input in graph.input:
        if graph_input.name in shapes:
            continue
        pending, seen = [graph_input.name], set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            for node, position in consumers.get(name, []):
                if node.op_type in passing and position == 0:
                    pending.extend(node.output)
                elif node.op_type == "Gather" and position == 1:
                    table = table_shape(node.input[0])
                    axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                    if table and -len(table) <= axis < len(table):
                        size = table[axis]
                        previous = bounds.get(graph_input.name)
                        bounds[graph_input.name] = size if previous is None else min(previous, size)
    return bounds


def for_model(options, model_name, input_name):
    """The option given for `MODEL:INPUT` (MODEL: the file name without .onnx), else for
    `INPUT`, else None."""
    return options.get(f"{model_name}:{input_name}", options.get(input_name))


def input_shape(declared, model_name, args):
    """The shape fed to `declared` (a ValueInfoProto), or raise ValueError naming the dims
    that need a size."""
    name = declared.name
    given = for_model(args.shapes, model_name, name)
    if given is not None:
        return list(given)
    tensor_type = declared.type.tensor_type
    if not tensor_type.HasField("shape"):
        raise ValueError(f"input `{name}` has no declared shape: give --shape {name}=D0,D1,...")
    shape, missing = [], []
    for position, dim in enumerate(tensor_type.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            shape.append(dim.dim_value)
        elif dim.HasField("dim_param") and dim.dim_param in args.dims:
            shape.append(args.dims[dim.dim_param])
        elif position == 0:
            shape.append(args.batch)
        elif args.default_dim is not None:
            shape.append(args.default_dim)
        else:
            label = f"`{dim.dim_param}`" if dim.HasField("dim_param") else "unknown"
            missing.append(f"dim {position} ({label})")
            shape.append(None)
    if missing:
        symbolic = [d.dim_param for d in tensor_type.shape.dim if d.HasField("dim_param")]
        hint = f"--dim {symbolic[-1]}=VALUE, " if symbolic and symbolic[-1] != "?" else ""
        raise ValueError(
            f"input `{name}` needs sizes for {', '.join(missing)}: give {hint}"
            f"--shape {name}=D0,D1,... or --default-dim N"
        )
    return shape


def make_inputs(model, model_name, args, rng):
    """The inputs of `model` as {name: array}, and a note per input on how it was made."""
    import numpy as np

    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    bounds = gather_bounds(model)
    inputs, notes = {}, {}
    for declared in graph.input:
        name = declared.name
        if name in initializers:
            continue
        given_file = for_model(args.files, model_name, name)
        if given_file is not None:
            inputs[name] = np.load(given_file, allow_pickle=False)
            notes[name] = f"from {given_file}"
            continue
        if not declared.type.HasField("tensor_type"):
            raise ValueError(f"input `{name}` is not a tensor (sequences and maps are not fed)")
        element_type = declared.type.tensor_type.elem_type
        dtype = numpy_dtype(element_type)
        if dtype is None:
            raise ValueError(f"input `{name}` has element type {element_type}, which numpy has no type for")
        shape = input_shape(declared, model_name, args)
        kind = np.dtype(dtype).kind
        if kind == "f":
            if args.float_range:
                low, high = args.float_range
                value = rng.uniform(low, high, size=shape)
                notes[name] = f"uniform [{low:g}, {high:g})"
            else:
                value = rng.standard_normal(size=shape)
                notes[name] = "standard normal"
        elif kind == "b":
            value = rng.integers(0, 2, size=shape).astype(bool)
            notes[name] = "random booleans"
        else:
            info = np.iinfo(dtype)
            given_range = for_model(args.int_ranges, model_name, name)
            if given_range is not None:
                low, high = given_range
                low, high = math.ceil(low), math.ceil(high)
                notes[name] = f"uniform integers [{low}, {high}) (--int-range)"
            elif "mask" in name.lower():
                low, high = 1, 2
                notes[name] = "ones (a mask)"
            elif name in bounds:
                low, high = 0, bounds[name]
                notes[name] = f"uniform integers [0, {high}) (the Gather table it indexes)"
            else:
                low, high = 0, 10
                notes[name] = "uniform integers [0, 10)"
            low, high = max(low, int(info.min)), min(high, int(info.max) + 1)
            value = rng.integers(low, high, size=shape)
        inputs[name] = np.ascontiguousarray(np.asarray(value).astype(dtype))
    return inputs, notes


def compare_output(reference, actual):
    """The comparison of one output: a dict with `relative_difference` (max |a - r| / max |r|
    over finite entries; the absolute difference when the reference is all zeros), the
    absolute figures and a `problem` string when they cannot be compared."""
    import numpy as np

    result = {
        "shape": list(reference.shape),
        "reference_dtype": str(reference.dtype),
        "dtype": str(actual.dtype),
    }
    if reference.shape != actual.shape:
        result["problem"] = f"shape {list(actual.shape)}, onnxruntime's is {list(reference.shape)}"
        return result
    if reference.size == 0:
        result.update(relative_difference=0.0, max_abs_difference=0.0, max_abs_reference=0.0)
        return result
    if reference.dtype.kind not in "biuf" or actual.dtype.kind not in "biuf":
        same = bool(np.array_equal(reference, actual))
        result.update(relative_difference=0.0 if same else math.inf)
        if not same:
            result["problem"] = "values differ"
        return result
    ref = reference.astype(np.float64)
    got = actual.astype(np.float64)
    finite_ref, finite_got = np.isfinite(ref), np.isfinite(got)
    mismatched = (finite_ref != finite_got) | (~finite_ref & ~np.isnan(ref) & (ref != got))
    mismatched |= np.isnan(ref) != np.isnan(got)
    both = finite_ref & finite_got
    largest = float(np.abs(ref[both]).max()) if both.any() else 0.0
    difference = float(np.abs(got[both] - ref[both]).max()) if both.any() else 0.0
    relative = difference / largest if largest > 0 else difference
    result.update(
        relative_difference=relative,
        max_abs_difference=difference,
        max_abs_reference=largest,
    )
    if both.any():
        with np.errstate(invalid="ignore", over="ignore"):
            distance = np.where(both, np.abs(got - ref), -1.0)
        worst = np.unravel_index(int(np.argmax(distance)), ref.shape)
        result["worst_index"] = [int(i) for i in worst]
    if mismatched.any():
        result["problem"] = f"{int(mismatched.sum())} non-finite entries differ"
    return result


def run_onnxruntime(model_path, inputs, args):
    """onnxruntime's outputs ({name: array}, in the session's order) and its timings."""
    import onnxruntime

    onnxruntime.set_default_logger_severity(4)  # its errors come back as exceptions, reported
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = {
        "disable": onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[args.ort_optimization]
    if args.ort_threads:
        options.intra_op_num_threads = args.ort_threads
    started = time.perf_counter()
    session = onnxruntime.InferenceSession(
        str(model_path), options, providers=["CPUExecutionProvider"]
    )
    session_seconds = time.perf_counter() - started
    names = [output.name for output in session.get_outputs()]
    times, results = [], None
    for _ in range(args.repeat):
        started = time.perf_counter()
        results = session.run(None, inputs)
        times.append(time.perf_counter() - started)
    timings = {
        "version": onnxruntime.__version__,
        "session_seconds": session_seconds,
        "run_seconds": times[0],
        "run_seconds_all": times,
        "run_seconds_best_after_first": min(times[1:]) if len(times) > 1 else None,
    }
    return dict(zip(names, results)), timings


def run_anygrad(model_path, input_files, device, output_file, args):
    """anygrad's outputs ({name: array}) and the `--json` report of `anygrad onnx run`."""
    import numpy as np

    command = [args.anygrad, "onnx", "run", str(model_path)]
    for name, path in input_files.items():
        command += ["--input", f"{name}={path}"]
    command += ["--device", device, "--output", str(output_file), "--json"]
    if args.repeat > 1:
        command += ["--repeat", str(args.repeat)]
    environment = dict(os.environ)
    if device.startswith("gpu") and "ANYGRAD_REQUIRE_GPU" not in environment:
        environment["ANYGRAD_REQUIRE_GPU"] = "1"
    started = time.perf_counter()
    try:
        finished = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=args.timeout,
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"anygrad did not finish within {args.timeout} s (--timeout)") from None
    except OSError as error:
        raise RuntimeError(f"cannot start {args.anygrad}: {error} (--anygrad PATH)") from None
    wall_seconds = time.perf_counter() - started
    if finished.returncode != 0:
        message = (finished.stderr.strip() or finished.stdout.strip() or "no message").splitlines()
        raise RuntimeError(
            f"anygrad exited with status {finished.returncode}: " + " | ".join(message[-5:])
        )
    report = None
    for line in reversed(finished.stdout.splitlines()):
        if line.startswith("{"):
            try:
                report = json.loads(line)
                break
            except json.JSONDecodeError:
                continue
    if report is None:
        raise RuntimeError(f"anygrad printed no JSON report: {finished.stdout[-300:]!r}")
    report["wall_seconds"] = wall_seconds
    with np.load(output_file, allow_pickle=False) as archive:
        outputs = {name: archive[name] for name in archive.files}
    return outputs, report


def seconds(value):
    """A time for the report line (`-` when absent)."""
    if value is None:
        return "-"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def compare_model(position, model_path, args, work_folder):
    """Every device's record for one model (a list of dicts)."""
    import numpy as np
    import onnx

    base = {"model": str(model_path), "tolerance": args.tolerance}
    try:
        model = onnx.load(str(model_path), load_external_data=False)
        rng = np.random.default_rng([args.seed, position])
        inputs, notes = make_inputs(model, model_path.stem, args, rng)
    except Exception as error:  # noqa: BLE001 -- any failure is reported per model
        return [dict(base, device=device, status="ERROR", error=f"inputs: {error}") for device in args.devices]
    base["inputs"] = {
        name: {"shape": list(value.shape), "dtype": str(value.dtype), "made": notes[name]}
        for name, value in inputs.items()
    }
    folder = Path(work_folder) / f"{position:03d}_{model_path.stem}"
    folder.mkdir(parents=True, exist_ok=True)
    input_files = {}
    for index, (name, value) in enumerate(inputs.items()):
        path = folder / f"input_{index}.npy"
        np.save(path, value)
        input_files[name] = path
    try:
        reference, ort_timings = run_onnxruntime(model_path, inputs, args)
    except Exception as error:  # noqa: BLE001
        return [
            dict(base, device=device, status="ERROR", error=f"onnxruntime: {str(error).strip()[:400]}")
            for device in args.devices
        ]
    base["onnxruntime"] = ort_timings
    records = []
    for device in args.devices:
        record = dict(base, device=device)
        output_file = folder / f"outputs_{device.replace(':', '_')}.npz"
        try:
            actual, report = run_anygrad(model_path, input_files, device, output_file, args)
        except RuntimeError as error:
            records.append(dict(record, status="ERROR", error=str(error)[:600]))
            continue
        record["anygrad"] = {
            key: report.get(key)
            for key in (
                "device",
                "load_seconds",
                "run_seconds",
                "run_seconds_all",
                "run_seconds_best_after_first",
                "wall_seconds",
            )
        }
        outputs = []
        for name, value in reference.items():
            if name not in actual:
                outputs.append({"name": name, "problem": "anygrad returned no such output"})
                continue
            outputs.append(dict(compare_output(value, actual[name]), name=name))
        for entry in outputs:
            entry["passed"] = "problem" not in entry and entry["relative_difference"] <= args.tolerance
        record["outputs"] = outputs
        record["worst_relative_difference"] = max(
            (e.get("relative_difference", math.inf) for e in outputs), default=0.0
        )
        record["status"] = "PASS" if all(e["passed"] for e in outputs) else "FAIL"
        records.append(record)
    return records


def print_record(record):
    """The line (and per-output lines) of one model and device."""
    name = Path(record["model"]).name
    device = record["device"]
    if record["status"] == "ERROR":
        print(f"ERROR {device:<6} {name}: {record['error']}", flush=True)
        return
    ours, theirs = record["anygrad"], record["onnxruntime"]
    steady = ""
    if ours.get("run_seconds_best_after_first") is not None:
        steady = (
            f", then {seconds(ours['run_seconds_best_after_first'])} "
            f"(onnxruntime {seconds(theirs['run_seconds_best_after_first'])})"
        )
    print(
        f"{record['status']:<5} {device:<6} {name}: max relative difference "
        f"{record['worst_relative_difference']:.2e} (tolerance {record['tolerance']:g}); "
        f"anygrad on {ours['device']}: load {seconds(ours['load_seconds'])}, run "
        f"{seconds(ours['run_seconds'])}; onnxruntime run {seconds(theirs['run_seconds'])}{steady}",
        flush=True,
    )
    if len(record["outputs"]) > 1 or any("problem" in e for e in record["outputs"]):
        for entry in record["outputs"]:
            figure = (
                f"{entry['relative_difference']:.2e}"
                if "relative_difference" in entry
                else "-"
            )
            problem = f" ({entry['problem']})" if "problem" in entry else ""
            print(
                f"      output `{entry['name']}` {entry.get('shape', '?')}: {figure}{problem}",
                flush=True,
            )


def main():
    if hasattr(signal, "SIGPIPE"):  # `| head` ends the report quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]),
    )
    parser.add_argument("models", nargs="+", help=".onnx files or folders holding them")
    parser.add_argument(
        "--device",
        dest="devices",
        action="append",
        help="anygrad device (cpu, gpu, gpu:N; repeat for several; default cpu)",
    )
    parser.add_argument(
        "--anygrad",
        help="the anygrad binary (default target/release/anygrad, in the current folder or "
        "else in the repository holding this script)",
    )
    parser.add_argument("--dim", action="append", metavar="NAME=VALUE", help="size of a symbolic dim")
    parser.add_argument(
        "--shape",
        action="append",
        metavar="[MODEL:]INPUT=D0,D1,...",
        help="the whole shape of an input",
    )
    parser.add_argument(
        "--input", action="append", metavar="[MODEL:]NAME=FILE.npy", help="feed this file"
    )
    parser.add_argument(
        "--int-range",
        action="append",
        metavar="[MODEL:]NAME=LOW:HIGH",
        help="range of an integer input",
    )
    parser.add_argument(
        "--float-range", metavar="LOW:HIGH", help="uniform floats instead of standard normal ones"
    )
    parser.add_argument("--batch", type=positive_int, default=1, help="size of an unresolved first dim (1)")
    parser.add_argument("--default-dim", type=positive_int, help="size of the other unresolved dims")
    parser.add_argument("--seed", type=int, default=0, help="random seed (0)")
    parser.add_argument(
        "--tolerance", type=float, default=TOLERANCE, help=f"largest relative difference that passes ({TOLERANCE:g})"
    )
    parser.add_argument("--repeat", type=positive_int, default=1, help="runs per side, for timings (1)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per anygrad run (1800)")
    parser.add_argument(
        "--ort-optimization",
        choices=["disable", "basic", "extended", "all"],
        default="all",
        help="onnxruntime's graph optimization level (all)",
    )
    parser.add_argument("--ort-threads", type=int, help="onnxruntime's intra-op threads (its default)")
    parser.add_argument("--json", metavar="FILE", help="write one JSON object per model and device")
    parser.add_argument("--keep", metavar="DIR", help="keep the inputs and outputs in this folder")
    args = parser.parse_args()

    args.devices = args.devices or ["cpu"]
    args.dims = parse_pairs(args.dim, "--dim", positive_int)
    args.shapes = parse_pairs(args.shape, "--shape", parse_shape)
    args.files = parse_pairs(args.input, "--input", str)
    args.int_ranges = parse_pairs(args.int_range, "--int-range", parse_range)
    if args.float_range:
        try:
            args.float_range = parse_range(args.float_range)
        except ValueError as error:
            fail_usage(f"--float-range: {error}")
    for name, path in args.files.items():
        if not Path(path).is_file():
            fail_usage(f"--input {name}={path}: no such file")
    if not args.tolerance >= 0:
        fail_usage("--tolerance must not be negative")
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as error:
        fail_usage(f"needs numpy, onnx and onnxruntime ({error}): pip install numpy onnx onnxruntime")
    if args.anygrad is None:
        relative = Path("target/release/anygrad")
        beside = Path(__file__).resolve().parents[2] / relative
        args.anygrad = str(relative if relative.is_file() or not beside.is_file() else beside)
    if not (Path(args.anygrad).is_file() and os.access(args.anygrad, os.X_OK)):
        fail_usage(
            f"no anygrad binary at {args.anygrad}: build it (cargo build --release -p anygrad-cli) "
            "or pass --anygrad PATH"
        )
    models = find_models(args.models)
    if not models:
        fail_usage("no models to compare")

    json_file = open(args.json, "w", encoding="utf-8") if args.json else None
    records = []
    with tempfile.TemporaryDirectory(prefix="anygrad-compare-") as temporary:
        work_folder = args.keep or temporary
        for position, model_path in enumerate(models):
            for record in compare_model(position, model_path, args, work_folder):
                print_record(record)
                records.append(record)
                if json_file:
                    json_file.write(json.dumps(record) + "\n")
                    json_file.flush()
    if json_file:
        json_file.close()

    print()
    print(f"{'model':<44} {'device':<7} {'status':<6} {'max relative difference':>24}")
    for record in records:
        figure = (
            f"{record['worst_relative_difference']:.2e}"
            if "worst_relative_difference" in record
            else "-"
        )
        print(f"{Path(record['model']).name[:44]:<44} {record['device']:<7} {record['status']:<6} {figure:>24}")
    counts = {status: sum(r["status"] == status for r in records) for status in ("PASS", "FAIL", "ERROR")}
    print(
        f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['ERROR']} errors "
        f"({len(models)} models x {len(args.devices)} devices, tolerance {args.tolerance:g})"
    )
    return 0 if counts["FAIL"] == 0 and counts["ERROR"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
