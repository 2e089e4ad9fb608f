"""Writes the dynamic-batch test models (compiler/tests/dynamic_shapes.rs):
graphs whose inputs declare `dim_param: "batch"` as exporters write them.

    python3 models.py OUT_DIR

- mlp.onnx: x[batch, 32] -> MatMul(32x64) + Add -> Relu -> MatMul(64x10) +
  Add -> Softmax(axis=-1) -> y[batch, 10]
- cnn.onnx: x[batch, 3, 16, 16] -> Conv(8, 3x3, pad 1) -> Relu ->
  MaxPool(2x2) -> GlobalAveragePool -> Flatten -> Gemm(8x10) -> y[batch, 10]
- two_inputs.onnx: a[batch, 16] + b[batch, 16] -> Relu -> y[batch, 16]
  (two inputs tied by the same dimension)
- shape_of.onnx: x[batch, 4] -> Shape -> y (a value computed from the
  dimension, which the importer cannot keep symbolic yet)
- layer_norm.onnx: x[batch, 16] -> LayerNormalization(axis=-1) -> y
  (a row normalization over the static inner axis)
- sum_over_batch.onnx: x[batch, 4] -> ReduceSum(axes=[0]) -> y[1, 4] (a
  reduction over the symbolic dimension, outside the first dynamic slice)
- depthwise.onnx: x[batch, 8, 10, 10] -> Conv(group 8, 3x3, pad 1) -> Relu ->
  GlobalAveragePool -> Mul(x's pool) -> y[batch, 8, 1, 1] (a depthwise
  convolution and a broadcast product on a symbolic batch)
- tokens.onnx: x[batch, sequence, 8] -> Relu -> y[batch, sequence, 8] (two
  dynamic axes: a symbolic batch with the sequence fixed by --fix-dim)
- encoder.onnx: x[batch, 16, 32], mask[batch, 16] -> one BERT-style encoder
  layer (two heads of 16): Q/K/V products, heads split by a Reshape whose
  shape is computed from Shape(x) as torch's exporter writes it, scaled
  QK^T plus the padding mask, Softmax, .V, heads merged, output product,
  residual and LayerNormalization, a GELU feed-forward of 64, residual and
  LayerNormalization -> y[batch, 16, 32]
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(name, shape, seed):
    rng = np.random.default_rng(seed)
    data = rng.uniform(-0.5, 0.5, size=shape).astype(np.float32)
    return numpy_helper.from_array(data, name)


def save(graph, path):
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="tcc-dynamic-tests",
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def mlp(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Add", ["h1", "b1"], ["h2"], name="bias1"),
        helper.make_node("Relu", ["h2"], ["h3"], name="relu"),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"], name="fc2"),
        helper.make_node("Add", ["h4", "b2"], ["h5"], name="bias2"),
        helper.make_node("Softmax", ["h5"], ["y"], name="softmax", axis=-1),
    ]
    inits = [
        weight("w1", (32, 64), 1),
        weight("b1", (64,), 2),
        weight("w2", (64, 10), 3),
        weight("b2", (10,), 4),
    ]
    save(helper.make_graph(nodes, "mlp", [x], [y], inits), path)


def cnn(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])
    nodes = [
        helper.make_node(
            "Conv", ["x", "wc", "bc"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]
        ),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1),
    ]
    inits = [
        weight("wc", (8, 3, 3, 3), 5),
        weight("bc", (8,), 6),
        weight("wf", (10, 8), 7),
        weight("bf", (10,), 8),
    ]
    save(helper.make_graph(nodes, "cnn", [x], [y], inits), path)


def two_inputs(path):
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 16])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    nodes = [
        helper.make_node("Add", ["a", "b"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    save(helper.make_graph(nodes, "two_inputs", [a, b], [y]), path)


def shape_of(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [2])
    nodes = [helper.make_node("Shape", ["x"], ["y"], name="shape_of_x")]
    save(helper.make_graph(nodes, "shape_of", [x], [y]), path)


def layer_norm(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])
    nodes = [
        helper.make_node(
            "LayerNormalization", ["x", "gamma", "beta"], ["y"], name="ln", axis=-1, epsilon=1e-5
        )
    ]
    inits = [weight("gamma", (16,), 9), weight("beta", (16,), 10)]
    save(helper.make_graph(nodes, "layer_norm", [x], [y], inits), path)


def sum_over_batch(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    axes = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes")
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum_batch", keepdims=1)]
    save(helper.make_graph(nodes, "sum_over_batch", [x], [y], [axes]), path)


def depthwise(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 10, 10])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="dw", group=8, pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("GlobalAveragePool", ["x"], ["q"], name="pool_x"),
        helper.make_node("Mul", ["p", "q"], ["y"], name="gate"),
    ]
    inits = [weight("w", (8, 1, 3, 3), 30), weight("b", (8,), 31)]
    save(helper.make_graph(nodes, "depthwise", [x], [y], inits), path)


def tokens(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "sequence", 8])
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    save(helper.make_graph(nodes, "tokens", [x], [y]), path)


def constants_of_the_batch(path):
    """Values the import computes from the batch's extent: a row expanded
    to it (a class token), positions counted along it (Range of Shape, cast
    to float), integer positions gathering x's rows again, and a splat of
    its shape (ConstantOfShape), the positions compared with a run-time
    input, and a table of 16 rows gathered by the positions (folded to
    the table's first `batch` rows: cut at run time): y = x + row + pos *
    w + x[pos] + 2 + 100 * (ids == pos) + table[pos], table[i][j] = (i *
    i - 3 * j) / 8."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    const = lambda name, values, dtype=np.float32: numpy_helper.from_array(np.array(values, dtype=dtype), name)
    inits = [
        const("row", [[1.0, -2.0, 0.5, 3.0]]),
        const("w", [[0.25, -1.0, 2.0, 0.0]]),
        const("zero", 0, np.int64), const("one", 1, np.int64),
        const("last_axis", [1], np.int64),
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Expand", ["row", "shape"], ["rows"], name="class_token"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="batch", axis=0),
        helper.make_node("Range", ["zero", "batch", "one"], ["pos"], name="positions"),
        helper.make_node("Unsqueeze", ["pos", "last_axis"], ["pos2"], name="pos_column"),
        helper.make_node("Cast", ["pos2"], ["posf"], name="pos_float", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["posf", "w"], ["scaled"], name="scaled"),
        helper.make_node("Gather", ["x", "pos"], ["looked_up"], name="lookup", axis=0),
        helper.make_node("ConstantOfShape", ["shape"], ["twos"], name="twos",
                         value=numpy_helper.from_array(np.array([2.0], dtype=np.float32))),
        helper.make_node("Add", ["x", "rows"], ["a"], name="add_row"),
        helper.make_node("Add", ["a", "scaled"], ["b"], name="add_pos"),
        helper.make_node("Add", ["b", "looked_up"], ["c"], name="add_lookup"),
        helper.make_node("Add", ["c", "twos"], ["d"], name="add_twos"),
        helper.make_node("Equal", ["ids", "pos"], ["same"], name="same"),
        helper.make_node("Cast", ["same"], ["samef"], name="same_float", to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["samef", "last_axis"], ["same2"], name="same_column"),
        helper.make_node("Mul", ["same2", "hundred"], ["bonus"], name="bonus"),
        helper.make_node("Add", ["d", "bonus"], ["e"], name="add_bonus"),
        helper.make_node("Gather", ["table", "pos"], ["table_rows"], name="table_rows", axis=0),
        helper.make_node("Add", ["e", "table_rows"], ["y"], name="add_table"),
    ]
    inits.append(const("hundred", [[100.0]]))
    inits.append(const("table", [[(i * i - 3 * j) / 8 for j in range(4)] for i in range(16)]))
    save(helper.make_graph(nodes, "constants_of_the_batch", [x, ids], [y], inits), path)


def encoder(path, seq=16, hidden=32, heads=2, ffn=64, layers=1, tiled=False):
    """`layers` encoder layers; `tiled` fills every weight from one small
    random block (low-entropy weights, so that a BERT-base-sized model
    compresses for the GPU machine: `bench` below)."""
    head = hidden // heads
    block = np.random.default_rng(99).uniform(-0.05, 0.05, size=4096).astype(np.float32)

    def weight(name, shape, seed):
        if not tiled:
            return globals()["weight"](name, shape, seed)
        n = int(np.prod(shape))
        return numpy_helper.from_array(np.resize(block, n).reshape(shape), name)

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, hidden])
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", seq])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", seq, hidden])

    def const(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    inits = [
        const("zero", [0]),
        const("split_tail", [seq, heads, head]),
        const("merge_tail", [seq, hidden]),
        const("mask_axes", [1, 2]),
        numpy_helper.from_array(np.array(float(head) ** 0.5, dtype=np.float32), "scale"),
        numpy_helper.from_array(np.array(-10000.0, dtype=np.float32), "big_negative"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
        numpy_helper.from_array(np.array(2.0 ** -0.5, dtype=np.float32), "rsqrt2"),
    ]
    node = helper.make_node
    nodes = [
        # The batch read from x's shape, as torch's exporter computes reshape targets.
        node("Shape", ["x"], ["x_shape"], name="shape"),
        node("Gather", ["x_shape", "zero"], ["batch"], name="batch_of_x", axis=0),
        node("Concat", ["batch", "split_tail"], ["split_shape"], name="split_shape", axis=0),
        node("Concat", ["batch", "merge_tail"], ["merge_shape"], name="merge_shape", axis=0),
        node("Sub", ["one", "mask"], ["masked_out"], name="invert_mask"),
        node("Mul", ["masked_out", "big_negative"], ["mask_add"], name="mask_values"),
        node("Unsqueeze", ["mask_add", "mask_axes"], ["mask_4d"], name="mask_4d"),
    ]
    seed = 20
    previous = "x"
    for layer in range(layers):
        def n(name):
            return name if layers == 1 else f"l{layer}_{name}"
        for name, shape in [("wq", (hidden, hidden)), ("wk", (hidden, hidden)), ("wv", (hidden, hidden)),
                            ("wo", (hidden, hidden)), ("w1", (hidden, ffn)), ("w2", (ffn, hidden))]:
            inits.append(weight(n(name), shape, seed))
            inits.append(weight(n("b" + name[1:]), (shape[1],), seed + 1))
            seed += 2
        for name in ["ln1", "ln2"]:
            inits.append(numpy_helper.from_array(
                np.random.default_rng(seed).uniform(0.5, 1.5, size=(hidden,)).astype(np.float32), n(name + "_g")))
            inits.append(weight(n(name + "_b"), (hidden,), seed + 1))
            seed += 2
        output = "y" if layer == layers - 1 else n("out")
        for p in "qkv":
            nodes += [
                node("MatMul", [previous, n("w" + p)], [n(p + "_mm")], name=n(p + "_proj")),
                node("Add", [n(p + "_mm"), n("b" + p)], [n(p + "_b")], name=n(p + "_bias")),
                node("Reshape", [n(p + "_b"), "split_shape"], [n(p + "_heads")], name=n(p + "_split")),
            ]
        nodes += [
            node("Transpose", [n("q_heads")], [n("q_t")], name=n("q_t"), perm=[0, 2, 1, 3]),
            node("Transpose", [n("k_heads")], [n("k_t")], name=n("k_t"), perm=[0, 2, 3, 1]),
            node("Transpose", [n("v_heads")], [n("v_t")], name=n("v_t"), perm=[0, 2, 1, 3]),
            node("MatMul", [n("q_t"), n("k_t")], [n("scores")], name=n("qk")),
            node("Div", [n("scores"), "scale"], [n("scaled")], name=n("scale_scores")),
            node("Add", [n("scaled"), "mask_4d"], [n("masked")], name=n("apply_mask")),
            node("Softmax", [n("masked")], [n("probs")], name=n("softmax"), axis=-1),
            node("MatMul", [n("probs"), n("v_t")], [n("context")], name=n("pv")),
            node("Transpose", [n("context")], [n("context_t")], name=n("context_t"), perm=[0, 2, 1, 3]),
            node("Reshape", [n("context_t"), "merge_shape"], [n("merged")], name=n("merge_heads")),
            node("MatMul", [n("merged"), n("wo")], [n("o_mm")], name=n("o_proj")),
            node("Add", [n("o_mm"), n("bo")], [n("o_b")], name=n("o_bias")),
            node("Add", [n("o_b"), previous], [n("res1")], name=n("residual1")),
            node("LayerNormalization", [n("res1"), n("ln1_g"), n("ln1_b")], [n("h1")], name=n("ln1"), axis=-1,
                 epsilon=1e-12),
            node("MatMul", [n("h1"), n("w1")], [n("f_mm")], name=n("ffn_up")),
            node("Add", [n("f_mm"), n("b1")], [n("f_b")], name=n("ffn_bias")),
            node("Mul", [n("f_b"), "rsqrt2"], [n("f_s")], name=n("gelu_scale")),
            node("Erf", [n("f_s")], [n("f_erf")], name=n("gelu_erf")),
            node("Add", [n("f_erf"), "one"], [n("f_1")], name=n("gelu_add")),
            node("Mul", [n("f_b"), n("f_1")], [n("f_m")], name=n("gelu_mul")),
            node("Mul", [n("f_m"), "half"], [n("f_g")], name=n("gelu_half")),
            node("MatMul", [n("f_g"), n("w2")], [n("d_mm")], name=n("ffn_down")),
            node("Add", [n("d_mm"), n("b2")], [n("d_b")], name=n("ffn_down_bias")),
            node("Add", [n("d_b"), n("h1")], [n("res2")], name=n("residual2")),
            node("LayerNormalization", [n("res2"), n("ln2_g"), n("ln2_b")], [output], name=n("ln2"), axis=-1,
                 epsilon=1e-12),
        ]
        previous = output
    save(helper.make_graph(nodes, "encoder", [x, mask], [y], inits), path)


if __name__ == "__main__":
    if sys.argv[1] == "bench":
        # python3 models.py bench OUT: a BERT-base-sized encoder (4 layers,
        # hidden 768, 12 heads, seq 128) with tiled weights, for timing the
        # dynamic artifacts on a GPU (docs/architecture.md, "Dynamic shapes").
        os.makedirs(sys.argv[2], exist_ok=True)
        encoder(os.path.join(sys.argv[2], "encoder_base.onnx"), seq=128, hidden=768, heads=12, ffn=3072,
                layers=4, tiled=True)
        sys.exit(0)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlp(os.path.join(out, "mlp.onnx"))
    cnn(os.path.join(out, "cnn.onnx"))
    two_inputs(os.path.join(out, "two_inputs.onnx"))
    shape_of(os.path.join(out, "shape_of.onnx"))
    layer_norm(os.path.join(out, "layer_norm.onnx"))
    sum_over_batch(os.path.join(out, "sum_over_batch.onnx"))
    encoder(os.path.join(out, "encoder.onnx"))
    tokens(os.path.join(out, "tokens.onnx"))
    depthwise(os.path.join(out, "depthwise.onnx"))
    constants_of_the_batch(os.path.join(out, "constants_of_the_batch.onnx"))
