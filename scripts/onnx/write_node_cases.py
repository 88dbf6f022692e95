#!/usr/bin/env python3
"""Write ONNX's backend test cases (node, simple and pytorch-converted models) to a folder in
the backend-test layout (`model.onnx`, `test_data_set_N/input_K.pb`, `output_K.pb`).

The onnx wheel ships the cases as Python code, not as files; this runs the package's own
writer (`onnx.backend.test.cmd_tools.generate_data`) into OUT:

    pip install "onnx==1.23.*"
    python3 scripts/onnx/write_node_cases.py OUT
    anygrad onnx test OUT/node --device cpu
"""

import argparse
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="folder to write (OUT/node holds the node cases)")
    args = parser.parse_args()
    try:
        from onnx.backend.test import cmd_tools
    except ImportError:
        print("the onnx package is missing: pip install 'onnx==1.23.*'", file=sys.stderr)
        return 1
    import types

    import onnx.backend.test.case.model as model_cases
    import onnx.backend.test.case.node as node_cases

    # `generate_data` writes what `model_test.collect_testcases()` returns: the model cases
    # only. Hand it the node cases too (the ones `anygrad onnx test` is measured on).
    def every_case():
        return list(node_cases.collect_testcases()) + list(model_cases.collect_testcases())

    cmd_tools.model_test = types.SimpleNamespace(collect_testcases=every_case)
    cmd_tools.generate_data(argparse.Namespace(output=args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
