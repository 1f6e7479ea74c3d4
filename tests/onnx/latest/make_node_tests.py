#!/usr/bin/env python3
"""Writes ONNX's own node tests, as the installed `onnx` Python package defines them today
(opsets up to its newest: 18-23 and later, which Debian's libonnx-testdata 1.12 stops short
of), in the backend-test layout the conformance runner reads:

    /usr/bin/python3 tests/onnx/latest/make_node_tests.py OUT

Each case's model, inputs and expected outputs come from onnx.backend.test.case.node (the
reference values are numpy's). Needs onnx from pip (scripts/setup.sh installs it).
"""
import os
import sys

import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def proto_of(value, name, type_proto):
    """A TensorProto, SequenceProto or OptionalProto, as the graph declares the value."""
    if isinstance(value, (TensorProto, onnx.SequenceProto, onnx.OptionalProto)):
        return value
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(list(value), name)
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name)
    return numpy_helper.from_array(value, name)


def write(path, value, info):
    with open(path, "wb") as f:
        f.write(proto_of(value, info.name, info.type).SerializeToString())


def main():
    out = sys.argv[1]
    count = 0
    for case in node.collect_testcases(None):
        if case.kind != "node" or case.model is None:
            continue
        folder = os.path.join(out, case.name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for k, (inputs, outputs) in enumerate(case.data_sets):
            data = os.path.join(folder, f"test_data_set_{k}")
            os.makedirs(data, exist_ok=True)
            try:
                for j, x in enumerate(inputs):
                    write(os.path.join(data, f"input_{j}.pb"), x, graph.input[j])
                for j, x in enumerate(outputs):
                    write(os.path.join(data, f"output_{j}.pb"), x, graph.output[j])
            except Exception as e:  # sequences, optionals, maps: not TensorProto
                with open(os.path.join(folder, "SKIPPED"), "w") as f:
                    f.write(f"{type(e).__name__}: {e}\n")
        count += 1
    print(f"wrote {count} node tests of onnx {onnx.__version__} to {out}")


if __name__ == "__main__":
    main()
