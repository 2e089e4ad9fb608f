#!/usr/bin/env python3
"""Generates the hand-made ONNX test models of test/onnx.

models/<case>/: a model.onnx and test_data_set_0/{input,output}_N.pb, the
layout of the onnx package's backend test data, with outputs computed by
onnx's reference evaluator (onnx.reference.ReferenceEvaluator). They cover
what the pytorch-converted/pytorch-operator cases do not: shape
computations folded at import time, runtime gathers, strided slices,
newer opsets (LayerNormalization, Gelu, opset-18 reductions and pads),
auto_pad/ceil_mode windows, external data, ...

bad/<name>.onnx: models the importer must reject with a clear error.

Run from the repository root: python3 test/onnx/gen.py (needs the onnx
and numpy packages; the outputs are checked in).
"""

import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator


HERE = os.path.dirname(os.path.abspath(__file__))


MODELS = os.path.join(HERE, "models")


BAD = os.path.join(HERE, "bad")
rng = np.random.default_rng(20240611)


F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array)))


def randf(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape).astype(np.float32)


def save_case(name, nodes, inputs, outputs, feeds, initializers=(), opset=17, external=False, expected=None,
              evaluate=True):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tcc test/onnx/gen.py")
    model.ir_version = 8 if opset <= 21 else 10
    onnx.checker.check_model(model)
    directory = os.path.join(MODELS, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    try:
        if not evaluate:
            # Every output comes from `expected` (the evaluator does not
            # implement the attributes used).
            raise ValueError("not evaluated")
        reference = ReferenceEvaluator(model)
        results = reference.run(None, dict(zip([i.name for i in inputs], feeds)))
    except (ValueError, onnx.reference.op_run.RuntimeImplementationError):
        if expected is None:
            raise
        # An op or mode the reference evaluator lacks: `expected` gives
        # every output.
        results = [None] * len(outputs)
    if expected is not None:
        # Outputs where onnx's reference evaluator is wrong, computed here.
        for index, value in expected(*feeds).items():
            results[index] = value
    if external:
        onnx.save_model(model, os.path.join(directory, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    else:
        onnx.save_model(model, os.path.join(directory, "model.onnx"))
    for i, value in enumerate(feeds):
        tensor = numpy_helper.from_array(np.asarray(value), inputs[i].name)
        with open(os.path.join(directory, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    for i, value in enumerate(results):
        tensor = numpy_helper.from_array(np.asarray(value), outputs[i].name)
        with open(os.path.join(directory, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())


def softmax_coerced(x, axis, log=False):
    """Softmax before opset 13: over the input flattened to 2-D at `axis`."""
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return (np.log(y) if log else y).reshape(x.shape).astype(np.float32)


def lrn(x, size, alpha, beta, bias):
    """LRN over channels (onnx's reference loops over the batch instead)."""
    square_sum = np.zeros_like(x)
    for c in range(x.shape[1]):
        begin = max(0, c - (size - 1) // 2)
        end = min(x.shape[1], c + int(np.ceil((size - 1) / 2)) + 1)
        square_sum[:, c] = np.sum(x[:, begin:end] ** 2, axis=1)
    return (x / (bias + alpha / size * square_sum) ** beta).astype(np.float32)


def cases():
    # Shape computations exported graphs are full of, folded at import time.
    save_case(
        "shape_arithmetic",
        [
            helper.make_node("Shape", ["x"], ["s"]),
            const("i0", np.array(0, np.int64)),
            helper.make_node("Gather", ["s", "i0"], ["n"]),
            helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
            const("minus1", np.array([-1], np.int64)),
            helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
            helper.make_node("Reshape", ["x", "target"], ["flat"]),
            helper.make_node("Size", ["x"], ["size"]),
            helper.make_node("Cast", ["size"], ["sizef"], to=F),
            helper.make_node("Div", ["flat", "sizef"], ["y"]),
            helper.make_node("Shape", ["y"], ["ys"]),
            helper.make_node("ConstantOfShape", ["ys"], ["ones"], value=numpy_helper.from_array(np.array([2.0], np.float32))),
            helper.make_node("Mul", ["y", "ones"], ["z"]),
        ],
        [vi("x", F, [2, 3, 4])],
        [vi("z", F, [2, 12])],
        [randf(2, 3, 4)],
        [init("ax", np.array([0], np.int64))],
        opset=13,
    )
    # Gathers with indices known only at run time (negative ones too) and
    # with constant 2-D indices on axis 1.
    save_case(
        "gather_runtime",
        [
            helper.make_node("Gather", ["table", "idx"], ["rows"], axis=0),
            helper.make_node("Gather", ["x", "cols"], ["picked"], axis=1),
        ],
        [vi("table", F, [5, 4]), vi("idx", I64, [3]), vi("x", F, [3, 6, 2])],
        [vi("rows", F, [3, 4]), vi("picked", F, [3, 2, 2, 2])],
        [randf(5, 4), np.array([4, -1, 0], np.int64), randf(3, 6, 2)],
        [init("cols", np.array([[0, 5], [-2, 1]], np.int64))],
        opset=13,
    )
    # Slices with steps (positive, negative) and clamped bounds.
    save_case(
        "slice_steps",
        [
            helper.make_node("Slice", ["x", "s1", "e1", "a1", "st1"], ["y1"]),
            helper.make_node("Slice", ["x", "s2", "e2", "a2", "st2"], ["y2"]),
            helper.make_node("Slice", ["x", "s3", "e3"], ["y3"]),
        ],
        [vi("x", F, [4, 10, 3])],
        [vi("y1", F, [4, 3, 3]), vi("y2", F, [2, 10, 2]), vi("y3", F, [2, 10, 3])],
        [randf(4, 10, 3)],
        [
            init("s1", np.array([1], np.int64)), init("e1", np.array([100], np.int64)),
            init("a1", np.array([1], np.int64)), init("st1", np.array([3], np.int64)),
            init("s2", np.array([-1, 2], np.int64)), init("e2", np.array([-100, 0], np.int64)),
            init("a2", np.array([0, 2], np.int64)), init("st2", np.array([-2, -1], np.int64)),
            init("s3", np.array([1], np.int64)), init("e3", np.array([-1], np.int64)),
        ],
        opset=13,
    )
    # LayerNormalization (opset 17) and Gelu (opset 20) as tcc composites.
    save_case(
        "layernorm_gelu",
        [
            helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], axis=-1, epsilon=1e-5),
            helper.make_node("Gelu", ["ln"], ["y1"]),
            helper.make_node("LayerNormalization", ["x", "g2"], ["ln2"], axis=1),
            helper.make_node("Gelu", ["ln2"], ["y2"], approximate="tanh"),
        ],
        [vi("x", F, [2, 3, 8])],
        [vi("y1", F, [2, 3, 8]), vi("y2", F, [2, 3, 8])],
        [randf(2, 3, 8, low=-2, high=2)],
        [init("g", randf(8, low=0.5, high=1.5)), init("b", randf(8)), init("g2", randf(3, 8, low=0.5, high=1.5))],
        opset=20,
    )
    # Comparisons, logic and selects; bool outputs.
    save_case(
        "where_compare",
        [
            helper.make_node("Less", ["a", "b"], ["lt"]),
            helper.make_node("Greater", ["a", "zero"], ["gt"]),
            helper.make_node("And", ["lt", "gt"], ["both"]),
            helper.make_node("Not", ["both"], ["neither"]),
            helper.make_node("Xor", ["lt", "gt"], ["xor"]),
            helper.make_node("Where", ["both", "a", "b"], ["w"]),
            helper.make_node("Cast", ["xor"], ["xf"], to=F),
            helper.make_node("Add", ["w", "xf"], ["y"]),
            helper.make_node("LessOrEqual", ["a", "b"], ["le"]),
            helper.make_node("Equal", ["le", "lt"], ["eq"]),
        ],
        [vi("a", F, [3, 5]), vi("b", F, [5])],
        [vi("y", F, [3, 5]), vi("neither", TensorProto.BOOL, [3, 5]), vi("eq", TensorProto.BOOL, [3, 5])],
        [randf(3, 5), randf(5)],
        [init("zero", np.array(0.0, np.float32))],
        opset=13,
    )
    # Reductions with axes as inputs (opset 18) and ArgMax/ArgMin.
    save_case(
        "reductions",
        [
            helper.make_node("ReduceMax", ["x", "ax1"], ["mx"], keepdims=0),
            helper.make_node("ReduceMin", ["x", "ax02"], ["mn"]),
            helper.make_node("ReduceMean", ["x"], ["mean"], keepdims=0),
            helper.make_node("ReduceL2", ["x", "ax1"], ["l2"]),
            helper.make_node("ReduceLogSumExp", ["x", "ax2"], ["lse"], keepdims=0),
            helper.make_node("ReduceSumSquare", ["x", "ax02"], ["ss"], keepdims=0),
            helper.make_node("ArgMax", ["x"], ["am"], axis=2, keepdims=0),
            helper.make_node("ArgMin", ["x"], ["an"], axis=1),
        ],
        [vi("x", F, [2, 5, 6])],
        [vi("mx", F, [2, 6]), vi("mn", F, [1, 5, 1]), vi("mean", F, []), vi("l2", F, [2, 1, 6]), vi("lse", F, [2, 5]),
         vi("ss", F, [5]), vi("am", I64, [2, 5]), vi("an", I64, [2, 1, 6])],
        [randf(2, 5, 6)],
        [init("ax1", np.array([1], np.int64)), init("ax02", np.array([0, 2], np.int64)), init("ax2", np.array([-1], np.int64))],
        opset=18,
    )
    # Expand, Tile, batched and broadcast MatMul, Gemm variants.
    save_case(
        "matmul_expand",
        [
            helper.make_node("Expand", ["v", "shape"], ["e"]),
            helper.make_node("Tile", ["v", "reps"], ["t"]),
            helper.make_node("MatMul", ["a", "b"], ["ab"]),
            helper.make_node("MatMul", ["a", "w"], ["aw"]),
            helper.make_node("MatMul", ["vec", "w"], ["vw"]),
            helper.make_node("Gemm", ["m", "n", "c"], ["g"], alpha=0.5, beta=2.0, transA=1, transB=1),
        ],
        [vi("v", F, [3, 1]), vi("a", F, [2, 1, 3, 4]), vi("b", F, [5, 4, 2]), vi("vec", F, [4]), vi("m", F, [4, 3]), vi("n", F, [6, 4])],
        [vi("e", F, [2, 3, 4]), vi("t", F, [6, 2]), vi("ab", F, [2, 5, 3, 2]), vi("aw", F, [2, 1, 3, 7]), vi("vw", F, [7]),
         vi("g", F, [3, 6])],
        [randf(3, 1), randf(2, 1, 3, 4), randf(5, 4, 2), randf(4), randf(4, 3), randf(6, 4)],
        [init("shape", np.array([2, 1, 4], np.int64)), init("reps", np.array([2, 2], np.int64)), init("w", randf(4, 7)),
         init("c", randf(6))],
        opset=13,
    )
    # Windows: auto_pad, ceil_mode, count_include_pad, dilated conv.
    save_case(
        "windows",
        [
            helper.make_node("Conv", ["x", "w"], ["c1"], auto_pad="SAME_UPPER", strides=[2, 2]),
            helper.make_node("Conv", ["x", "w", "bias"], ["c2"], auto_pad="SAME_LOWER", dilations=[2, 1]),
            helper.make_node("MaxPool", ["x"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
            helper.make_node("AveragePool", ["x"], ["p2"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 0],
                             count_include_pad=1, ceil_mode=1),
            helper.make_node("AveragePool", ["x"], ["p3"], kernel_shape=[2, 2], auto_pad="SAME_UPPER"),
            helper.make_node("GlobalMaxPool", ["x"], ["p4"]),
        ],
        [vi("x", F, [1, 3, 7, 8])],
        [vi("c1", F, [1, 4, 4, 4]), vi("c2", F, [1, 4, 7, 8]), vi("p1", F, [1, 3, 3, 4]), vi("p2", F, [1, 3, 4, 5]),
         vi("p3", F, [1, 3, 7, 8]), vi("p4", F, [1, 3, 1, 1])],
        [randf(1, 3, 7, 8)],
        [init("w", randf(4, 3, 3, 3)), init("bias", randf(4))],
        opset=13,
    )
    # ConvTranspose with groups, dilation and output_shape; 1-D ConvTranspose.
    save_case(
        "conv_transpose",
        [
            # (onnx's reference handles grouped ConvTranspose only with one
            # channel per group and no bias.)
            helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=4, strides=[2, 3], pads=[1, 0, 0, 1]),
            helper.make_node("ConvTranspose", ["x", "wd", "b"], ["yb"], strides=[2, 2]),
            helper.make_node("ConvTranspose", ["x", "wd"], ["yd"], dilations=[2, 1], strides=[1, 2], pads=[1, 0, 2, 1]),
            helper.make_node("ConvTranspose", ["x1", "w1"], ["y1"], strides=[2], pads=[1, 0], output_padding=[1]),
        ],
        [vi("x", F, [1, 4, 4, 5]), vi("x1", F, [2, 3, 6])],
        [vi("y", F, [1, 4, 8, 13]), vi("yb", F, [1, 3, 9, 10]), vi("yd", F, [1, 3, 5, 9]), vi("y1", F, [2, 2, 13])],
        [randf(1, 4, 4, 5), randf(2, 3, 6)],
        [init("w", randf(4, 1, 3, 2)), init("b", randf(3)), init("wd", randf(4, 3, 3, 2)), init("w1", randf(3, 2, 3))],
        opset=13,
    )
    # Activations and elementwise math without TOSA counterparts.
    nodes = []
    outs = []
    for i, (op, attrs) in enumerate([
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("HardSwish", {}), ("Elu", {"alpha": 0.7}), ("Celu", {"alpha": 1.3}),
        ("Softplus", {}), ("Mish", {}), ("ThresholdedRelu", {"alpha": 0.2}), ("LeakyRelu", {"alpha": 1.5}),
        ("Sign", {}), ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Erf", {}), ("Reciprocal", {}), ("Relu", {}),
        ("Sin", {}), ("Cos", {}), ("Selu", {}),
    ]):
        nodes.append(helper.make_node(op, ["x"], [f"y{i}"], **attrs))
        outs.append(vi(f"y{i}", F, [4, 6]))
    nodes.append(helper.make_node("Sqrt", ["xp"], ["sq"]))
    outs.append(vi("sq", F, [4, 6]))
    nodes.append(helper.make_node("Pow", ["xp", "half"], ["pw"]))
    outs.append(vi("pw", F, [4, 6]))
    x = randf(4, 6, low=-3, high=3)
    x[0, :3] = [0.5, -1.5, 2.5]  # round-half-even cases
    save_case("activations", nodes, [vi("x", F, [4, 6]), vi("xp", F, [4, 6])], outs, [x, randf(4, 6, low=0.1, high=4)],
              [init("half", np.array(0.5, np.float32))], opset=18)
    # Normalizations with parameters known only at run time.
    save_case(
        "norms",
        [
            helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], epsilon=1e-3),
            helper.make_node("InstanceNormalization", ["x", "s", "b"], ["inorm"]),
            helper.make_node("LRN", ["x"], ["lrn"], size=3, alpha=0.01, beta=0.6, bias=1.5),
        ],
        [vi("x", F, [2, 4, 3, 5]), vi("s", F, [4]), vi("b", F, [4]), vi("m", F, [4]), vi("v", F, [4])],
        [vi("bn", F, [2, 4, 3, 5]), vi("inorm", F, [2, 4, 3, 5]), vi("lrn", F, [2, 4, 3, 5])],
        [randf(2, 4, 3, 5), randf(4), randf(4), randf(4), randf(4, low=0.5, high=2)],
        opset=15,
        expected=lambda x, *_: {2: lrn(x, 3, 0.01, 0.6, 1.5)},
    )
    # Pad modes (opset 19: axes input, wrap), negative pads.
    save_case(
        "pad_modes",
        [
            helper.make_node("Pad", ["x", "p1", "v"], ["c"], mode="constant"),
            helper.make_node("Pad", ["x", "p2", "", "axes"], ["r"], mode="reflect"),
            helper.make_node("Pad", ["x", "p2", "", "axes"], ["e"], mode="edge"),
            helper.make_node("Pad", ["x", "p2", "", "axes"], ["w"], mode="wrap"),
        ],
        [vi("x", F, [2, 4, 5])],
        [vi("c", F, [3, 5, 8]), vi("r", F, [2, 7, 6]), vi("e", F, [2, 7, 6]), vi("w", F, [2, 7, 6])],
        [randf(2, 4, 5)],
        [init("p1", np.array([1, 0, 2, 0, 1, 1], np.int64)), init("v", np.array(0.25, np.float32)),
         init("p2", np.array([2, 0, 1, 1], np.int64)), init("axes", np.array([1, -1], np.int64))],
        opset=19,
    )
    # Split/Squeeze/Unsqueeze/Flatten/Transpose/DepthToSpace/SpaceToDepth.
    save_case(
        "data_movement",
        [
            helper.make_node("Split", ["x"], ["s0", "s1", "s2"], axis=1, num_outputs=3),
            helper.make_node("Unsqueeze", ["s2", "uax"], ["u"]),
            helper.make_node("Squeeze", ["u", "uax"], ["q"]),
            helper.make_node("Flatten", ["s0"], ["f"], axis=0),
            helper.make_node("Transpose", ["s1"], ["t"]),
            helper.make_node("DepthToSpace", ["d"], ["dcr"], blocksize=2),
            helper.make_node("DepthToSpace", ["d"], ["crd"], blocksize=2, mode="CRD"),
            helper.make_node("SpaceToDepth", ["d"], ["std"], blocksize=3),
            helper.make_node("Concat", ["q", "s0"], ["cat"], axis=1),
        ],
        [vi("x", F, [2, 7, 3]), vi("d", F, [1, 8, 3, 3])],
        [vi("q", F, [2, 1, 3]), vi("f", F, [1, 18]), vi("t", F, [3, 3, 2]), vi("dcr", F, [1, 2, 6, 6]),
         vi("crd", F, [1, 2, 6, 6]), vi("std", F, [1, 72, 1, 1]), vi("s1", F, [2, 3, 3]), vi("cat", F, [2, 4, 3])],
        [randf(2, 7, 3), randf(1, 8, 3, 3)],
        [init("uax", np.array([0, -1], np.int64))],
        opset=18,
    )
    # Integer arithmetic, casts that truncate, Clip with run-time bounds.
    save_case(
        "int_cast_clip",
        [
            helper.make_node("Cast", ["x"], ["xi"], to=I64),
            helper.make_node("Div", ["xi", "three"], ["q"]),
            helper.make_node("Mul", ["q", "xi"], ["qm"]),
            helper.make_node("Sub", ["qm", "n"], ["d"]),
            helper.make_node("Clip", ["x", "lo", "hi"], ["c"]),
            helper.make_node("Clip", ["x", "", "hi"], ["c2"]),
            helper.make_node("Max", ["x", "lo", "hi"], ["mx"]),
            helper.make_node("Mean", ["x", "hi"], ["me"]),
        ],
        [vi("x", F, [3, 4]), vi("n", I64, [4]), vi("lo", F, []), vi("hi", F, [])],
        [vi("d", I64, [3, 4]), vi("c", F, [3, 4]), vi("c2", F, [3, 4]), vi("mx", F, [3, 4]), vi("me", F, [3, 4])],
        [randf(3, 4, low=-20, high=20), np.array([5, -7, 0, 11], np.int64), np.array(-4.0, np.float32), np.array(6.5, np.float32)],
        [init("three", np.array(3, np.int64))],
        opset=13,
    )
    # Softmax semantics across opsets: opset 11 coerces to 2-D at the axis.
    save_case(
        "softmax_opset11",
        [
            helper.make_node("Softmax", ["x"], ["s"], axis=1),
            helper.make_node("LogSoftmax", ["x"], ["l"], axis=0),
        ],
        [vi("x", F, [2, 3, 4])],
        [vi("s", F, [2, 3, 4]), vi("l", F, [2, 3, 4])],
        [randf(2, 3, 4, low=-3, high=3)],
        opset=11,
        expected=lambda x: {0: softmax_coerced(x, 1), 1: softmax_coerced(x, 0, log=True)},
    )
    save_case(
        "softmax_opset13",
        [helper.make_node("Softmax", ["x"], ["s"], axis=1), helper.make_node("LogSoftmax", ["x"], ["l"], axis=0)],
        [vi("x", F, [2, 3, 4])],
        [vi("s", F, [2, 3, 4]), vi("l", F, [2, 3, 4])],
        [randf(2, 3, 4, low=-3, high=3)],
        opset=13,
    )
    # Weights in an external data file (relative to the model).
    save_case(
        "external_data",
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        [vi("x", F, [3, 16])],
        [vi("y", F, [3, 8])],
        [randf(3, 16)],
        [init("w", randf(16, 8)), init("b", randf(8))],
        opset=13,
        external=True,
    )

    # Ops docs/onnx.md lists that no other case covers: Log, Softsign,
    # GreaterOrEqual, Or, CastLike, GlobalAveragePool, ReduceProd, ReduceL1,
    # Identity, Dropout (inference: identity) and Range (folded at import).
    # Its own generator, so the cases after it keep their data.
    own = np.random.default_rng(16)

    def ownf(*shape, low=-1.0, high=1.0):
        return own.uniform(low, high, size=shape).astype(np.float32)

    save_case(
        "listed_ops",
        [
            helper.make_node("Log", ["xp"], ["log"]),
            helper.make_node("Softsign", ["x"], ["softsign"]),
            helper.make_node("GreaterOrEqual", ["x", "y"], ["ge"]),
            helper.make_node("Less", ["x", "y"], ["lt"]),
            helper.make_node("Not", ["ge"], ["nge"]),
            helper.make_node("Or", ["nge", "lt"], ["or"]),
            helper.make_node("Mul", ["x", "eight"], ["x8"]),
            helper.make_node("CastLike", ["x8", "like"], ["castlike"]),
            helper.make_node("GlobalAveragePool", ["img"], ["gap"]),
            helper.make_node("ReduceProd", ["xp", "ax1"], ["prod"]),
            helper.make_node("ReduceL1", ["x", "ax0"], ["l1"], keepdims=0),
            helper.make_node("Identity", ["x"], ["xid"]),
            helper.make_node("Dropout", ["xid"], ["drop"]),
            helper.make_node("Range", ["start", "limit", "delta"], ["range"]),
            helper.make_node("Add", ["range", "v"], ["ranged"]),
        ],
        [vi("x", F, [3, 5]), vi("y", F, [3, 5]), vi("xp", F, [3, 5]), vi("img", F, [2, 3, 4, 5]), vi("v", F, [4])],
        [vi("log", F, [3, 5]), vi("softsign", F, [3, 5]), vi("ge", TensorProto.BOOL, [3, 5]),
         vi("or", TensorProto.BOOL, [3, 5]), vi("castlike", TensorProto.INT32, [3, 5]), vi("gap", F, [2, 3, 1, 1]),
         vi("prod", F, [3, 1]), vi("l1", F, [5]), vi("drop", F, [3, 5]), vi("ranged", F, [4])],
        [ownf(3, 5), np.round(ownf(3, 5), 1), ownf(3, 5, low=0.2, high=3.0), ownf(2, 3, 4, 5), ownf(4)],
        [init("eight", np.array(8.0, np.float32)), init("like", np.array([0], np.int32)),
         init("ax1", np.array([1], np.int64)), init("ax0", np.array([0], np.int64)),
         init("start", np.array(0.0, np.float32)), init("limit", np.array(6.0, np.float32)),
         init("delta", np.array(1.5, np.float32))],
        opset=18,
    )


def quantized_cases():
    """Quantized operators (QDQ form, QLinear*, *Integer), with their own
    random stream so that the cases above keep their data."""
    q = np.random.default_rng(20261123)
    u8, s8, i32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32

    def scalar(name, value, dtype):
        return init(name, np.array(value, dtype))

    x = (q.standard_normal((1, 4, 6, 6)) * 2).astype(np.float32)
    w = q.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8)
    w_scale = (q.random(8) * 0.01 + 0.002).astype(np.float32)
    # A QDQ convolution as onnxruntime's quantize_static writes it: uint8
    # activations, per-channel int8 weights behind DequantizeLinear, an
    # int32 bias, and an int8 output quantized per tensor.
    save_case(
        "quant_qdq",
        [
            helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
            helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
            helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
            helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
            helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
            helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
        ],
        [vi("x", F, [1, 4, 6, 6])],
        [vi("y", F, [1, 8, 6, 6])],
        [x],
        [scalar("xs", 0.02, np.float32), scalar("xz", 128, np.uint8), init("w", w), init("ws", w_scale),
         init("wz", np.zeros(8, np.int8)), init("b", q.integers(-3000, 3000, 8).astype(np.int32)),
         init("bs", (0.02 * w_scale).astype(np.float32)), scalar("ys", 0.03, np.float32),
         scalar("yz", -5, np.int8)],
        opset=19,
    )
    a = (q.standard_normal((3, 10)) * 2).astype(np.float32)
    m = q.integers(-100, 100, (10, 5)).astype(np.int8)
    save_case(
        "quant_qlinear",
        [
            helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
            helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "cs", "cz", "b"], ["cq"],
                             pads=[1, 1, 1, 1], strides=[2, 2]),
            helper.make_node("DequantizeLinear", ["cq", "cs", "cz"], ["conv"]),
            helper.make_node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
            helper.make_node("QLinearMatMul", ["aq", "as", "az", "m", "ms", "mz", "os", "oz"], ["mq"]),
            helper.make_node("DequantizeLinear", ["mq", "os", "oz"], ["matmul"]),
        ],
        [vi("x", F, [1, 4, 6, 6]), vi("a", F, [3, 10])],
        [vi("conv", F, [1, 8, 3, 3]), vi("matmul", F, [3, 5])],
        [x, a],
        [scalar("xs", 0.02, np.float32), scalar("xz", 128, np.uint8), init("w", w), init("ws", w_scale),
         init("wz", np.zeros(8, np.int8)), init("b", q.integers(-3000, 3000, 8).astype(np.int32)),
         scalar("cs", 0.05, np.float32), scalar("cz", 120, np.uint8),
         scalar("as", 0.03, np.float32), scalar("az", 3, np.int8), init("m", m),
         scalar("ms", 0.01, np.float32), scalar("mz", 2, np.int8), scalar("os", 0.04, np.float32),
         scalar("oz", -1, np.int8)],
        opset=19,
    )
    save_case(
        "quant_integer",
        [
            helper.make_node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
            helper.make_node("MatMulInteger", ["aq", "m", "az", "mz"], ["matmul"]),
            helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
            helper.make_node("ConvInteger", ["xq", "w", "xz"], ["conv"], pads=[1, 1, 1, 1]),
        ],
        [vi("a", F, [3, 10]), vi("x", F, [1, 4, 6, 6])],
        [vi("matmul", i32, [3, 5]), vi("conv", i32, [1, 8, 6, 6])],
        [a, x],
        [scalar("as", 0.03, np.float32), scalar("az", 130, np.uint8), init("m", m), scalar("mz", 2, np.int8),
         scalar("xs", 0.02, np.float32), scalar("xz", -3, np.int8), init("w", w)],
        opset=19,
    )


def ml_unsupported():
    """An ai.onnx.ml op tcc does not import, in a model importing opset 3
    of that domain (its errors name that opset, not the default one's)."""
    os.makedirs(BAD, exist_ok=True)
    node = helper.make_node("SVMRegressor", ["x"], ["y"], domain="ai.onnx.ml", name="svm",
                            coefficients=[1.0, 2.0], support_vectors=[0.5, 0.25, 1.0, -1.0], n_supports=2)
    graph = helper.make_graph([node], "ml_unsupported", [vi("x", F, [1, 2])], [vi("y", F, [1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    onnx.save_model(model, os.path.join(BAD, "ml_unsupported.onnx"))


def bad_models():
    os.makedirs(BAD, exist_ok=True)

    def save(name, nodes, inputs, outputs, initializers=(), opset=13, domains=()):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
        opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
        model = helper.make_model(graph, opset_imports=opsets)
        model.ir_version = 8
        onnx.save_model(model, os.path.join(BAD, name + ".onnx"))
        return model

    save("unsupported_op", [helper.make_node("Relu", ["x"], ["r"], name="first"),
                            helper.make_node("ImageDecoder", ["r"], ["y"], name="the_decoder")],
         [vi("x", TensorProto.UINT8, [16])], [vi("y", TensorProto.UINT8, [4, 4, 3])], opset=20)
    save("dynamic_shape", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, ["N", 3])], [vi("y", F, ["N", 3])])
    ml_unsupported()
    save("unsupported_dtype", [helper.make_node("Identity", ["x"], ["y"])], [vi("x", TensorProto.STRING, [4])],
         [vi("y", TensorProto.STRING, [4])])
    save("runtime_shape", [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_by_input")],
         [vi("x", F, [2, 3]), vi("shape", I64, [2])], [vi("y", F, [3, 2])])
    save("custom_domain", [helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft", name="fused")],
         [vi("x", F, [2, 2])], [vi("y", F, [2, 2])], domains=["com.microsoft"])
    save("invalid_dim", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [-5, 3])], [vi("y", F, [-5, 3])])
    # Empty constants reaching the graph as tensors (TOSA has no empty
    # tensors): refused with the node that uses them.
    save("empty_constant", [helper.make_node("MatMul", ["a", "b"], ["t"], name="empty_product"),
                            helper.make_node("Add", ["x", "t"], ["y"])],
         [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
         initializers=[init("a", np.zeros((2, 0), np.float32)), init("b", np.zeros((0, 3), np.float32))])
    save("opset_too_new", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])], opset=29)
    # An Attention cache that does not match its new keys and values but
    # along the sequence (heads 2 against 16): refused with the shapes.
    save("attention_past_mismatch",
         [helper.make_node("Attention", ["q", "k", "v", "", "past_k", "past_v"], ["y", "present_k", "present_v"],
                           name="cached_attention")],
         [vi("q", F, [2, 2, 3, 4]), vi("k", F, [2, 2, 3, 4]), vi("v", F, [2, 16, 3, 4]),
          vi("past_k", F, [2, 2, 2, 4]), vi("past_v", F, [2, 2, 2, 4])],
         [vi("y", F, [2, 2, 3, 4]), vi("present_k", F, [2, 2, 5, 4]), vi("present_v", F, [2, 2, 5, 4])], opset=23)
    save("nonzero_runtime", [helper.make_node("NonZero", ["x"], ["y"], name="nonzero_of_input")],
         [vi("x", F, [2, 3])], [vi("y", I64, [2, None])])
    save("topk_runtime_k", [helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk_by_input")],
         [vi("x", F, [2, 5]), vi("k", I64, [1])], [vi("v", F, [2, None]), vi("i", I64, [2, None])])
    f32_scale = init("s", np.array(0.1, np.float32))
    save("quant_runtime_scale", [helper.make_node("QuantizeLinear", ["x", "scale"], ["q"], name="quantize"),
                                 helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
         [vi("x", F, [4]), vi("scale", F, [])], [vi("y", F, [4])], initializers=[f32_scale])
    save("quant_zero_scale", [helper.make_node("QuantizeLinear", ["x", "z"], ["q"], name="quantize"),
                              helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
         [vi("x", F, [4])], [vi("y", F, [4])], initializers=[f32_scale, init("z", np.array(0.0, np.float32))])
    save("conv_integer_overflow", [helper.make_node("QuantizeLinear", ["x", "s"], ["q"]),
                                   helper.make_node("ConvInteger", ["q", "w"], ["y"], name="wide")],
         [vi("x", F, [1, 512, 3, 3])], [vi("y", TensorProto.INT32, [1, 1, 1, 1])],
         initializers=[f32_scale, init("w", np.full((1, 512, 3, 3), -128, np.int8))])
    # Control flow and sequences tcc cannot unroll or keep inside the graph.
    branch = helper.make_graph([helper.make_node("Neg", ["x"], ["n"])], "branch", [], [vi("n", F, [2])])
    save("if_runtime_condition", [helper.make_node("If", ["c"], ["y"], name="branchy", then_branch=branch,
                                                   else_branch=branch)],
         [vi("c", TensorProto.BOOL, []), vi("x", F, [2])], [vi("y", F, [2])])
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Neg", ["v"], ["v_out"])], "body",
                             [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("v", F, [2])],
                             [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2])])
    save("loop_runtime_trip_count", [helper.make_node("Loop", ["m", "", "x"], ["y"], name="looper", body=body)],
         [vi("m", I64, []), vi("x", F, [2])], [vi("y", F, [2])])
    cond_body = helper.make_graph([helper.make_node("ReduceMax", ["v_out"], ["m"], keepdims=0),
                                   helper.make_node("Less", ["m", "ten"], ["cond_out"]),
                                   helper.make_node("Add", ["v", "v"], ["v_out"])], "cond_body",
                                  [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("v", F, [2])],
                                  [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2])])
    save("loop_runtime_condition", [helper.make_node("Loop", ["", "t", "x"], ["y"], name="while_small",
                                                     body=cond_body)],
         [vi("x", F, [2])], [vi("y", F, [2])],
         initializers=[init("t", np.array(True)), init("ten", np.array(10.0, np.float32))])
    # A sequence output is returned as its elements (s[0], s[1]): no
    # longer bad, kept as the importer test's model of that.
    save("sequence_output", [helper.make_node("SplitToSequence", ["x"], ["s"], name="splitter")],
         [vi("x", F, [2, 3])], [helper.make_tensor_sequence_value_info("s", F, None)])
    save("sequence_input", [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
         [helper.make_tensor_sequence_value_info("s", F, None)], [vi("y", F, None)])
    save("random_op", [helper.make_node("RandomNormalLike", ["x"], ["y"], name="noise", seed=1.0)],
         [vi("x", F, [2])], [vi("y", F, [2])])
    save("string_op", [helper.make_node("StringNormalizer", ["x"], ["y"], name="normalize")],
         [vi("x", F, [2])], [vi("y", F, [2])])
    graph = helper.make_graph([helper.make_node("Adagrad", ["r", "t", "x", "g", "h"], ["x2", "h2"],
                                                domain="ai.onnx.preview.training", name="update")], "training",
                              [vi(n, F, [2]) for n in ["r", "t", "x", "g", "h"]], [vi("x2", F, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("ai.onnx.preview.training", 1)])
    model.ir_version = 8
    onnx.save_model(model, os.path.join(BAD, "training_op.onnx"))
    good = save("good", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])],
                initializers=[init("unused", randf(100))])
    data = good.SerializeToString()
    with open(os.path.join(BAD, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(BAD, "not_onnx.onnx"), "w") as f:
        f.write("func.func @f() { return }\n")
    os.remove(os.path.join(BAD, "good.onnx"))


def feature_models():
    """extra/: models for the importer's options (compiler/tests/features.rs)."""
    extra = os.path.join(HERE, "extra")
    os.makedirs(extra, exist_ok=True)
    # float64 throughout: rejected by default, float32 with --demote-f64.
    d = TensorProto.DOUBLE
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["y"])],
        "float64_add",
        [vi("x", d, [4])],
        [vi("y", d, [4])],
        initializer=[init("c", np.array([0.5, 1.25, -2.0, 1e-3], np.float64))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tcc test/onnx/gen.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save_model(model, os.path.join(extra, "float64_add.onnx"))


def index_cases():
    """Indexed reads and writes, position-dependent ops, the elementwise ops
    TOSA lacks, and the data-dependent ops on constants (own generator, so
    the other cases' inputs do not change)."""
    own = np.random.default_rng(32)
    I32 = TensorProto.INT32
    B = TensorProto.BOOL

    def ownf(*shape, low=-1.0, high=1.0):
        return own.uniform(low, high, size=shape).astype(np.float32)

    # Gathers and scatters at run-time indices (negative ones too), with a
    # constant gathered buffer as BERT's token-type ids.
    save_case(
        "gather_scatter",
        [
            helper.make_node("GatherElements", ["x", "ei"], ["ge"], axis=1),
            helper.make_node("GatherElements", ["buffer", "pos"], ["tokens"], axis=1),
            helper.make_node("GatherND", ["x3", "ni"], ["gnd"], batch_dims=1),
            helper.make_node("GatherND", ["x", "ni2"], ["gnd2"]),
            helper.make_node("ScatterElements", ["x", "si", "su"], ["se_add"], axis=0, reduction="add"),
            helper.make_node("ScatterElements", ["x", "sj", "su2"], ["se_none"], axis=-1),
            helper.make_node("ScatterElements", ["x", "si", "su"], ["se_max"], axis=0, reduction="max"),
            helper.make_node("ScatterND", ["x3", "ndi", "ndu"], ["snd_mul"], reduction="mul"),
            helper.make_node("ScatterND", ["x3", "ndi1", "ndu1"], ["snd_min"], reduction="min"),
            helper.make_node("ScatterND", ["x", "ndi2", "ndu2"], ["snd_none"]),
        ],
        [vi("x", F, [4, 6]), vi("ei", I64, [4, 3]), vi("pos", I64, [1, 5]), vi("x3", F, [2, 3, 4]),
         vi("ni", I64, [2, 2, 1]), vi("ni2", I64, [3, 2]), vi("si", I64, [3, 5]), vi("sj", I32, [2, 3]),
         vi("su", F, [3, 5]), vi("su2", F, [2, 3]), vi("ndi", I64, [3, 2]), vi("ndu", F, [3, 4]), vi("ndi1", I64, [2, 2, 3]),
         vi("ndu1", F, [2, 2]), vi("ndi2", I64, [2, 1]), vi("ndu2", F, [2, 6])],
        [vi("ge", F, [4, 3]), vi("tokens", I64, [1, 5]), vi("gnd", F, [2, 2, 4]), vi("gnd2", F, [3]),
         vi("se_add", F, [4, 6]), vi("se_none", F, [4, 6]), vi("se_max", F, [4, 6]), vi("snd_mul", F, [2, 3, 4]),
         vi("snd_min", F, [2, 3, 4]), vi("snd_none", F, [4, 6])],
        [ownf(4, 6), own.integers(-6, 6, size=(4, 3)), np.array([[0, 1, 2, 3, 4]], np.int64), ownf(2, 3, 4),
         np.array([[[2], [-1]], [[0], [1]]], np.int64), np.array([[0, 5], [-1, -6], [2, 3]], np.int64),
         own.integers(-4, 4, size=(3, 5)), np.array([[5, 0, -2], [1, 2, 3]], np.int32), ownf(3, 5), ownf(2, 3),
         np.array([[0, 1], [1, -1], [0, 1]], np.int64), ownf(3, 4, low=0.5, high=2.0),
         np.array([[[0, 0, 0], [1, 2, 3]], [[0, 0, 0], [-1, -1, -1]]], np.int64), ownf(2, 2),
         np.array([[3], [0]], np.int64), ownf(2, 6)],
        [init("buffer", np.array([[0, 0, 1, 1, 2, 0, 1, 2]], np.int64))],
        opset=18,
    )

    # Position-dependent ops: OneHot, Trilu, CumSum, TopK (ties, both
    # orders), Hardmax, ArgMax/ArgMin select_last_index.
    ties = np.round(ownf(3, 7) * 2) / 2
    save_case(
        "index_ops",
        [
            helper.make_node("OneHot", ["labels", "depth", "values"], ["onehot"], axis=1),
            helper.make_node("Trilu", ["x", "k"], ["tril"], upper=0),
            helper.make_node("Trilu", ["x", "kr"], ["triu"]),
            helper.make_node("CumSum", ["x", "axis1"], ["cumsum"]),
            helper.make_node("CumSum", ["x", "axis0"], ["cumsum_rev_excl"], exclusive=1, reverse=1),
            helper.make_node("CumSum", ["ints", "axis1"], ["cumsum_int"], exclusive=1),
            helper.make_node("TopK", ["ties", "k3"], ["top_v", "top_i"]),
            helper.make_node("TopK", ["ties", "k2"], ["low_v", "low_i"], axis=0, largest=0),
            helper.make_node("TopK", ["ints", "k2"], ["topint_v", "topint_i"]),
            helper.make_node("Hardmax", ["ties"], ["hardmax"], axis=0),
            helper.make_node("ArgMax", ["ties"], ["argmax_last"], axis=1, select_last_index=1),
            helper.make_node("ArgMin", ["ties"], ["argmin_last"], axis=0, keepdims=0, select_last_index=1),
        ],
        [vi("labels", I64, [2, 3]), vi("values", F, [2]), vi("x", F, [3, 4, 5]), vi("kr", I64, []),
         vi("ties", F, [3, 7]), vi("ints", I32, [3, 7])],
        [vi("onehot", F, [2, 5, 3]), vi("tril", F, [3, 4, 5]), vi("triu", F, [3, 4, 5]), vi("cumsum", F, [3, 4, 5]),
         vi("cumsum_rev_excl", F, [3, 4, 5]), vi("cumsum_int", I32, [3, 7]), vi("top_v", F, [3, 3]),
         vi("top_i", I64, [3, 3]), vi("low_v", F, [2, 7]), vi("low_i", I64, [2, 7]), vi("topint_v", I32, [3, 2]),
         vi("topint_i", I64, [3, 2]), vi("hardmax", F, [3, 7]), vi("argmax_last", I64, [3, 1]),
         vi("argmin_last", I64, [7])],
        [np.array([[0, 4, -1], [7, 2, -5]], np.int64), np.array([-0.5, 3.0], np.float32), ownf(3, 4, 5),
         np.array(-1, np.int64), ties, own.integers(-3, 3, size=(3, 7)).astype(np.int32)],
        [init("depth", np.array(5, np.int64)), init("k", np.array(1, np.int64)),
         init("axis1", np.array(1, np.int64)), init("axis0", np.array(0, np.int32)),
         init("k3", np.array([3], np.int64)), init("k2", np.array([2], np.int64))],
        opset=18,
    )

    # Elementwise ops without a TOSA form.
    special = np.array([[1.5, -2.0, np.inf, -np.inf, np.nan, 0.0]], np.float32)
    save_case(
        "numeric_ops",
        [
            helper.make_node("Mod", ["a", "b"], ["mod_int"]),
            helper.make_node("Mod", ["a", "b"], ["fmod_int"], fmod=1),
            helper.make_node("Mod", ["x", "y"], ["fmod"], fmod=1),
            helper.make_node("Mod", ["x", "y"], ["mod_float"]),
            helper.make_node("Tan", ["x"], ["tan"]),
            helper.make_node("Asin", ["u"], ["asin"]),
            helper.make_node("Acos", ["u"], ["acos"]),
            helper.make_node("Atan", ["x"], ["atan"]),
            helper.make_node("Sinh", ["x"], ["sinh"]),
            helper.make_node("Cosh", ["x"], ["cosh"]),
            helper.make_node("Asinh", ["x"], ["asinh"]),
            helper.make_node("Acosh", ["big"], ["acosh"]),
            helper.make_node("Atanh", ["u"], ["atanh"]),
            helper.make_node("IsNaN", ["special"], ["isnan"]),
            helper.make_node("IsInf", ["special"], ["isinf"]),
            helper.make_node("IsInf", ["special"], ["isneginf"], detect_positive=0),
            helper.make_node("Shrink", ["x"], ["shrink"], lambd=0.8, bias=0.3),
        ],
        [vi("a", I64, [2, 4]), vi("b", I64, [4]), vi("x", F, [2, 4]), vi("y", F, [2, 4]), vi("u", F, [2, 4]),
         vi("big", F, [2, 4]), vi("special", F, [1, 6])],
        [vi("mod_int", I64, [2, 4]), vi("fmod_int", I64, [2, 4]), vi("fmod", F, [2, 4]), vi("mod_float", F, [2, 4]),
         vi("tan", F, [2, 4]), vi("asin", F, [2, 4]), vi("acos", F, [2, 4]), vi("atan", F, [2, 4]),
         vi("sinh", F, [2, 4]), vi("cosh", F, [2, 4]), vi("asinh", F, [2, 4]), vi("acosh", F, [2, 4]),
         vi("atanh", F, [2, 4]), vi("isnan", B, [1, 6]), vi("isinf", B, [1, 6]), vi("isneginf", B, [1, 6]),
         vi("shrink", F, [2, 4])],
        [np.array([[7, -7, 7, -7], [0, 5, -9, 12]], np.int64), np.array([3, 3, -3, -4], np.int64),
         ownf(2, 4, low=-3, high=3), np.array([[1.5, -1.5, 0.7, -2.0], [0.9, 1.1, -0.4, 2.5]], np.float32),
         ownf(2, 4, low=-0.9, high=0.9), ownf(2, 4, low=1.0, high=4.0), special],
        opset=18,
    )

    # Compress, NonZero and Unique on constants (evaluated at import time),
    # feeding computations on a run-time input.
    save_case(
        "data_dependent_constants",
        [
            helper.make_node("NonZero", ["mask"], ["nz"]),
            helper.make_node("Cast", ["nz"], ["nzf"], to=F),
            helper.make_node("Add", ["x23", "nzf"], ["nonzero_plus"]),
            helper.make_node("Compress", ["table", "keep"], ["kept"], axis=1),
            helper.make_node("MatMul", ["x23", "kept"], ["compressed_mm"]),
            helper.make_node("Unique", ["labels"], ["uy", "ui", "uinv", "uc"]),
            helper.make_node("Gather", ["v", "uinv"], ["by_inverse"]),
            helper.make_node("Cast", ["uc"], ["ucf"], to=F),
            helper.make_node("Mul", ["uy", "ucf"], ["weighted"]),
            # All four outputs: with only Y, onnx's reference evaluator ignores
            # sorted = 0.
            helper.make_node("Unique", ["rows"], ["urows", "urows_i", "urows_inv", "urows_c"], axis=0, sorted=0),
            helper.make_node("Add", ["urows", "x23"], ["rows_plus"]),
            # GatherElements of constants folds too.
            helper.make_node("GatherElements", ["table", "gidx"], ["gathered"], axis=0),
            helper.make_node("Add", ["gathered", "v"], ["gathered_plus"]),
        ],
        [vi("x23", F, [2, 3]), vi("v", F, [4])],
        [vi("nonzero_plus", F, [2, 3]), vi("compressed_mm", F, [2, 2]), vi("by_inverse", F, [7]),
         vi("weighted", F, [4]), vi("rows_plus", F, [2, 3]), vi("gathered_plus", F, [2, 4])],
        [ownf(2, 3), ownf(4)],
        [init("mask", np.array([[0, 3, 0], [1, 0, 2]], np.int64)),
         init("table", ownf(3, 4)), init("keep", np.array([0, 1, 0, 1], bool)),
         init("labels", np.array([2.5, -1.0, 2.5, 7.0, 0.0, -1.0, 2.5], np.float32)),
         init("rows", np.array([[1, 2, 3], [1, 2, 3], [0, 0, 1], [0, 0, 1]], np.float32)),
         init("gidx", np.array([[2, 0, -1, 1], [0, -3, 2, 2]], np.int64))],
        opset=18,
    )


def spatial_cases():
    """Resize/Upsample, Einsum, GridSample/AffineGrid, the extra
    normalizations, Attention and the pooling/cropping ops (own random
    stream, so the cases above keep their data)."""
    own = np.random.default_rng(20261128)

    def ownf(*shape, low=-1.0, high=1.0):
        return own.uniform(low, high, size=shape).astype(np.float32)

    def floats(name, values):
        return init(name, np.array(values, np.float32))

    def ints(name, values):
        return init(name, np.array(values, np.int64))

    empty = init("none", np.array([], np.float32))
    # Resize: every mode, transform and nearest rounding once.
    resizes = [
        # (output, attributes, roi, scales, sizes, shape)
        ("up_nearest", dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
         None, [1, 1, 2, 2], None, [2, 3, 10, 12]),
        ("up_nearest_ceil", dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
         None, [1, 1, 1.7, 2.3], None, [2, 3, 8, 13]),
        ("down_nearest", dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="ceil"),
         None, None, [2, 3, 3, 4], [2, 3, 3, 4]),
        ("up_linear", dict(mode="linear"), None, [1, 1, 2, 1.5], None, [2, 3, 10, 9]),
        ("down_linear_pt", dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
         None, None, [2, 3, 3, 1], [2, 3, 3, 1]),
        ("up_linear_align", dict(mode="linear", coordinate_transformation_mode="align_corners"),
         None, None, [2, 3, 11, 7], [2, 3, 11, 7]),
        ("up_cubic", dict(mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1), None, [1, 1, 1.5, 2], None, [2, 3, 7, 12]),
        ("up_cubic_asym", dict(mode="cubic", coordinate_transformation_mode="asymmetric"),
         None, [1, 1, 2, 2], None, [2, 3, 10, 12]),
        ("down_linear_aa", dict(mode="linear", antialias=1), None, [1, 1, 0.4, 0.6], None, [2, 3, 2, 3]),
        ("down_cubic_aa", dict(mode="cubic", antialias=1, coordinate_transformation_mode="half_pixel_symmetric"),
         None, None, [2, 3, 4, 3], [2, 3, 4, 3]),
        ("crop", dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0,
                      axes=[3, 2]),
         [-0.2, 0.1, 1.3, 0.8], None, [5, 6], [2, 3, 6, 5]),
        ("not_larger", dict(mode="linear", keep_aspect_ratio_policy="not_larger", axes=[2, 3]),
         None, None, [7, 20], [2, 3, 7, 8]),
        ("not_smaller", dict(mode="nearest", keep_aspect_ratio_policy="not_smaller", axes=[2, 3]),
         None, None, [7, 20], [2, 3, 17, 20]),
    ]
    nodes, outs, inits = [], [], [empty]
    for name, attrs, roi, scales, sizes, shape in resizes:
        roi_name = "none"
        if roi is not None:
            inits.append(floats(name + "_roi", roi))
            roi_name = name + "_roi"
        if scales is not None:
            inits.append(floats(name + "_scales", scales))
            args = ["x", roi_name, name + "_scales"]
        else:
            inits.append(ints(name + "_sizes", sizes))
            args = ["x", roi_name, "", name + "_sizes"]
        nodes.append(helper.make_node("Resize", args, [name], **attrs))
        outs.append(vi(name, F, shape))
    save_case("resize_modes", nodes, [vi("x", F, [2, 3, 5, 6])], outs, [ownf(2, 3, 5, 6)], inits, opset=19)

    def tf_half_pixel_for_nn(x):
        # Opset 11-17's tf_half_pixel_for_nn (the reference evaluator lacks
        # it): source (y + 0.5) / scale, nearest_mode ceil, clamped.
        out = x
        for axis, size in ((2, 3), (3, 4)):
            scale = size / x.shape[axis]
            src = np.minimum(np.ceil((np.arange(size) + 0.5) / scale), x.shape[axis] - 1).astype(int)
            out = np.take(out, src, axis=axis)
        return {0: out}

    x13 = ownf(2, 3, 5, 6)
    save_case(
        "resize_opset13",
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", nearest_mode="ceil",
                          coordinate_transformation_mode="tf_half_pixel_for_nn")],
        [vi("x", F, [2, 3, 5, 6])], [vi("y", F, [2, 3, 3, 4])], [x13], [ints("sizes", [2, 3, 3, 4])], opset=13,
        expected=tf_half_pixel_for_nn,
    )
    save_case(
        "upsample_opset9",
        [helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")],
        [vi("x", F, [1, 2, 3, 4])], [vi("y", F, [1, 2, 6, 12])], [ownf(1, 2, 3, 4)],
        [floats("scales", [1, 1, 2, 3])], opset=9,
    )
    # Einsum: matmuls, ellipsis broadcasting, diagonals, sums, three operands.
    equations = [
        ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]], [2, 3, 5]),
        ("...ij,...jk", [[2, 1, 3, 4], [3, 4, 2]], [2, 3, 3, 2]),
        ("ii->i", [[4, 4]], [4]),
        ("bii->b", [[3, 4, 4]], [3]),
        ("ij->", [[3, 4]], []),
        ("ij,ij->ij", [[3, 4], [3, 4]], [3, 4]),
        ("abc,cd,de->abe", [[2, 3, 4], [4, 5], [5, 6]], [2, 3, 6]),
        ("bhqd,bhkd->bhqk", [[2, 2, 3, 4], [2, 2, 5, 4]], [2, 2, 3, 5]),
        ("i,j->ij", [[3], [4]], [3, 4]),
        ("ijk->kj", [[2, 3, 4]], [4, 3]),
    ]
    nodes, ins, outs, feeds = [], [], [], []
    for n, (eq, shapes, out) in enumerate(equations):
        names = []
        for m, shape in enumerate(shapes):
            names.append(f"e{n}_{m}")
            ins.append(vi(names[-1], F, shape))
            feeds.append(ownf(*shape))
        nodes.append(helper.make_node("Einsum", names, [f"r{n}"], equation=eq))
        outs.append(vi(f"r{n}", F, out))
    save_case("einsum_equations", nodes, ins, outs, feeds, opset=17)
    # GridSample and AffineGrid.
    modes = [("linear", "zeros", 0), ("nearest", "border", 1), ("cubic", "reflection", 0),
             ("linear", "reflection", 1), ("cubic", "border", 1), ("nearest", "zeros", 0)]
    nodes = [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0)]
    outs = [vi("grid", F, [2, 4, 5, 2])]
    for n, (mode, padding, align) in enumerate(modes):
        nodes.append(helper.make_node("GridSample", ["x", "g"], [f"s{n}"], mode=mode, padding_mode=padding,
                                      align_corners=align))
        outs.append(vi(f"s{n}", F, [2, 3, 4, 5]))
    nodes.append(helper.make_node("GridSample", ["x", "grid"], ["affine"]))
    outs.append(vi("affine", F, [2, 3, 4, 5]))
    nodes.append(helper.make_node("GridSample", ["v", "g3"], ["volume"], mode="linear", padding_mode="border"))
    outs.append(vi("volume", F, [1, 2, 2, 3, 2]))
    save_case("grid_sample", nodes,
              [vi("x", F, [2, 3, 6, 7]), vi("g", F, [2, 4, 5, 2]), vi("theta", F, [2, 2, 3]),
               vi("v", F, [1, 2, 3, 4, 5]), vi("g3", F, [1, 2, 3, 2, 3])],
              outs,
              [ownf(2, 3, 6, 7), ownf(2, 4, 5, 2, low=-1.3, high=1.3), ownf(2, 2, 3, low=-1.2, high=1.2),
               ownf(1, 2, 3, 4, 5), ownf(1, 2, 3, 2, 3, low=-1.2, high=1.2)],
              [ints("size", [2, 3, 4, 5])], opset=20)
    # Normalizations.
    save_case(
        "norms_extra",
        [helper.make_node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["ln", "ln_mean", "ln_inv"], axis=1,
                          epsilon=1e-3),
         helper.make_node("GroupNormalization", ["img", "gn_scale", "gn_bias"], ["gn"], num_groups=2, epsilon=1e-4),
         helper.make_node("MeanVarianceNormalization", ["img"], ["mvn"]),
         helper.make_node("MeanVarianceNormalization", ["img"], ["mvn_hw"], axes=[2, 3]),
         helper.make_node("LpNormalization", ["x"], ["l1"], axis=0, p=1),
         helper.make_node("LpNormalization", ["x"], ["l2"])],
        [vi("x", F, [3, 4, 5]), vi("img", F, [2, 4, 3, 5])],
        [vi("ln", F, [3, 4, 5]), vi("ln_mean", F, [3, 1, 1]), vi("ln_inv", F, [3, 1, 1]), vi("gn", F, [2, 4, 3, 5]),
         vi("mvn", F, [2, 4, 3, 5]), vi("mvn_hw", F, [2, 4, 3, 5]), vi("l1", F, [3, 4, 5]), vi("l2", F, [3, 4, 5])],
        [ownf(3, 4, 5), ownf(2, 4, 3, 5, low=-2, high=3)],
        [init("ln_scale", ownf(4, 5)), init("ln_bias", ownf(4, 5)), init("gn_scale", ownf(4)),
         init("gn_bias", ownf(4))],
        opset=21,
        # The reference evaluator's LpNormalization sums x^p, not |x|^p.
        expected=lambda x, img: {6: (x / np.abs(x).sum(axis=0, keepdims=True)).astype(np.float32)},
    )
    # RMSNormalization and Attention (opset 23).
    save_case(
        "attention_rms",
        [helper.make_node("RMSNormalization", ["x", "rms_scale"], ["rms"], axis=-1, epsilon=1e-5),
         helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"], q_num_heads=4, kv_num_heads=2, is_causal=1,
                          softcap=3.0),
         helper.make_node("Attention", ["q4", "k4", "v4", "", "past_k", "past_v"], ["y4", "pk", "pv", "qk"],
                          qk_matmul_output_mode=3, scale=0.3)],
        [vi("x", F, [2, 3, 8]), vi("q", F, [2, 5, 16]), vi("k", F, [2, 5, 8]), vi("v", F, [2, 5, 12]),
         vi("mask", TensorProto.BOOL, [5, 5]), vi("q4", F, [2, 2, 3, 4]), vi("k4", F, [2, 2, 3, 4]),
         vi("v4", F, [2, 2, 3, 4]), vi("past_k", F, [2, 2, 2, 4]), vi("past_v", F, [2, 2, 2, 4])],
        [vi("rms", F, [2, 3, 8]), vi("y", F, [2, 5, 24]), vi("y4", F, [2, 2, 3, 4]), vi("pk", F, [2, 2, 5, 4]),
         vi("pv", F, [2, 2, 5, 4]), vi("qk", F, [2, 2, 3, 5])],
        [ownf(2, 3, 8), ownf(2, 5, 16), ownf(2, 5, 8), ownf(2, 5, 12), own.uniform(size=(5, 5)) > 0.3,
         ownf(2, 2, 3, 4), ownf(2, 2, 3, 4), ownf(2, 2, 3, 4), ownf(2, 2, 2, 4), ownf(2, 2, 2, 4)],
        [init("rms_scale", ownf(8))],
        opset=23,
    )
    glp_x = ownf(2, 3, 4, 5)
    save_case(
        "global_lp_pool",
        [helper.make_node("GlobalLpPool", ["x"], ["p1"], p=1), helper.make_node("GlobalLpPool", ["x"], ["p3"], p=3)],
        [vi("x", F, [2, 3, 4, 5])], [vi("p1", F, [2, 3, 1, 1]), vi("p3", F, [2, 3, 1, 1])], [glp_x],
        expected=lambda x: {
            0: np.abs(x).sum(axis=(2, 3), keepdims=True),
            1: np.power(np.power(np.abs(x.astype(np.float64)), 3).sum(axis=(2, 3), keepdims=True), 1 / 3)
            .astype(np.float32),
        },
    )
    # Pooling and cropping: MaxPool indices, LpPool, GlobalLpPool, CenterCropPad, Col2Im.
    save_case(
        "pool_spatial",
        [helper.make_node("MaxPool", ["img"], ["mp", "mpi"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1]),
         helper.make_node("MaxPool", ["img"], ["mpc", "mpci"], kernel_shape=[2, 2], storage_order=1, ceil_mode=1,
                          strides=[2, 2]),
         helper.make_node("LpPool", ["img"], ["lp"], kernel_shape=[2, 3], p=3, pads=[1, 1, 0, 1], strides=[1, 2]),
         helper.make_node("CenterCropPad", ["img", "crop"], ["ccp"], axes=[-1, 2]),
         helper.make_node("Col2Im", ["cols", "image", "block"], ["c2i"], strides=[2, 1], pads=[1, 0, 0, 1],
                          dilations=[1, 2])],
        [vi("img", F, [2, 3, 7, 6]), vi("cols", F, [2, 12, 12])],
        [vi("mp", F, [2, 3, 4, 6]), vi("mpi", I64, [2, 3, 4, 6]), vi("mpc", F, [2, 3, 4, 3]),
         vi("mpci", I64, [2, 3, 4, 3]), vi("lp", F, [2, 3, 7, 3]), 
         vi("ccp", F, [2, 3, 9, 4]), vi("c2i", F, [2, 3, 5, 5])],
        [ownf(2, 3, 7, 6), ownf(2, 12, 12)],
        [ints("crop", [4, 9]), ints("image", [5, 5]), ints("block", [2, 2])],
        opset=19,
    )


def np_act(name, x, alpha=None, beta=None):
    """The recurrent ops' activations (onnxruntime's defaults for alpha/beta)."""
    n = name.lower()
    if n == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if n == "tanh":
        return np.tanh(x)
    if n == "relu":
        return np.maximum(x, 0)
    if n == "affine":
        return alpha * x + beta
    if n == "leakyrelu":
        return np.where(x >= 0, x, alpha * x)
    if n == "thresholdedrelu":
        return np.where(x > alpha, x, 0)
    if n == "scaledtanh":
        return alpha * np.tanh(beta * x)
    if n == "hardsigmoid":
        return np.clip(alpha * x + beta, 0, 1)
    if n == "elu":
        return np.where(x > 0, x, alpha * (np.exp(x) - 1))
    if n == "softsign":
        return x / (1 + np.abs(x))
    if n == "softplus":
        return np.log1p(np.exp(x))
    raise ValueError(name)


ACT_PARAMS = {"affine": (1, 1), "leakyrelu": (1, 0), "thresholdedrelu": (1, 0), "scaledtanh": (1, 1),
              "hardsigmoid": (1, 1), "elu": (1, 0)}


ACT_DEFAULTS = {"leakyrelu": (0.01, 0.0), "thresholdedrelu": (1.0, 0.0), "hardsigmoid": (0.2, 0.5), "elu": (1.0, 0.0),
                "affine": (1.0, 0.0), "scaledtanh": (1.0, 1.0)}


def np_recurrent(kind, X, W, R, B=None, lens=None, h0=None, c0=None, P=None, activations=None, alphas=(), betas=(),
                 clip=None, direction="forward", layout=0, input_forget=0, linear_before_reset=0):
    """RNN/GRU/LSTM in float64 numpy, as onnxruntime computes them (sequence_lens: steps past an entry's length keep
    its state and give zeros; the reverse direction runs over each entry's own length). Returns Y, Y_h[, Y_c]."""
    X = X.astype(np.float64)
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    S, Bn, _ = X.shape
    D = 2 if direction == "bidirectional" else 1
    H = R.shape[-1]
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    per = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    names = list(activations) if activations else per * D
    if len(names) == len(per) and D == 2:
        names = names * 2
    ai, bi = iter(alphas), iter(betas)
    acts = []
    for n in names:
        ta, tb = ACT_PARAMS.get(n.lower(), (0, 0))
        da, db = ACT_DEFAULTS.get(n.lower(), (0.0, 0.0))
        a = next(ai, da) if ta else da
        b = next(bi, db) if tb else db
        acts.append(lambda x, n=n, a=a, b=b: np_act(n, x, a, b))
    lens = np.full(Bn, S) if lens is None else np.asarray(lens)
    cl = (lambda x: np.clip(x, -clip, clip)) if clip is not None else (lambda x: x)
    Y = np.zeros((S, D, Bn, H))
    Yh = np.zeros((D, Bn, H))
    Yc = np.zeros((D, Bn, H))
    for d in range(D):
        reverse = direction == "reverse" or d == 1
        f, g, h = (acts[d * len(per) + i] for i in range(len(per))) if len(per) == 3 else (
            acts[d * len(per)], acts[d * len(per) + len(per) - 1], None)
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Bd = np.zeros(2 * G * H) if B is None else B[d].astype(np.float64)
        Wb, Rb = Bd[:G * H], Bd[G * H:]
        for b in range(Bn):
            Ht = np.zeros(H) if h0 is None else h0[d, b].astype(np.float64)
            Ct = np.zeros(H) if c0 is None else c0[d, b].astype(np.float64)
            L = lens[b]
            order = range(L - 1, -1, -1) if reverse else range(L)
            for t in order:
                x = X[t, b]
                if kind == "RNN":
                    Ht = f(cl(x @ Wd.T + Ht @ Rd.T + Wb + Rb))
                elif kind == "GRU":
                    gx = x @ Wd.T + Wb
                    gh = Ht @ Rd.T
                    z = f(cl(gx[:H] + gh[:H] + Rb[:H]))
                    r = f(cl(gx[H:2 * H] + gh[H:2 * H] + Rb[H:2 * H]))
                    if linear_before_reset:
                        hh = g(cl(gx[2 * H:] + r * (gh[2 * H:] + Rb[2 * H:])))
                    else:
                        hh = g(cl(gx[2 * H:] + (r * Ht) @ Rd[2 * H:].T + Rb[2 * H:]))
                    Ht = (1 - z) * hh + z * Ht
                else:
                    gates = x @ Wd.T + Ht @ Rd.T + Wb + Rb
                    pi, po, pf = (np.zeros(H),) * 3 if P is None else np.split(P[d].astype(np.float64), 3)
                    i = f(cl(gates[:H] + pi * Ct))
                    fg = 1 - i if input_forget else f(cl(gates[2 * H:3 * H] + pf * Ct))
                    c = g(cl(gates[3 * H:]))
                    Ct = fg * Ct + i * c
                    o = f(cl(gates[H:2 * H] + po * Ct))
                    Ht = o * h(Ct)
                Y[t, d, b] = Ht
            Yh[d, b] = Ht
            Yc[d, b] = Ct
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    out = [Y.astype(np.float32), Yh.astype(np.float32)]
    if kind == "LSTM":
        out.append(Yc.astype(np.float32))
    return out


def recurrent_cases():
    """RNN/GRU/LSTM with every attribute, checked against np_recurrent (onnx's reference evaluator ignores
    activations, clip, input_forget and sequence_lens); the evaluator's own results are checked against it first
    where it implements the attributes."""
    own = np.random.default_rng(32)

    def f32(*shape, scale=0.5):
        return (own.standard_normal(shape) * scale).astype(np.float32)

    def case(name, kind, S, Bn, I, H, attrs, with_bias=True, lens=None, h0=False, c0=False, peep=False,
             runtime_lens=False, opset=14):
        D = 2 if attrs.get("direction") == "bidirectional" else 1
        G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
        layout = attrs.get("layout", 0)
        X = f32(*((Bn, S, I) if layout else (S, Bn, I)), scale=1.0)
        W, R = f32(D, G * H, I), f32(D, G * H, H)
        inits = [init("W", W), init("R", R)]
        names = ["x", "W", "R"]
        B = f32(D, 2 * G * H) if with_bias else None
        names.append("B" if with_bias else "")
        if with_bias:
            inits.append(init("B", B))
        inputs, feeds = [vi("x", F, list(X.shape))], [X]
        if lens is not None:
            names.append("lens")
            if runtime_lens:
                inputs.append(vi("lens", TensorProto.INT32, [Bn]))
                feeds.append(np.asarray(lens, np.int32))
            else:
                inits.append(init("lens", np.asarray(lens, np.int32)))
        else:
            names.append("")
        state_shape = (Bn, D, H) if layout else (D, Bn, H)
        h0v = f32(*state_shape) if h0 else None
        names.append("h0" if h0 else "")
        if h0:
            inits.append(init("h0", h0v))
        c0v = pv = None
        if kind == "LSTM":
            c0v = f32(*state_shape) if c0 else None
            names.append("c0" if c0 else "")
            if c0:
                inits.append(init("c0", c0v))
            pv = f32(D, 3 * H) if peep else None
            names.append("P" if peep else "")
            if peep:
                inits.append(init("P", pv))
        while names and names[-1] == "":
            names.pop()
        outs = ["y", "yh"] + (["yc"] if kind == "LSTM" else [])
        y_shape = [Bn, S, D, H] if layout else [S, D, Bn, H]
        outputs = [vi("y", F, y_shape), vi("yh", F, list(state_shape))] + (
            [vi("yc", F, list(state_shape))] if kind == "LSTM" else [])
        node = helper.make_node(kind, names, outs, hidden_size=H, **attrs)
        keys = {"activations": "activations", "activation_alpha": "alphas", "activation_beta": "betas",
                "clip": "clip", "direction": "direction", "layout": "layout", "input_forget": "input_forget",
                "linear_before_reset": "linear_before_reset"}
        kw = {keys[k]: v for k, v in attrs.items()}
        want = np_recurrent(kind, X, W, R, B, lens, h0v, c0v, pv, **kw)
        save_case(name, [node], inputs, outputs, feeds, inits, opset=opset,
                  expected=lambda *_: dict(enumerate(want)), evaluate=False)

    # The evaluator against np_recurrent where it implements everything used.
    for kind in ("RNN", "GRU", "LSTM"):
        D, G, H = 2, {"RNN": 1, "GRU": 3, "LSTM": 4}[kind], 3
        X, W, R, B = f32(4, 2, 5), f32(D, G * H, 5), f32(D, G * H, H), f32(D, 2 * G * H)
        node = helper.make_node(kind, ["x", "W", "R", "B"], ["y", "yh"], hidden_size=H, direction="bidirectional")
        graph = helper.make_graph([node], "check", [vi("x", F, [4, 2, 5])], [vi("y", F, None), vi("yh", F, None)],
                                  initializer=[init("W", W), init("R", R), init("B", B)])
        got = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])).run(
            None, {"x": X})
        want = np_recurrent(kind, X, W, R, B, direction="bidirectional")
        for a, b in zip(got, want):
            assert np.allclose(a, b, atol=1e-5), f"np_recurrent disagrees with onnx's evaluator on {kind}"

    case("rnn_bidirectional_acts", "RNN", 5, 3, 4, 6,
         dict(direction="bidirectional", activations=["Relu", "Affine"], activation_alpha=[0.7], activation_beta=[0.1]),
         h0=True)
    case("rnn_reverse_lens_layout1", "RNN", 5, 3, 4, 6,
         dict(direction="reverse", layout=1, activations=["LeakyRelu"], activation_alpha=[0.2], clip=1.5),
         lens=[5, 2, 4])
    case("gru_bidirectional_lens", "GRU", 4, 3, 5, 6, dict(direction="bidirectional"), lens=[4, 1, 3], h0=True)
    case("gru_linear_before_reset_acts", "GRU", 5, 2, 3, 4,
         dict(linear_before_reset=1, activations=["HardSigmoid", "Softsign"], activation_alpha=[0.3],
              activation_beta=[0.4], clip=2.0), h0=True)
    case("gru_reverse_layout1_nobias", "GRU", 4, 2, 3, 5, dict(direction="reverse", layout=1), with_bias=False)
    case("lstm_bidirectional_peepholes", "LSTM", 5, 2, 4, 6, dict(direction="bidirectional"),
         h0=True, c0=True, peep=True)
    case("lstm_input_forget_clip_lens", "LSTM", 5, 3, 3, 4,
         dict(input_forget=1, clip=1.0, activations=["Sigmoid", "ScaledTanh", "Elu"], activation_alpha=[0.9, 1.1],
              activation_beta=[1.2]), lens=[5, 3, 0], c0=True, peep=True)
    case("lstm_reverse_layout1_lens", "LSTM", 4, 3, 5, 4, dict(direction="reverse", layout=1), lens=[2, 4, 3],
         h0=True, c0=True)
    case("lstm_runtime_lens", "LSTM", 4, 3, 3, 5, dict(), lens=[4, 2, 3], runtime_lens=True)
    case("lstm_opset7_defaults", "LSTM", 3, 2, 3, 4, dict(), opset=7)


def control_flow_cases():
    """If/Loop/Scan unrolled or inlined at import time, subgraphs reading outer values."""
    own = np.random.default_rng(33)

    def f32(*shape):
        return own.uniform(-1, 1, size=shape).astype(np.float32)

    # If: the condition folds (a shape comparison); each branch reads outer values.
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t"])], "then", [], [vi("t", F, [2, 3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"])], "else", [], [vi("e", F, [2, 3])])
    nested_then = helper.make_graph([helper.make_node("If", ["not_cond"], ["inner"], then_branch=then_g,
                                                      else_branch=else_g)], "nested", [], [vi("inner", F, [2, 3])])
    loop_body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["acc", "w"], ["scaled"]),
         helper.make_node("Add", ["scaled", "fi"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("ReduceSum", ["acc_out", "ax1"], ["row_sums"], keepdims=0)],
        "loop_body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", F, [2, 3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", F, [2, 3]), vi("row_sums", F, [2])])
    # A Loop with only a condition: runs while i < 2 (the condition folds each iteration).
    while_body = helper.make_graph(
        [helper.make_node("Add", ["v", "x"], ["v_out"]),
         helper.make_node("Less", ["i", "two"], ["cond_out"])],
        "while_body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("v", F, [2, 3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [2, 3])])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("ReduceSum", ["shape"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "four"], ["cond"]),
        helper.make_node("Not", ["cond"], ["not_cond"]),
        helper.make_node("If", ["cond"], ["if_out"], then_branch=nested_then, else_branch=else_g),
        helper.make_node("Loop", ["three", "true", "x"], ["loop_acc", "loop_rows"], body=loop_body),
        helper.make_node("Loop", ["", "true", "x"], ["while_out"], body=while_body),
    ]
    save_case(
        "control_flow",
        nodes,
        [vi("x", F, [2, 3])],
        [vi("if_out", F, [2, 3]), vi("loop_acc", F, [2, 3]), vi("loop_rows", F, [3, 2]), vi("while_out", F, [2, 3])],
        [f32(2, 3)],
        [init("w", f32(2, 3)), init("four", np.array(4, np.int64)), init("three", np.array(3, np.int64)),
         init("true", np.array(True)), init("two", np.array(2, np.int64)), init("ax1", np.array([1], np.int64))],
        opset=16,
    )

    # A Loop with a trip count and no condition input (onnx's evaluator
    # runs no iteration for it, against the spec: numpy gives the output).
    double_body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["v", "v"], ["v2"]),
         helper.make_node("Add", ["v2", "fi"], ["v_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "double_body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("v", F, [3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", F, [3])])
    save_case(
        "loop_trip_count_only",
        [helper.make_node("Loop", ["two", "", "x"], ["y"], body=double_body)],
        [vi("x", F, [3])], [vi("y", F, [3])], [f32(3)], [init("two", np.array(2, np.int64))], opset=16,
        expected=lambda x: {0: ((x * 2) * 2 + 1).astype(np.float32)}, evaluate=False)

    # Scan over axis 1 of s in reverse and axis 0 of u forward; one output
    # stacked on axis 1, one in reverse order on axis 0 (onnx's evaluator
    # implements neither, so numpy gives the outputs).
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["state", "a"], ["state_out"]),
         helper.make_node("Mul", ["state_out", "k"], ["out1"]),
         helper.make_node("Add", ["b", "k"], ["out2"])],
        "scan_body", [vi("state", F, [2]), vi("a", F, [2]), vi("b", F, [3])],
        [vi("state_out", F, [2]), vi("out1", F, [2]), vi("out2", F, [3])])
    s_in, u_in, init0 = f32(2, 4), f32(4, 3), f32(2)

    def scan_expected(s_in, u_in):
        state, ys1, ys2 = init0.astype(np.float64), [], []
        for t in range(4):
            state = state + s_in[:, 3 - t]
            ys1.append(state * 0.5)
            ys2.append(u_in[t] + 0.5)
        return {0: state.astype(np.float32), 1: np.stack(ys1, axis=1).astype(np.float32),
                2: np.stack(ys2[::-1], axis=0).astype(np.float32)}

    save_case(
        "scan_axes_directions",
        [helper.make_node("Scan", ["init", "s", "u"], ["scan_state", "scan_ys", "scan_rev"], body=scan_body,
                          num_scan_inputs=2, scan_input_axes=[1, 0], scan_input_directions=[1, 0],
                          scan_output_axes=[1, 0], scan_output_directions=[0, 1])],
        [vi("s", F, [2, 4]), vi("u", F, [4, 3])],
        [vi("scan_state", F, [2]), vi("scan_ys", F, [2, 4]), vi("scan_rev", F, [4, 3])],
        [s_in, u_in],
        [init("init", init0), init("k", np.array(0.5, np.float32))],
        opset=16,
        expected=scan_expected,
        evaluate=False,
    )


def sequence_cases():
    """Sequences and optionals built and consumed inside the graph."""
    own = np.random.default_rng(34)
    x = own.uniform(-1, 1, size=(4, 3)).astype(np.float32)
    y = own.uniform(-1, 1, size=(2, 3)).astype(np.float32)
    map_body = helper.make_graph([helper.make_node("Mul", ["e", "e"], ["sq"])], "map_body",
                                 [vi("e", F, None)], [vi("sq", F, None)])
    # A Loop appending to a sequence it carries (torch's list-building pattern).
    append_body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Add", ["y", "fi"], ["item"]),
         helper.make_node("SequenceInsert", ["seq_in", "item"], ["seq_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "append_body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []),
                        helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [vi("cond_out", TensorProto.BOOL, []), helper.make_tensor_sequence_value_info("seq_out", F, None)])
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("SplitToSequence", ["x", "split"], ["chunks"], axis=0),
        helper.make_node("SequenceLength", ["rows"], ["n_rows"]),
        helper.make_node("SequenceAt", ["rows", "minus_one"], ["last_row"]),
        helper.make_node("SequenceErase", ["rows", "one"], ["erased"]),
        helper.make_node("SequenceInsert", ["erased", "last_row", "zero"], ["inserted"]),
        helper.make_node("ConcatFromSequence", ["inserted"], ["stacked"], axis=1, new_axis=1),
        helper.make_node("SequenceMap", ["chunks"], ["squares"], body=map_body),
        helper.make_node("ConcatFromSequence", ["squares"], ["squares_cat"], axis=0),
        helper.make_node("SequenceConstruct", ["x", "y"], ["pair"]),
        helper.make_node("SequenceAt", ["pair", "one"], ["second"]),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
        helper.make_node("Loop", ["three", "true", "empty"], ["built"], body=append_body),
        helper.make_node("ConcatFromSequence", ["built"], ["built_cat"], axis=0),
        helper.make_node("Optional", ["y"], ["opt"]),
        helper.make_node("OptionalHasElement", ["opt"], ["has"]),
        helper.make_node("OptionalGetElement", ["opt"], ["got"]),
        helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(F, [2, 3])),
        helper.make_node("OptionalHasElement", ["none"], ["has_none"]),
        helper.make_node("Or", ["has", "has_none"], ["either"]),
        helper.make_node("Where", ["either", "got", "second"], ["chosen"]),
    ]
    save_case(
        "sequences",
        nodes,
        [vi("x", F, [4, 3]), vi("y", F, [2, 3])],
        [vi("n_rows", I64, []), vi("stacked", F, [3, 4]), vi("squares_cat", F, [4, 3]),
         vi("built_cat", F, [6, 3]), vi("chosen", F, [2, 3]), vi("has_none", TensorProto.BOOL, [])],
        [x, y],
        [init("split", np.array([1, 3], np.int64)), init("minus_one", np.array(-1, np.int64)),
         init("one", np.array(1, np.int64)), init("zero", np.array(0, np.int64)),
         init("three", np.array(3, np.int64)), init("true", np.array(True))],
        opset=18,
        # onnx's evaluator returns a list from OptionalGetElement of a
        # tensor, which its Where then refuses: numpy gives the outputs.
        expected=lambda x, y: {
            0: np.array(4, np.int64),
            1: np.stack([x[3], x[0], x[2], x[3]], axis=1),
            2: x * x,
            3: np.concatenate([y + i for i in range(3)], axis=0).astype(np.float32),
            4: y,
            5: np.array(False),
        },
        evaluate=False,
    )


def signal_cases():
    """Windows, mel filters, EyeLike (constants) and DFT/STFT (matmuls with constant twiddles)."""
    own = np.random.default_rng(35)
    signal = own.uniform(-1, 1, size=(2, 16, 1)).astype(np.float32)
    spectrum = own.uniform(-1, 1, size=(2, 5, 2)).astype(np.float32)
    nodes = [
        helper.make_node("HannWindow", ["eight"], ["hann"]),
        helper.make_node("HammingWindow", ["eight"], ["hamming"], periodic=0),
        helper.make_node("BlackmanWindow", ["eight"], ["blackman"]),
        helper.make_node("MelWeightMatrix", ["mel_bins", "dft_len", "rate", "low", "high"], ["mel"]),
        helper.make_node("EyeLike", ["eye_src"], ["eye"], k=1, dtype=TensorProto.INT32),
        helper.make_node("DFT", ["signal", "", "one"], ["rfft"], onesided=1),
        helper.make_node("DFT", ["signal", "twelve", "one"], ["dft_cut"]),
        helper.make_node("DFT", ["spectrum", "", "one"], ["idft"], inverse=1),
        helper.make_node("DFT", ["spectrum", "", "one"], ["irfft"], inverse=1, onesided=1),
        helper.make_node("STFT", ["signal", "four", "hann"], ["stft"]),
        helper.make_node("Mul", ["signal", "signal"], ["sq"]),
        helper.make_node("STFT", ["sq", "three", "", "five"], ["stft_full"], onesided=0),
        helper.make_node("Add", ["mel", "eye_big"], ["mel_plus"]),
    ]
    save_case(
        "signal",
        nodes,
        [vi("signal", F, [2, 16, 1]), vi("spectrum", F, [2, 5, 2])],
        [vi("hann", F, [8]), vi("hamming", F, [8]), vi("blackman", F, [8]), vi("mel_plus", F, [9, 4]),
         vi("eye", TensorProto.INT32, [3, 4]), vi("rfft", F, [2, 9, 2]), vi("dft_cut", F, [2, 12, 2]),
         vi("idft", F, [2, 5, 2]), vi("irfft", F, [2, 8, 1]), vi("stft", F, [2, 3, 5, 2]),
         vi("stft_full", F, [2, 4, 5, 2])],
        [signal, spectrum],
        [init("eight", np.array(8, np.int64)), init("one", np.array(1, np.int64)),
         init("twelve", np.array(12, np.int64)), init("four", np.array(4, np.int64)),
         init("three", np.array(3, np.int64)), init("five", np.array(5, np.int64)),
         init("mel_bins", np.array(4, np.int64)), init("dft_len", np.array(16, np.int64)),
         init("rate", np.array(8000, np.int64)), init("low", np.array(100.0, np.float32)),
         init("high", np.array(3000.0, np.float32)), init("eye_big", np.zeros((9, 4), np.float32)),
         init("eye_src", np.zeros((3, 4), np.float32))],
        opset=20,
    )


def loss_cases():
    """NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference ops, targets given at run time)."""
    own = np.random.default_rng(36)
    x = own.uniform(-2, 2, size=(3, 5, 2)).astype(np.float32)
    t = own.integers(0, 5, size=(3, 2)).astype(np.int64)
    t[1, 0] = 2  # ignored below
    save_case(
        "losses",
        [helper.make_node("LogSoftmax", ["x"], ["lp"], axis=1),
         helper.make_node("NegativeLogLikelihoodLoss", ["lp", "t", "w"], ["nll_mean"], ignore_index=2),
         helper.make_node("NegativeLogLikelihoodLoss", ["lp", "t"], ["nll_none"], reduction="none"),
         helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["sce_sum", "log_prob"], reduction="sum"),
         helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["sce_mean"], ignore_index=2),
         helper.make_node("SoftmaxCrossEntropyLoss", ["x2", "t2", "w"], ["sce_2d"])],
        [vi("x", F, [3, 5, 2]), vi("t", I64, [3, 2]), vi("x2", F, [4, 5]), vi("t2", I64, [4])],
        [vi("nll_mean", F, []), vi("nll_none", F, [3, 2]), vi("sce_sum", F, []), vi("log_prob", F, [3, 5, 2]),
         vi("sce_mean", F, []), vi("sce_2d", F, [])],
        [x, t, own.uniform(-2, 2, size=(4, 5)).astype(np.float32), own.integers(0, 5, size=4).astype(np.int64)],
        [init("w", own.uniform(0.2, 1.0, size=5).astype(np.float32))],
        opset=13,
    )


def hostile_reductions():
    """Rows of only -inf, only +inf, NaN, and -inf with one -FLT_MAX through
    ReduceMax/ReduceMin, ArgMax/ArgMin and Softmax/LogSoftmax, and windows
    of only -inf or +inf, and -inf with -FLT_MAX, through a padded MaxPool
    and GlobalMaxPool (no NaN there: onnx's reference MaxPool skips NaN,
    the max reductions propagate it). A reduction that started from
    -FLT_MAX gave -3.4028235e38 for a row of -inf."""
    inf, nan, big = np.inf, np.nan, np.finfo(np.float32).max
    x = np.array([[-inf] * 6, [inf] * 6, [-inf] * 5 + [-big], [inf] * 5 + [big], [nan] + [-inf] * 5,
                  [-inf, 1.0, -inf, 2.0, -inf, -inf]], np.float32)
    img = np.full((1, 2, 4, 4), -inf, np.float32)
    img[0, 0, 2:, 2:] = [[-big, 1.0], [-inf, -inf]]
    img[0, 1] = inf
    save_case(
        "hostile_reductions",
        [
            helper.make_node("ReduceMax", ["x"], ["max"], axes=[1], keepdims=0),
            helper.make_node("ReduceMin", ["x"], ["min"], axes=[1], keepdims=0),
            helper.make_node("ArgMax", ["x"], ["argmax"], axis=1, keepdims=0),
            helper.make_node("ArgMin", ["x"], ["argmin"], axis=1, keepdims=0),
            helper.make_node("Softmax", ["x"], ["softmax"], axis=1),
            helper.make_node("LogSoftmax", ["x"], ["log_softmax"], axis=1),
            helper.make_node("MaxPool", ["img"], ["pool"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("GlobalMaxPool", ["img"], ["global"]),
        ],
        [vi("x", F, [6, 6]), vi("img", F, [1, 2, 4, 4])],
        [vi("max", F, [6]), vi("min", F, [6]), vi("argmax", I64, [6]), vi("argmin", I64, [6]),
         vi("softmax", F, [6, 6]), vi("log_softmax", F, [6, 6]), vi("pool", F, [1, 2, 4, 4]),
         vi("global", F, [1, 2, 1, 1])],
        [x, img],
        opset=13,
    )


def element_type_cases():
    """Graphs in float16, bfloat16 and float64 (the element types issue):
    half graphs compute in f32 registers and store 16-bit, so their outputs
    match the reference evaluator's (which rounds after every op) within
    half precision."""
    import ml_dtypes

    global rng
    rng = np.random.default_rng(20261128)  # the same data alone or after cases()

    def half_net(name, elem, dtype):
        x = randf(1, 3, 6, 6).astype(dtype)
        w = (randf(4, 3, 3, 3) * 0.5).astype(dtype)
        b = randf(4).astype(dtype)
        m = (randf(16, 8) * 0.5).astype(dtype)
        gamma = randf(8, low=0.5, high=1.5).astype(dtype)
        beta = randf(8).astype(dtype)
        save_case(
            name,
            [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["flat"]),
             helper.make_node("Slice", ["flat", "starts", "ends", "axes"], ["part"]),
             helper.make_node("MatMul", ["part", "m"], ["mm"]),
             helper.make_node("Softmax", ["mm"], ["sm"], axis=-1),
             helper.make_node("LayerNormalization", ["mm", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
             helper.make_node("Add", ["sm", "ln"], ["y"]),
             helper.make_node("ReduceMean", ["y", "raxes"], ["mean"], keepdims=0)],
            [vi("x", elem, [1, 3, 6, 6])],
            [vi("y", elem, [4, 8]), vi("mean", elem, [4])],
            [x],
            [init("w", w), init("b", b), init("m", m), init("gamma", gamma), init("beta", beta),
             init("shape", np.array([4, 36], np.int64)), init("starts", np.array([0], np.int64)),
             init("ends", np.array([16], np.int64)), init("axes", np.array([1], np.int64)),
             init("raxes", np.array([1], np.int64))],
            opset=18,
        )

    half_net("float16_net", TensorProto.FLOAT16, np.float16)
    half_net("bfloat16_net", TensorProto.BFLOAT16, ml_dtypes.bfloat16)
    d = TensorProto.DOUBLE
    a = rng.uniform(0.5, 2.0, size=(3, 5))
    b = rng.uniform(-1.0, 1.0, size=(3, 5))
    save_case(
        "float64_elementwise",
        [helper.make_node("Mul", ["a", "b"], ["p"]),
         helper.make_node("Sqrt", ["a"], ["s"]),
         helper.make_node("Div", ["p", "s"], ["q"]),
         helper.make_node("Exp", ["b"], ["e"]),
         helper.make_node("Sub", ["q", "e"], ["y"]),
         helper.make_node("Tanh", ["y"], ["t"]),
         helper.make_node("Max", ["t", "c"], ["z"]),
         helper.make_node("Cast", ["z"], ["z32"], to=TensorProto.FLOAT)],
        [vi("a", d, [3, 5]), vi("b", d, [3, 5])],
        [vi("z", d, [3, 5]), vi("z32", F, [3, 5])],
        [a, b],
        [init("c", np.array(-0.75, np.float64))],
    )

    u8, u16 = TensorProto.UINT8, TensorProto.UINT16
    a8 = rng.integers(0, 256, size=(3, 8)).astype(np.uint8)
    b8 = rng.integers(1, 256, size=(3, 8)).astype(np.uint8)
    save_case(
        "uint8_arithmetic",
        [helper.make_node("Add", ["a", "b"], ["sum"]),
         helper.make_node("Sub", ["a", "b"], ["diff"]),
         helper.make_node("Div", ["a", "b"], ["quot"]),
         helper.make_node("Max", ["a", "b"], ["big"]),
         helper.make_node("Greater", ["a", "b"], ["gt"]),
         helper.make_node("ArgMax", ["a"], ["at"], axis=1, keepdims=0),
         helper.make_node("Cast", ["a"], ["af"], to=F),
         helper.make_node("Cast", ["a"], ["ai"], to=TensorProto.INT8),
         helper.make_node("Cast", ["c"], ["cu"], to=u8)],
        [vi("a", u8, [3, 8]), vi("b", u8, [3, 8]), vi("c", TensorProto.INT32, [3, 8])],
        [vi("sum", u8, [3, 8]), vi("diff", u8, [3, 8]), vi("quot", u8, [3, 8]), vi("big", u8, [3, 8]),
         vi("gt", TensorProto.BOOL, [3, 8]), vi("at", I64, [3]), vi("af", F, [3, 8]),
         vi("ai", TensorProto.INT8, [3, 8]), vi("cu", u8, [3, 8])],
        [a8, b8, rng.integers(-300, 300, size=(3, 8)).astype(np.int32)],
        opset=13,
    )
    a16 = rng.integers(0, 65536, size=(2, 6)).astype(np.uint16)
    b16 = rng.integers(1, 65536, size=(2, 6)).astype(np.uint16)
    save_case(
        "uint16_arithmetic",
        [helper.make_node("Mul", ["a", "b"], ["prod"]),
         helper.make_node("Div", ["a", "k"], ["quot"]),
         helper.make_node("Min", ["a", "b"], ["small"]),
         helper.make_node("Less", ["a", "b"], ["lt"]),
         helper.make_node("ReduceMax", ["a"], ["top"], axes=[1], keepdims=0),
         helper.make_node("Cast", ["a"], ["wide"], to=TensorProto.INT32)],
        [vi("a", u16, [2, 6]), vi("b", u16, [2, 6])],
        [vi("prod", u16, [2, 6]), vi("quot", u16, [2, 6]), vi("small", u16, [2, 6]),
         vi("lt", TensorProto.BOOL, [2, 6]), vi("top", u16, [2]), vi("wide", TensorProto.INT32, [2, 6])],
        [a16, b16],
        [init("k", np.array(300, np.uint16))],
        opset=13,
    )

    # A half graph's data movement meeting computed tensors (a decode
    # step's cache): the step's row, computed from x, is concatenated to
    # and scattered into an f16 cache input, and both results are outputs.
    h16 = TensorProto.FLOAT16
    x = randf(2, 8).astype(np.float16)
    cache = randf(2, 4, 8).astype(np.float16)
    w = (randf(8, 8) * 0.5).astype(np.float16)
    save_case(
        "float16_cache_step",
        [helper.make_node("MatMul", ["x", "w"], ["p"]),
         helper.make_node("Relu", ["p"], ["h"]),
         helper.make_node("Unsqueeze", ["h", "one"], ["row"]),
         helper.make_node("Concat", ["cache", "row"], ["grown"], axis=1),
         helper.make_node("ScatterElements", ["cache", "at", "row"], ["written"], axis=1),
         helper.make_node("ReduceSum", ["grown", "one"], ["total"], keepdims=0)],
        [vi("x", h16, [2, 8]), vi("cache", h16, [2, 4, 8])],
        [vi("grown", h16, [2, 5, 8]), vi("written", h16, [2, 4, 8]), vi("total", h16, [2, 8])],
        [x, cache],
        [init("w", w), init("one", np.array([1], np.int64)),
         init("at", np.full((2, 1, 8), 2, np.int64))],
        opset=18,
    )

    # A half model's step computed in f32 and cast back to its type
    # (`softmax(x, dtype=float32).to(x.dtype)`) between two products (its
    # own generator: the cases before keep their data).
    own = np.random.default_rng(424242)
    x = own.uniform(-1, 1, size=(2, 8)).astype(np.float32).astype(np.float16)
    w1 = (own.uniform(-1, 1, size=(8, 8)).astype(np.float32) * 0.5).astype(np.float16)
    w2 = (own.uniform(-1, 1, size=(8, 4)).astype(np.float32) * 0.5).astype(np.float16)
    save_case(
        "float16_upcast_softmax",
        [helper.make_node("MatMul", ["x", "w1"], ["p"]),
         helper.make_node("Cast", ["p"], ["p32"], to=TensorProto.FLOAT),
         helper.make_node("Softmax", ["p32"], ["s32"], axis=-1),
         helper.make_node("Cast", ["s32"], ["s"], to=TensorProto.FLOAT16),
         helper.make_node("MatMul", ["s", "w2"], ["y"])],
        [vi("x", h16, [2, 8])],
        [vi("y", h16, [2, 4])],
        [x],
        [init("w1", w1), init("w2", w2)],
        opset=18,
    )


def runtime_param_cases():
    """Quantization parameters that tcc folds or broadcasts itself: blocked
    DequantizeLinear of constant int8 weights (folded at import time, the
    weight-only quantization of LLMs), a blocked QuantizeLinear /
    DequantizeLinear round trip of a run-time input with constant
    parameters (tiled to the input inside the kernel), and
    NonMaxSuppression on constant boxes (evaluated at import time). Run
    alone: `python3 test/onnx/gen.py runtime_params`."""
    own = np.random.default_rng(20261129)
    x = own.uniform(-2.0, 2.0, size=(2, 8)).astype(np.float32)
    w_q = own.integers(-128, 128, size=(8, 4)).astype(np.int8)
    w_scale = own.uniform(0.01, 0.05, size=(4, 4)).astype(np.float32)
    w_zero = own.integers(-3, 4, size=(4, 4)).astype(np.int8)
    x_scale = own.uniform(0.01, 0.03, size=(2, 3)).astype(np.float32)
    x_zero = own.integers(120, 136, size=(2, 3)).astype(np.uint8)
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [1, 10.1, 0, 11.1], [0, 100, 1, 101]]], np.float32)
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3], [0.05, 0.4, 0.3, 0.2, 0.6, 0.7]]], np.float32)
    save_case(
        "quant_blocked_nms",
        [
            helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w"], axis=0, block_size=2),
            helper.make_node("MatMul", ["x", "w"], ["y"]),
            # Blocks of 3 along an axis of 8: the last block is cut short.
            helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"], axis=1, block_size=3),
            helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"], axis=1, block_size=3),
            helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_min"],
                             ["selected"]),
        ],
        [vi("x", F, [2, 8])],
        [vi("y", F, [2, 4]), vi("xq", TensorProto.UINT8, [2, 8]), vi("xd", F, [2, 8]),
         vi("selected", TensorProto.INT64, [None, 3])],
        [x],
        [init("w_q", w_q), init("w_scale", w_scale), init("w_zero", w_zero), init("x_scale", x_scale),
         init("x_zero", x_zero), init("boxes", boxes), init("scores", scores),
         init("max_out", np.array([2], np.int64)), init("iou", np.array([0.5], np.float32)),
         init("score_min", np.array([0.1], np.float32))],
        opset=21,
    )


def det_cases():
    """Det on matrices that need row swaps (a zero first pivot, a pivot
    smaller than the rows below), a singular one, a batch of 3x3 and 4x4
    ones, and a 1x1: the importer's Gaussian elimination with partial
    pivoting against numpy's LAPACK determinant (the reference
    evaluator's)."""
    x3 = np.stack([
        np.array([[0, 2, 1], [3, 1, 4], [1, 5, 9]], np.float32),
        np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32),
        np.array([[1e-3, 1, 2], [4, 3, 1], [2, 7, 5]], np.float32),
    ])
    x4 = randf(2, 4, 4, low=-2.0, high=2.0)
    x1 = randf(5, 1, 1)
    save_case(
        "det_pivoting",
        [helper.make_node("Det", ["x3"], ["d3"]), helper.make_node("Det", ["x4"], ["d4"]),
         helper.make_node("Det", ["x1"], ["d1"])],
        [vi("x3", F, [3, 3, 3]), vi("x4", F, [2, 4, 4]), vi("x1", F, [5, 1, 1])],
        [vi("d3", F, [3]), vi("d4", F, [2]), vi("d1", F, [5])],
        [x3, x4, x1],
        opset=22,
    )


def ml_cases():
    """The ai.onnx.ml ops tcc imports, every norm and a per-feature and a
    shared scale: Scaler (int64 input, cast to float), Normalizer MAX/L1/L2
    (a zero row left as it is), Binarizer, ArrayFeatureExtractor of a
    1-D input; expected outputs from the reference evaluator."""
    ML = "ai.onnx.ml"
    x = randf(4, 3, low=-2.0, high=2.0)
    x[2] = 0.0
    xi = rng.integers(-5, 5, size=(4, 3)).astype(np.int64)
    v = randf(6)
    nodes = [
        helper.make_node("Scaler", ["xi"], ["s1"], domain=ML, offset=[1.0, -2.0, 0.5], scale=[0.5, 2.0, -1.0]),
        helper.make_node("Scaler", ["x"], ["s2"], domain=ML, offset=[0.25], scale=[3.0]),
        helper.make_node("Normalizer", ["x"], ["n_max"], domain=ML, norm="MAX"),
        helper.make_node("Normalizer", ["x"], ["n_l1"], domain=ML, norm="L1"),
        helper.make_node("Normalizer", ["x"], ["n_l2"], domain=ML, norm="L2"),
        helper.make_node("Binarizer", ["x"], ["b"], domain=ML, threshold=0.3),
        helper.make_node("ArrayFeatureExtractor", ["v", "idx"], ["f"], domain=ML),
    ]
    inputs = [vi("x", F, [4, 3]), vi("xi", TensorProto.INT64, [4, 3]), vi("v", F, [6])]
    outputs = [vi(n, F, [4, 3]) for n in ["s1", "s2", "n_max", "n_l1", "n_l2", "b"]] + [vi("f", F, [1, 3])]
    graph = helper.make_graph(nodes, "ml_ops", inputs, outputs,
                              initializer=[init("idx", np.array([4, 0, 4], np.int64))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)],
                              producer_name="tcc test/onnx/gen.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    feeds = [x, xi, v]
    results = ReferenceEvaluator(model).run(None, dict(zip(["x", "xi", "v"], feeds)))
    # Scaler's output is float (the spec, onnxruntime); the reference
    # evaluator keeps an integer input's type.
    results[0] = ((xi - np.array([1.0, -2.0, 0.5])) * np.array([0.5, 2.0, -1.0])).astype(np.float32)
    directory = os.path.join(MODELS, "ml_ops")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    onnx.save_model(model, os.path.join(directory, "model.onnx"))
    for kind, values, infos in [("input", feeds, inputs), ("output", results, outputs)]:
        for i, value in enumerate(values):
            tensor = numpy_helper.from_array(np.asarray(value), infos[i].name)
            with open(os.path.join(directory, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())


def ml_model_cases():
    """The ai.onnx.ml model ops (as skl2onnx/onnxmltools export them) and
    TfIdfVectorizer's weighted modes, compared with onnxruntime:
    TreeEnsembleRegressor (two trees of different depths, every branch
    mode, a NaN routed by nodes_missing_value_tracks_true, two targets,
    base_values; a second one with AVERAGE and LOGISTIC, a third with MAX),
    TreeEnsemble (opset 5: a set-membership split, double leaf weights
    into float), LinearRegressor (two targets), LinearClassifier (three
    classes with SOFTMAX; one row of coefficients for two classes with
    LOGISTIC), TfIdfVectorizer IDF and TFIDF with weights over uni-, bi-
    and trigrams with skips on an int32 input, LabelEncoder int64 -> float
    (a default) and float -> int64 (a NaN key), OneHotEncoder."""
    ML = "ai.onnx.ml"
    x = randf(6, 3, low=-2.0, high=2.0)
    x[2, 0] = np.nan
    x[4, 1] = 0.5  # on a threshold
    # Feature 0 takes the set's members (onnxruntime's sets hold integers
    # and it truncates the feature before the test) and values that are
    # not members either way.
    x[:, 0] = [1.0, 2.5, np.nan, -1.0, 0.75, 3.25]
    # Tree 0: a depth-2 tree; tree 1: a stump.
    reg = dict(
        nodes_treeids=[0, 0, 0, 0, 0, 0, 0, 1, 1, 1],
        nodes_nodeids=[0, 1, 2, 3, 4, 5, 6, 0, 1, 2],
        nodes_featureids=[0, 1, 2, 0, 0, 0, 0, 2, 0, 0],
        nodes_modes=["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "LEAF", "LEAF", "LEAF", "LEAF",
                     "BRANCH_GT", "LEAF", "LEAF"],
        nodes_values=[0.25, 0.5, -0.5, 0, 0, 0, 0, 0.75, 0, 0],
        nodes_truenodeids=[1, 3, 5, 0, 0, 0, 0, 1, 0, 0],
        nodes_falsenodeids=[2, 4, 6, 0, 0, 0, 0, 2, 0, 0],
        nodes_missing_value_tracks_true=[1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        target_treeids=[0, 0, 0, 0, 0, 1, 1],
        target_nodeids=[3, 4, 5, 6, 6, 1, 2],
        target_ids=[0, 0, 1, 0, 1, 0, 1],
        target_weights=[1.5, -2.0, 3.25, 0.5, 4.0, 10.0, -7.5],
    )
    neq = dict(reg, nodes_modes=["BRANCH_NEQ", "BRANCH_EQ", "BRANCH_GTE", "LEAF", "LEAF", "LEAF", "LEAF",
                                 "BRANCH_GT", "LEAF", "LEAF"],
               nodes_values=[0.25, 0.5, -0.5, 0, 0, 0, 0, 0.75, 0, 0])
    nodes = [
        helper.make_node("TreeEnsembleRegressor", ["x"], ["t_sum"], domain=ML, n_targets=2,
                         aggregate_function="SUM", base_values=[0.125, -1.0], **reg),
        helper.make_node("TreeEnsembleRegressor", ["x"], ["t_avg"], domain=ML, n_targets=2,
                         aggregate_function="AVERAGE", post_transform="LOGISTIC", **reg),
        helper.make_node("TreeEnsembleRegressor", ["x"], ["t_max"], domain=ML, n_targets=2,
                         aggregate_function="MAX", **neq),
        helper.make_node(
            "TreeEnsemble", ["x"], ["t5"], domain=ML, n_targets=2, aggregate_function=1,
            tree_roots=[0, 2],
            nodes_featureids=[0, 1, 2], nodes_modes=numpy_helper.from_array(np.array([6, 0, 3], np.uint8), "nodes_modes"),
            nodes_splits=numpy_helper.from_array(np.array([np.nan, 0.5, -0.25], np.float32), "nodes_splits"),
            membership_values=numpy_helper.from_array(np.array([1.0, -1.0, 8.0, np.nan], np.float32),
                                                      "membership_values"),
            nodes_truenodeids=[0, 1, 3], nodes_trueleafs=[1, 1, 1],
            nodes_falsenodeids=[1, 2, 4], nodes_falseleafs=[0, 1, 1],
            nodes_missing_value_tracks_true=[0, 1, 0],
            leaf_targetids=[0, 1, 1, 0, 1],
            leaf_weights=numpy_helper.from_array(np.array([1.0, 2.5, -3.0, 0.75, 6.0], np.float32), "leaf_weights")),
        helper.make_node("LinearRegressor", ["x"], ["lr"], domain=ML, targets=2,
                         coefficients=[0.5, -1.0, 2.0, 1.5, 0.25, -0.75], intercepts=[0.1, -0.2]),
        helper.make_node("LinearClassifier", ["x"], ["lc_label", "lc_scores"], domain=ML,
                         classlabels_ints=[3, 7, 11], post_transform="SOFTMAX",
                         coefficients=[0.5, -1.0, 2.0, 1.5, 0.25, -0.75, -0.5, 0.5, 0.125],
                         intercepts=[0.1, -0.2, 0.3]),
        helper.make_node("LinearClassifier", ["x"], ["bc_label", "bc_scores"], domain=ML,
                         classlabels_ints=[0, 1], post_transform="LOGISTIC",
                         coefficients=[0.75, -1.25, 0.5], intercepts=[0.05]),
        helper.make_node("TfIdfVectorizer", ["tokens"], ["idf"], mode="IDF", min_gram_length=1,
                         max_gram_length=3, max_skip_count=2, ngram_counts=[0, 3, 7],
                         ngram_indexes=[4, 0, 2, 1, 3, 5],
                         pool_int64s=[2, 3, 5, 2, 3, 5, 4, 2, 3, 5],
                         weights=[0.5, 1.0, 1.5, 2.0, 2.5, 3.0]),
        helper.make_node("TfIdfVectorizer", ["tokens"], ["tfidf"], mode="TFIDF", min_gram_length=2,
                         max_gram_length=3, max_skip_count=1, ngram_counts=[0, 3, 7],
                         ngram_indexes=[4, 0, 2, 1, 3, 5],
                         pool_int64s=[2, 3, 5, 2, 3, 5, 4, 2, 3, 5],
                         weights=[0.5, 1.0, 1.5, 2.0, 2.5, 3.0]),
    ]
    tokens = np.array([[2, 3, 5, 2, 3, 4, 5, 2], [5, 4, 2, 9, 3, 2, 3, 5], [1, 1, 1, 1, 1, 1, 1, 1]], np.int32)
    ids = np.array([[3, 7, -2], [7, 100, 3]], np.int64)
    nodes += [
        helper.make_node("LabelEncoder", ["ids"], ["le_if"], domain=ML, keys_int64s=[3, 7, 11],
                         values_floats=[0.5, -1.5, 2.0], default_float=9.0),
        helper.make_node("LabelEncoder", ["x"], ["le_fi"], domain=ML, keys_floats=[0.5, np.nan, 1.0],
                         values_int64s=[10, 20, 30]),
        helper.make_node("OneHotEncoder", ["ids"], ["ohe"], domain=ML, cats_int64s=[7, 3, 100, 5], zeros=1),
    ]
    v5 = [n for n in nodes if n.op_type == "TreeEnsemble"]
    v3 = [n for n in nodes if n.op_type != "TreeEnsemble"]
    outputs = [vi(n, F, [6, 2]) for n in ["t_sum", "t_avg", "t_max", "lr"]] + [
        vi("lc_label", TensorProto.INT64, [6]), vi("lc_scores", F, [6, 3]),
        vi("bc_label", TensorProto.INT64, [6]), vi("bc_scores", F, [6, 2]),
        vi("idf", F, [3, 6]), vi("tfidf", F, [3, 6]),
        vi("le_if", F, [2, 3]), vi("le_fi", TensorProto.INT64, [6, 3]), vi("ohe", F, [2, 3, 4])]
    save_ort_case("ml_models", v3, [vi("x", F, [6, 3]), vi("tokens", TensorProto.INT32, [3, 8]),
                                    vi("ids", TensorProto.INT64, [2, 3])], outputs,
                  [x, tokens, ids], ml_opset=3)
    save_ort_case("tree_ensemble5", v5, [vi("x", F, [6, 3])], [vi("t5", F, [6, 2])], [x], ml_opset=5)


def deform_conv_cases():
    """DeformConv beyond the node suite's cases: two convolution groups,
    two offset groups, strides, dilations, asymmetric pads, offsets that
    move taps outside the image, a mask and a bias; expected outputs from
    the reference evaluator."""
    x = randf(2, 4, 6, 7)
    w = randf(6, 2, 2, 3)
    offset = randf(2, 2 * 2 * 6, 3, 3, low=-2.5, high=2.5)
    mask = randf(2, 2 * 6, 3, 3, low=0.0, high=1.0)
    b = randf(6)
    node = helper.make_node("DeformConv", ["x", "w", "offset", "b", "mask"], ["y"], group=2, offset_group=2,
                            strides=[2, 2], dilations=[2, 1], pads=[1, 0, 0, 1], kernel_shape=[2, 3])
    save_case("deform_conv_groups", [node],
              [vi("x", F, [2, 4, 6, 7]), vi("w", F, [6, 2, 2, 3]), vi("offset", F, [2, 24, 3, 3]),
               vi("b", F, [6]), vi("mask", F, [2, 12, 3, 3])],
              [vi("y", F, [2, 6, 3, 3])], [x, w, offset, b, mask], opset=19)


def save_ort_case(name, nodes, inputs, outputs, feeds, ml_opset):
    """A model of default-domain opset 17 and ai.onnx.ml `ml_opset` with
    onnxruntime's outputs."""
    import onnxruntime as ort
    graph = helper.make_graph(nodes, name, inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("ai.onnx.ml", ml_opset)],
                              producer_name="tcc test/onnx/gen.py")
    model.ir_version = 10
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = session.run(None, dict(zip([i.name for i in inputs], feeds)))
    directory = os.path.join(MODELS, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    onnx.save_model(model, os.path.join(directory, "model.onnx"))
    for kind, values, infos in [("input", feeds, inputs), ("output", results, outputs)]:
        for i, value in enumerate(values):
            tensor = numpy_helper.from_array(np.asarray(value), infos[i].name)
            with open(os.path.join(directory, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())


def roi_cases():
    """RoiAlign with run-time rois: two images, regions partly outside the
    image (samples below -1 read 0, others clamp), one past the last
    row, avg and max, both coordinate modes, a spatial scale, sampling
    ratios 1 and 3; expected outputs from the reference evaluator
    (onnxruntime's algorithm)."""
    x = randf(2, 3, 6, 7, low=-1.0, high=2.0)
    rois = np.array([[0.5, 1.0, 5.5, 4.0], [-3.0, -2.0, 4.0, 9.0], [2.0, 2.0, 2.5, 2.2],
                     [6.0, 4.0, 13.0, 11.0]], np.float32)
    idx = np.array([0, 1, 1, 0], np.int64)
    nodes = [
        helper.make_node("RoiAlign", ["x", "rois", "idx"], ["avg"], output_height=3, output_width=2,
                         sampling_ratio=3, spatial_scale=0.75, coordinate_transformation_mode="half_pixel"),
        helper.make_node("RoiAlign", ["x", "rois", "idx"], ["max"], output_height=2, output_width=4,
                         sampling_ratio=1, mode="max", coordinate_transformation_mode="output_half_pixel"),
    ]
    save_case("roi_align", nodes,
              [vi("x", F, [2, 3, 6, 7]), vi("rois", F, [4, 4]), vi("idx", TensorProto.INT64, [4])],
              [vi("avg", F, [4, 3, 3, 2]), vi("max", F, [4, 3, 2, 4])], [x, rois, idx], opset=16)


def legacy_opset_cases():
    """Models of opsets before 6, whose ops read attributes that later
    became inputs or changed type, checked against numpy (onnxruntime runs
    opset 7 and later only; onnx's reference evaluator lacks these
    versions): Reshape-1's `shape` attribute, Concat-1's default axis,
    Pad-1's `paddings`, Cast-1's type names, Split-1's sizes as an input,
    Add-1's legacy `broadcast`/`axis`, Tile-1's `tiles` and `axis`,
    GlobalLpPool-1's float `p`, `consumed_inputs` everywhere it was
    declared; and a model of IR version 2, which has no opset imports (its
    ops are opset 1's). Its own random generator, so that it can be
    regenerated alone (`python3 test/onnx/gen.py legacy`)."""
    g = np.random.default_rng(41)
    x = (g.uniform(-3.0, 3.0, size=(2, 3, 4))).astype(np.float32)
    b = g.uniform(-1.0, 1.0, size=(10,)).astype(np.float32)
    img = g.uniform(-1.0, 1.0, size=(1, 2, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["relu"], consumed_inputs=[0]),
        helper.make_node("Reshape", ["relu"], ["flat"], shape=[2, 12]),
        helper.make_node("Concat", ["flat", "flat"], ["joined"]),
        helper.make_node("Pad", ["joined"], ["padded"], paddings=[0, 1, 0, 1], value=0.5),
        helper.make_node("Cast", ["padded"], ["ints"], to="INT32"),
        helper.make_node("Cast", ["ints"], ["floats"], to="FLOAT"),
        helper.make_node("Split", ["floats", "sizes"], ["left", "right"], axis=1),
        helper.make_node("Add", ["left", "b"], ["shifted"], broadcast=1, axis=1),
        helper.make_node("Tile", ["right", "tiles", "tile_axis"], ["tiled"]),
        helper.make_node("GlobalLpPool", ["img"], ["lp"], p=2.0),
    ]
    inits = [init("b", b), init("sizes", np.array([10, 16], dtype=np.int64)),
             init("tiles", np.array(2, dtype=np.int64)), init("tile_axis", np.array(0, dtype=np.int64))]

    def expected(x, img):
        flat = np.maximum(x, 0).reshape(2, 12)
        joined = np.concatenate([flat, flat], axis=1)
        padded = np.pad(joined, ((0, 0), (1, 1)), constant_values=0.5)
        floats = padded.astype(np.int32).astype(np.float32)
        left, right = floats[:, :10], floats[:, 10:]
        lp = np.sqrt((img.astype(np.float64) ** 2).sum(axis=(2, 3), keepdims=True)).astype(np.float32)
        return {0: left + b[None, :], 1: np.tile(right, (2, 1)), 2: lp}

    save_case("legacy_opset1", nodes, [vi("x", F, [2, 3, 4]), vi("img", F, [1, 2, 3, 3])],
              [vi("shifted", F, [2, 10]), vi("tiled", F, [4, 16]), vi("lp", F, [1, 2, 1, 1])],
              [x, img], initializers=inits, opset=1, expected=expected, evaluate=False)

    # Opset 5: Reshape's shape is an input from here on, Concat still
    # defaults its axis (to 3), BatchNormalization with is_test and
    # consumed_inputs (to 5), Mul with legacy broadcast along the channels.
    scale = g.uniform(0.5, 1.5, size=(3,)).astype(np.float32)
    bias = g.uniform(-0.5, 0.5, size=(3,)).astype(np.float32)
    mean = g.uniform(-0.2, 0.2, size=(3,)).astype(np.float32)
    var = g.uniform(0.5, 1.5, size=(3,)).astype(np.float32)
    gain = g.uniform(-2.0, 2.0, size=(3,)).astype(np.float32)
    images = g.uniform(-1.0, 1.0, size=(2, 3, 2, 2)).astype(np.float32)
    nodes = [
        helper.make_node("BatchNormalization", ["images", "scale", "bias", "mean", "var"], ["normed"],
                         is_test=1, epsilon=1e-3, consumed_inputs=[0, 0, 0, 1, 1]),
        helper.make_node("Mul", ["normed", "gain"], ["gained"], broadcast=1, axis=1),
        helper.make_node("Reshape", ["gained", "shape"], ["rows"]),
    ]
    inits = [init("scale", scale), init("bias", bias), init("mean", mean), init("var", var), init("gain", gain),
             init("shape", np.array([2, 12], dtype=np.int64))]

    def expected5(images):
        normed = (images - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-3)
        normed = normed * scale[None, :, None, None] + bias[None, :, None, None]
        return {0: (normed * gain[None, :, None, None]).reshape(2, 12).astype(np.float32)}

    save_case("legacy_opset5", nodes, [vi("images", F, [2, 3, 2, 2])], [vi("rows", F, [2, 12])], [images],
              initializers=inits, opset=5, expected=expected5, evaluate=False)

    # IR version 2: no opset imports at all; Reshape-1 and Sum-1 with
    # consumed_inputs.
    nodes = [
        helper.make_node("Sum", ["x", "x"], ["twice"], consumed_inputs=[0, 0]),
        helper.make_node("Reshape", ["twice"], ["y"], shape=[6, 4]),
    ]
    graph = helper.make_graph(nodes, "ir2", [vi("x", F, [2, 3, 4])], [vi("y", F, [6, 4])])
    model = helper.make_model(graph, producer_name="tcc test/onnx/gen.py")
    del model.opset_import[:]
    model.ir_version = 2
    directory = os.path.join(MODELS, "legacy_ir2")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    onnx.save_model(model, os.path.join(directory, "model.onnx"))
    for name, value in [("input_0", x), ("output_0", (2 * x).reshape(6, 4))]:
        with open(os.path.join(directory, "test_data_set_0", f"{name}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(value).SerializeToString())


def integer_pool_cases():
    """MaxPool on integer tensors (int8 and uint8 since opset 12): padded
    windows over negative int8 values (the padding must never win), with
    and without the Indices output, a dilated uint8 pool with ceil_mode
    (the linalg form); numpy references (onnx's reference evaluator pads
    integers with NaN). Its own random
    generator (`python3 test/onnx/gen.py integer_pools`)."""
    g = np.random.default_rng(43)
    x8 = g.integers(-128, 0, size=(1, 2, 5, 5)).astype(np.int8)
    xu = g.integers(0, 256, size=(1, 3, 6, 6)).astype(np.uint8)
    nodes = [
        helper.make_node("MaxPool", ["x8"], ["y8"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("MaxPool", ["xu"], ["yu"], kernel_shape=[2, 2], dilations=[2, 2], ceil_mode=1,
                         strides=[2, 2]),
        helper.make_node("MaxPool", ["x8"], ["y8i", "where"], kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
    ]
    def pool(x, kernel, pads=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1), ceil=False):
        """2-D MaxPool and its Indices (the first maximum in window order,
        indices into the flattened NCHW input)."""
        n, c, h, w = x.shape
        extent = [(kernel[i] - 1) * dilations[i] + 1 for i in range(2)]
        size = [h, w]
        out = []
        for i in range(2):
            span = size[i] + pads[i] + pads[i + 2] - extent[i]
            out.append((-(-span // strides[i]) if ceil else span // strides[i]) + 1)
        y = np.zeros((n, c, out[0], out[1]), dtype=x.dtype)
        where = np.zeros((n, c, out[0], out[1]), dtype=np.int64)
        for b, ch, oy, ox in np.ndindex(n, c, out[0], out[1]):
            best = None
            for ky, kx in np.ndindex(kernel[0], kernel[1]):
                iy = oy * strides[0] - pads[0] + ky * dilations[0]
                ix = ox * strides[1] - pads[1] + kx * dilations[1]
                if 0 <= iy < h and 0 <= ix < w and (best is None or x[b, ch, iy, ix] > best[0]):
                    best = (x[b, ch, iy, ix], ((b * c + ch) * h + iy) * w + ix)
            y[b, ch, oy, ox], where[b, ch, oy, ox] = best
        return y, where

    def expected(x8, xu):
        y8, _ = pool(x8, (3, 3), pads=(1, 1, 1, 1), strides=(2, 2))
        yu, _ = pool(xu, (2, 2), strides=(2, 2), dilations=(2, 2), ceil=True)
        y8i, where = pool(x8, (2, 2), pads=(1, 1, 0, 0))
        return {0: y8, 1: yu, 2: y8i, 3: where}

    save_case("integer_max_pools", nodes,
              [vi("x8", TensorProto.INT8, [1, 2, 5, 5]), vi("xu", TensorProto.UINT8, [1, 3, 6, 6])],
              [vi("y8", TensorProto.INT8, [1, 2, 3, 3]), vi("yu", TensorProto.UINT8, [1, 3, 3, 3]),
               vi("y8i", TensorProto.INT8, [1, 2, 5, 5]), vi("where", TensorProto.INT64, [1, 2, 5, 5])],
              [x8, xu], opset=12, expected=expected, evaluate=False)


def grouped_conv_cases():
    """Grouped convolutions (1 < group < channels), which tcc runs as one
    kernel each (`tcc-merge-grouped-convs`): 1x1 with bias and ReLU, 3x3
    strided and padded, 3x3 dilated with asymmetric pads and no bias, 5x5
    with a BatchNorm and ReLU (folded into each group first), a 1-D one,
    one whose input is an inner value (after a plain convolution), one
    that shares its concat with a pool branch (ShuffleNet's downsampling
    unit) and one followed by ShuffleNet's channel shuffle (which becomes
    its output order). Constant weights; its own random generator, so that it can be
    regenerated alone (`python3 test/onnx/gen.py grouped_convs`)."""
    g = np.random.default_rng(37)

    def r(*shape):
        return g.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    inits = [init("w1", r(24, 4, 1, 1)), init("b1", r(24)),
             init("w2", r(32, 4, 3, 3)), init("b2", r(32)),
             init("w3", r(6, 4, 3, 3)),
             init("w4", r(64, 4, 5, 5)), init("b4", r(64)),
             init("bn_s", r(64) + 1.5), init("bn_b", r(64)), init("bn_m", r(64) * 0.1), init("bn_v", r(64) + 1.5),
             init("w5", r(8, 3, 3)), init("b5", r(8)),
             init("w6a", r(12, 6, 3, 3)), init("w6", r(24, 4, 1, 1)), init("b6", r(24)),
             init("w7", r(12, 3, 1, 1)),
             init("w8", r(8, 2, 1, 1)), init("b8", r(8)),
             init("split8", np.array([1, 4, 2, 4, 4], dtype=np.int64)),
             init("merge8", np.array([1, 8, 4, 4], dtype=np.int64))]
    nodes = [
        helper.make_node("Conv", ["x1", "w1", "b1"], ["c1"], group=3),
        helper.make_node("Relu", ["c1"], ["y1"]),
        helper.make_node("Conv", ["x2", "w2", "b2"], ["y2"], group=4, kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x3", "w3"], ["y3"], group=2, kernel_shape=[3, 3], dilations=[2, 2],
                         pads=[0, 1, 2, 1]),
        helper.make_node("Conv", ["x4", "w4", "b4"], ["c4"], group=8, kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
        helper.make_node("BatchNormalization", ["c4", "bn_s", "bn_b", "bn_m", "bn_v"], ["n4"]),
        helper.make_node("Relu", ["n4"], ["y4"]),
        helper.make_node("Conv", ["x5", "w5", "b5"], ["y5"], group=2, kernel_shape=[3], strides=[2], pads=[1, 1]),
        helper.make_node("Conv", ["x6", "w6a"], ["c6"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c6", "w6", "b6"], ["y6"], group=3),
        helper.make_node("Conv", ["x7", "w7"], ["c7"], group=4, strides=[2, 2]),
        helper.make_node("AveragePool", ["x7"], ["p7"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["c7", "p7"], ["y7"], axis=1),
        helper.make_node("Conv", ["x8", "w8", "b8"], ["c8"], group=4),
        helper.make_node("Relu", ["c8"], ["r8"]),
        helper.make_node("Reshape", ["r8", "split8"], ["s8"]),
        helper.make_node("Transpose", ["s8"], ["t8"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t8", "merge8"], ["y8"]),
    ]
    shapes = {"x1": [1, 12, 5, 6], "x2": [1, 16, 9, 9], "x3": [2, 8, 7, 6], "x4": [1, 32, 6, 6],
              "x5": [1, 6, 11], "x6": [1, 6, 5, 5], "x7": [1, 12, 6, 6], "x8": [1, 8, 4, 4]}
    outputs = {"y1": [1, 24, 5, 6], "y2": [1, 32, 5, 5], "y3": [2, 6, 5, 4], "y4": [1, 64, 6, 6],
               "y5": [1, 8, 6], "y6": [1, 24, 5, 5], "y7": [1, 24, 3, 3], "y8": [1, 8, 4, 4]}
    save_case("grouped_convs", nodes, [vi(n, F, s) for n, s in shapes.items()],
              [vi(n, F, s) for n, s in outputs.items()], [r(*s) for s in shapes.values()], initializers=inits)


def one_position_scatter_cases():
    """ScatterElements with one update per position along its axis (a
    key/value cache written one token a step), which tcc imports as an
    elementwise op reading the data as an input rather than a reduction
    into a copy of it: without a reduction, with negative indices, with
    `add` and `max` reductions, with indices shorter than the data on
    another axis (padded), and on an integer tensor. Its own random
    generator (`python3 test/onnx/gen.py scatters`)."""
    g = np.random.default_rng(51)
    x = g.uniform(-1, 1, size=(3, 5, 4)).astype(np.float32)
    at = g.integers(-5, 5, size=(3, 1, 4)).astype(np.int64)
    rows = g.uniform(-1, 1, size=(3, 1, 4)).astype(np.float32)
    at2 = g.integers(0, 5, size=(2, 1, 3)).astype(np.int64)
    rows2 = g.uniform(-1, 1, size=(2, 1, 3)).astype(np.float32)
    counts = g.integers(-9, 9, size=(3, 5, 4)).astype(np.int64)
    nodes = [
        helper.make_node("ScatterElements", ["x", "at", "rows"], ["written"], axis=1),
        helper.make_node("ScatterElements", ["x", "at", "rows"], ["added"], axis=-2, reduction="add"),
        helper.make_node("ScatterElements", ["x", "at2", "rows2"], ["maxed"], axis=1, reduction="max"),
        helper.make_node("ScatterElements", ["counts", "at", "steps"], ["counted"], axis=1, reduction="add"),
    ]
    save_case("scatter_one_position", nodes,
              [vi("x", F, [3, 5, 4]), vi("at", I64, [3, 1, 4]), vi("rows", F, [3, 1, 4]),
               vi("at2", I64, [2, 1, 3]), vi("rows2", F, [2, 1, 3]), vi("counts", I64, [3, 5, 4])],
              [vi("written", F, [3, 5, 4]), vi("added", F, [3, 5, 4]), vi("maxed", F, [3, 5, 4]),
               vi("counted", I64, [3, 5, 4])],
              [x, at, rows, at2, rows2, counts],
              [init("steps", np.arange(12, dtype=np.int64).reshape(3, 1, 4))],
              opset=18)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["roi"]:
        roi_cases()
        sys.exit(0)
    if sys.argv[1:] == ["ml"]:
        ml_cases()
        sys.exit(0)
    if sys.argv[1:] == ["deform_conv"]:
        deform_conv_cases()
        sys.exit(0)
    if sys.argv[1:] == ["ml_models"]:
        ml_model_cases()
        sys.exit(0)
    if sys.argv[1:] == ["runtime_params"]:
        runtime_param_cases()
        sys.exit(0)
    if sys.argv[1:] == ["det"]:
        det_cases()
        sys.exit(0)
    if sys.argv[1:] == ["grouped_convs"]:
        grouped_conv_cases()
        sys.exit(0)
    if sys.argv[1:] == ["legacy"]:
        legacy_opset_cases()
        sys.exit(0)
    if sys.argv[1:] == ["integer_pools"]:
        integer_pool_cases()
        sys.exit(0)
    if sys.argv[1:] == ["scatters"]:
        one_position_scatter_cases()
        sys.exit(0)
    if sys.argv[1:] == ["element_types"]:
        element_type_cases()
        sys.exit(0)
    cases()
    quantized_cases()
    one_position_scatter_cases()
    bad_models()
    feature_models()
    index_cases()
    spatial_cases()
    recurrent_cases()
    control_flow_cases()
    sequence_cases()
    signal_cases()
    loss_cases()
    hostile_reductions()
    det_cases()
    ml_cases()
    ml_model_cases()
    deform_conv_cases()
    roi_cases()
    element_type_cases()
    runtime_param_cases()
    grouped_conv_cases()
    legacy_opset_cases()
    integer_pool_cases()
