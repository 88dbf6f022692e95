#!/usr/bin/env python3
"""onnxruntime's result on folders of ONNX backend test cases, judged as `anygrad onnx test`
judges anygrad's (rtol 1e-3 and atol 1e-7 for floats unless a tolerance.json beside the model
says otherwise, exact for integers and booleans): the reference figure for anygrad's
conformance. One line per case, then `N passed, M failed, K skipped` (skipped: the session
could not be created, e.g. an operator onnxruntime lacks).

    python3 scripts/onnx/onnxruntime_node_cases.py OUT/node
"""

import glob
import json
import os
import sys


def load_tensor(path):
    import onnx
    from onnx import numpy_helper

    tensor = onnx.TensorProto()
    with open(path, "rb") as handle:
        tensor.ParseFromString(handle.read())
    return numpy_helper.to_array(tensor)


def close(actual, expected, rtol, atol):
    import numpy as np

    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return False
    if expected.dtype.kind in "fc":
        return bool(np.allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(actual, expected))


def run_case(folder):
    import onnxruntime

    tolerance = {"rtol": 1e-3, "atol": 1e-7}
    if os.path.isfile(os.path.join(folder, "tolerance.json")):
        with open(os.path.join(folder, "tolerance.json")) as handle:
            tolerance.update(json.load(handle))
    try:
        session = onnxruntime.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 -- any refusal counts as skipped
        return "SKIP", str(error).splitlines()[0][:160]
    names = [i.name for i in session.get_inputs()]
    for data_set in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
        inputs = sorted(glob.glob(os.path.join(data_set, "input_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        outputs = sorted(glob.glob(os.path.join(data_set, "output_*.pb")), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
        try:
            feeds = {name: load_tensor(path) for name, path in zip(names, inputs)}
            results = session.run(None, feeds)
            expected = [load_tensor(path) for path in outputs]
        except Exception as error:  # noqa: BLE001
            return "FAIL", str(error).splitlines()[0][:160]
        for index, (actual, wanted) in enumerate(zip(results, expected)):
            if not close(actual, wanted, tolerance["rtol"], tolerance["atol"]):
                return "FAIL", f"{os.path.basename(data_set)}: output {index} differs"
    return "PASS", ""


def main():
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for root in sys.argv[1:]:
        for folder in sorted(os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "model.onnx"))):
            verdict, why = run_case(folder)
            counts[verdict] += 1
            print(f"{verdict} {os.path.basename(folder)}" + (f": {why}" if why else ""))
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")


if __name__ == "__main__":
    main()
