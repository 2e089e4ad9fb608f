#!/usr/bin/env python3
"""Writes the ONNX backend node test suite of the installed onnx package.

onnx (1.23 and later) no longer ships the node test cases as .pb files: its
`onnx.backend.test.loader.load_node_model_tests()` builds them in memory
(1,884 cases with onnx 1.23.2). This script writes them in the layout that
`tcc onnx-test` reads, one directory per case:

    OUT/<case>/model.onnx
    OUT/<case>/data.json   the case's own rtol/atol (as the onnx package
                           writes them for its model cases)
    OUT/<case>/test_data_set_<N>/input_<K>.pb, output_<K>.pb

as the onnx package's own `backend-test-tools generate-data` writes them
(sequence, optional and map values as SequenceProto / OptionalProto /
MapProto). It also writes

    OUT/TRAINING   the cases that only make sense in training, one per line,
                   decided from their op types (below);
    OUT/ONNX_VERSION  the onnx package's version and newest opset.

Usage: python3 test/onnx/node_suite.py OUT   (OUT is emptied first)

`compiler/tests/onnx_node_suite.rs` runs it at test time, so nothing
generated is committed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import warnings

# Ops that exist only for training: gradients and optimizers (the
# `ai.onnx.preview.training` domain holds them). The loss functions
# (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss) are ops of the
# default domain that an evaluation graph may compute, and tcc imports
# them (compiler/src/front/onnx/ops/loss.rs), so their cases count as
# inference cases.
TRAINING_OPS = {
    "Gradient",
    "Adagrad",
    "Adam",
    "Momentum",
}
TRAINING_DOMAIN = "ai.onnx.preview.training"


def is_training(model) -> bool:
    """Whether a node of the model only makes sense in training: a
    training op, BatchNormalization with `training_mode = 1`, or Dropout
    given a `training_mode` input (the cases set it to true)."""
    from onnx import helper  # noqa: PLC0415

    for node in model.graph.node:
        if node.domain == TRAINING_DOMAIN or node.op_type in TRAINING_OPS:
            return True
        if node.op_type == "BatchNormalization":
            for attr in node.attribute:
                if attr.name == "training_mode" and helper.get_attribute_value(attr):
                    return True
        if node.op_type == "Dropout" and len(node.input) >= 3 and node.input[2]:
            return True
    return False


def serialize(value, value_info) -> bytes:
    from onnx import TensorProto, numpy_helper  # noqa: PLC0415

    ty = value_info.type
    if ty.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name).SerializeToString()
    if ty.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name).SerializeToString()
    if ty.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, value_info.name).SerializeToString()


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: node_suite.py OUT", file=sys.stderr)
        return 2
    out = sys.argv[1]
    import onnx  # noqa: PLC0415
    from onnx.backend.test import loader  # noqa: PLC0415

    with warnings.catch_warnings():
        # The case scripts overflow casts and divide by zero on purpose.
        warnings.simplefilter("ignore")
        cases = loader.load_node_model_tests()
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    training = []
    for case in cases:
        directory = os.path.join(out, case.name)
        os.makedirs(directory)
        with open(os.path.join(directory, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        with open(os.path.join(directory, "data.json"), "w") as f:
            json.dump({"rtol": case.rtol, "atol": case.atol}, f)
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data_set = os.path.join(directory, f"test_data_set_{i}")
            os.makedirs(data_set)
            for j, value in enumerate(inputs):
                with open(os.path.join(data_set, f"input_{j}.pb"), "wb") as f:
                    f.write(serialize(value, graph.input[j]))
            for j, value in enumerate(outputs):
                with open(os.path.join(data_set, f"output_{j}.pb"), "wb") as f:
                    f.write(serialize(value, graph.output[j]))
        if is_training(case.model):
            training.append(case.name)
    with open(os.path.join(out, "TRAINING"), "w") as f:
        f.writelines(name + "\n" for name in sorted(training))
    with open(os.path.join(out, "ONNX_VERSION"), "w") as f:
        f.write(f"onnx {onnx.__version__} opset {onnx.defs.onnx_opset_version()}\n")
    print(f"{len(cases)} cases ({len(training)} training-only) in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
