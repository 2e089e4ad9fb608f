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


def save_case(name, nodes, inputs, outputs, feeds, initializers=(), opset=17, external=False, expected=None):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tcc test/onnx/gen.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    directory = os.path.join(MODELS, name)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(os.path.join(directory, "test_data_set_0"))
    reference = ReferenceEvaluator(model)
    results = reference.run(None, dict(zip([i.name for i in inputs], feeds)))
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
                            helper.make_node("Det", ["r"], ["y"], name="the_det")],
         [vi("x", F, [2, 3, 3])], [vi("y", F, [2])])
    save("dynamic_shape", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, ["N", 3])], [vi("y", F, ["N", 3])])
    save("unsupported_dtype", [helper.make_node("Identity", ["x"], ["y"])], [vi("x", TensorProto.UINT16, [4])],
         [vi("y", TensorProto.UINT16, [4])])
    save("runtime_shape", [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape_by_input")],
         [vi("x", F, [2, 3]), vi("shape", I64, [2])], [vi("y", F, [3, 2])])
    save("custom_domain", [helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft", name="fused")],
         [vi("x", F, [2, 2])], [vi("y", F, [2, 2])], domains=["com.microsoft"])
    save("invalid_dim", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [-5, 3])], [vi("y", F, [-5, 3])])
    save("opset_too_new", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", F, [2])], [vi("y", F, [2])], opset=23)
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


if __name__ == "__main__":
    cases()
    quantized_cases()
    bad_models()
    feature_models()
    index_cases()
