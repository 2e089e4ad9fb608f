"""Test models: gathers, pooling, depthwise and other convolutions, softmax,
transformer and MLP blocks, matmul shapes, fusion edges and the
function-boundary cases (rank 0, booleans, two functions, calls)."""

from model import Model, T, f


def tile():
    m = Model("tile")
    mult = m.shape("mult", [2, 3])
    m.emit(f"%t = tosa.tile %x, {mult} : ({T([2,3])}, !tosa.shape<2>) -> {T([4,9])}")
    mult3 = m.shape("mult3", [3, 1, 2])
    m.reshape("x3", "%x", [2, 3], [1, 2, 3])
    m.emit(f"%t3 = tosa.tile %x3, {mult3} : ({T([1,2,3])}, !tosa.shape<3>) -> {T([3,2,6])}")
    k = m.const("k", [3, 2, 6], 0.5)
    m.binary("sub", "y", "%t3", k, [3, 2, 6], [3, 2, 6], [3, 2, 6])
    header = """// tile: 2x3 tiled (2, 3) -> 4x9, and 1x2x3 tiled (3, 1, 2) -> 3x2x6
// followed by a subtraction of a constant. Input 2x3.
// Data movement and one exactly rounded sub: bit-exact.
// TOLERANCE: 0 0"""
    return header, m.text([f("x", [2, 3])], [("%t", [4, 9], "f32"), ("%y", [3, 2, 6], "f32")])


def gather():
    m = Model("gather")
    m.emit(f"%g = tosa.gather %values, %idx : ({T([2,8,4])}, {T([2,5], 'i32')}) -> {T([2,5,4])}")
    table = m.const("table", [1, 10, 6], 1.0)
    m.emit(f"%e = tosa.gather {table}, %tok : ({T([1,10,6])}, {T([1,4], 'i32')}) -> {T([1,4,6])}")
    header = """// gather: rows of an input 2x8x4 at i32 indices 2x5 in [0, 7], and an
// embedding lookup of a constant table 1x10x6 at token ids 1x4 in [0, 9].
// Data movement: bit-exact.
// INPUT-RANGE: 1 0 7
// INPUT-RANGE: 2 0 9
// TOLERANCE: 0 0"""
    return header, m.text([f("values", [2, 8, 4]), ("idx", [2, 5], "i32"), ("tok", [1, 4], "i32")], [("%g", [2, 5, 4], "f32"), ("%e", [1, 4, 6], "f32")])


def pooling():
    m = Model("pooling")
    m.zp()
    X = [1, 7, 7, 4]
    m.emit(f"%mp = tosa.max_pool2d %x {{kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}} : ({T(X)}) -> {T([1,4,4,4])}")
    m.emit(f"%ap = tosa.avg_pool2d %x, %zp, %zp {{acc_type = f32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}} : ({T(X)}, tensor<1xf32>, tensor<1xf32>) -> {T([1,4,4,4])}")
    m.emit(f"%ap2 = tosa.avg_pool2d %x, %zp, %zp {{acc_type = f32, kernel = array<i64: 2, 3>, pad = array<i64: 0, 1, 1, 1>, stride = array<i64: 1, 2>}} : ({T(X)}, tensor<1xf32>, tensor<1xf32>) -> {T([1,7,4,4])}")
    m.emit(f"%mp2 = tosa.max_pool2d %x {{kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}} : ({T(X)}) -> {T([1,6,6,4])}")
    header = """// Pooling with padding: max_pool2d 3x3 stride 2 pad 1, avg_pool2d 3x3
// stride 2 pad 1 (TOSA divides by the number of non-padding elements),
// avg_pool2d 2x3 stride (1, 2) with asymmetric padding, max_pool2d 2x2
// stride 1. Input 1x7x7x4.
// max is exact; averages of at most 9 values round near 1e-7.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("x", X)], [("%mp", [1, 4, 4, 4], "f32"), ("%ap", [1, 4, 4, 4], "f32"), ("%ap2", [1, 7, 4, 4], "f32"), ("%mp2", [1, 6, 6, 4], "f32")])


def depthwise():
    m = Model("depthwise")
    m.zp()
    X = [1, 7, 7, 4]
    w = m.const("w", [3, 3, 4, 2], 0.4)
    b = m.const("b", [8], 0.2)
    m.emit(f"%y = tosa.depthwise_conv2d %x, {w}, {b}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}} : ({T(X)}, {T([3,3,4,2])}, {T([8])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,4,4,8])}")
    w2 = m.const("w2", [3, 3, 4, 1], 0.4)
    b2 = m.const("b2", [4], 0.2)
    m.emit(f"%y2 = tosa.depthwise_conv2d %x, {w2}, {b2}, %zp, %zp {{acc_type = f32, dilation = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}} : ({T(X)}, {T([3,3,4,1])}, {T([4])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,3,3,4])}")
    header = """// depthwise_conv2d: 3x3, channel multiplier 2, stride 2, pad 1
// (1x7x7x4 -> 1x4x4x8); and 3x3 dilation 2, no padding, multiplier 1
// (1x7x7x4 -> 1x3x3x4). Both with bias.
// Plain arithmetic, 9 products per output.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", X)], [("%y", [1, 4, 4, 8], "f32"), ("%y2", [1, 3, 3, 4], "f32")])


def conv_variants():
    m = Model("conv_variants")
    m.zp()
    X = [1, 9, 9, 3]
    w = m.const("w", [5, 3, 3, 3], 0.4)
    b = m.const("b", [5], 0.2)
    m.emit(f"%s2 = tosa.conv2d %x, {w}, {b}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : ({T(X)}, {T([5,3,3,3])}, {T([5])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,4,4,5])}")
    m.emit(f"%d2 = tosa.conv2d %x, {w}, {b}, %zp, %zp {{acc_type = f32, dilation = array<i64: 2, 2>, pad = array<i64: 1, 0, 0, 1>, stride = array<i64: 1, 1>}} : ({T(X)}, {T([5,3,3,3])}, {T([5])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,6,6,5])}")
    w1 = m.const("w1", [16, 1, 1, 3], 0.5)
    b1 = m.const("b1", [16], 0.2)
    m.emit(f"%pw = tosa.conv2d %x, {w1}, {b1}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}} : ({T(X)}, {T([16,1,1,3])}, {T([16])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,9,9,16])}")
    w3 = m.const("w3", [2, 2, 4, 3], 0.4)
    b3 = m.const("b3", [2], 0.2)
    m.emit(f"%asym = tosa.conv2d %x, {w3}, {b3}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 0, 0, 1>, stride = array<i64: 1, 3>}} : ({T(X)}, {T([2,2,4,3])}, {T([2])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,9,3,2])}")
    header = """// conv2d variants: 3x3 stride 2 (1x9x9x3 -> 1x4x4x5), 3x3 dilation 2 with
// asymmetric padding (-> 1x6x6x5), 1x1 pointwise 3 -> 16 channels, and a
// non-square 2x4 kernel with stride (1, 3) and asymmetric padding
// (-> 1x9x3x2). All with bias.
// Plain arithmetic, at most 27 products per output.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", X)], [("%s2", [1, 4, 4, 5], "f32"), ("%d2", [1, 6, 6, 5], "f32"), ("%pw", [1, 9, 9, 16], "f32"), ("%asym", [1, 9, 3, 2], "f32")])


def softmax_axes():
    m = Model("softmax_axes")
    S = [3, 5, 7]
    m.emit(f"%ls = tcc.log_softmax %x axis = 1 : {T(S)}")
    m.emit(f"%sm = tcc.softmax %x axis = 0 : {T(S)}")
    m.emit(f"%lsl = tcc.log_softmax %x axis = -1 : {T(S)}")
    header = """// tcc.log_softmax over the middle axis and the last axis, tcc.softmax
// over the first axis. Input 3x5x7.
// Transcendental (exp, log; a few ulp in OpenCL); log_softmax values are
// down to about -4.
// TOLERANCE: 2e-6 1e-5"""
    return header, m.text([f("x", S)], [("%ls", S, "f32"), ("%sm", S, "f32"), ("%lsl", S, "f32")])


def fc_silu():
    m = Model("fc_silu")
    m.zp()
    m.reshape("x3", "%x", [2, 16], [1, 2, 16])
    w1 = m.const("w1", [1, 16, 24], 0.3)
    b1 = m.const("b1", [1, 1, 24], 0.2)
    m.matmul("h", "%x3", w1, [1, 2, 16], [1, 16, 24])
    m.binary("add", "hb", "%h", b1, [1, 2, 24], [1, 1, 24], [1, 2, 24])
    m.emit(f"%a = tcc.silu %hb : {T([1,2,24])}")
    w2 = m.const("w2", [1, 24, 8], 0.3)
    b2 = m.const("b2", [1, 1, 8], 0.2)
    m.matmul("o", "%a", w2, [1, 2, 24], [1, 24, 8])
    m.binary("add", "ob", "%o", b2, [1, 2, 8], [1, 1, 8], [1, 2, 8])
    m.reshape("y", "%ob", [1, 2, 8], [2, 8])
    header = """// Two fully-connected layers written the TOSA v1.0 way (reshape to
// rank 3 + matmul + bias add) with tcc.silu between them, and a reshape
// back to rank 2. Input 2x16, output 2x8.
// Sums of up to 24 products plus a sigmoid (exp: a few ulp).
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", [2, 16])], [("%y", [2, 8], "f32")])


def transformer_block():
    m = Model("transformer_block")
    m.zp()
    m.shift()
    S, D, F = 8, 16, 32
    g1 = m.const("g1", [D], 0.3, 1.0)
    be1 = m.const("be1", [D], 0.1)
    m.emit(f"%n1 = tcc.layer_norm %x, {g1}, {be1} axis = -1 epsilon = 1.0e-05 : {T([1,S,D])}, {T([D])}")
    wq = m.const("wq", [1, D, D], 0.3)
    wk = m.const("wk", [1, D, D], 0.3)
    wv = m.const("wv", [1, D, D], 0.3)
    m.matmul("q", "%n1", wq, [1, S, D], [1, D, D])
    m.matmul("k", "%n1", wk, [1, S, D], [1, D, D])
    m.matmul("v", "%n1", wv, [1, S, D], [1, D, D])
    m.transpose("kT", "%k", [1, S, D], [0, 2, 1])
    m.matmul("sc", "%q", "%kT", [1, S, D], [1, D, S])
    m.splat("scale", "0.25", [1, 1, 1])
    m.mul("scs", "%sc", "%scale", [1, S, S], [1, 1, 1], [1, S, S])
    m.emit(f"%p = tcc.softmax %scs axis = -1 : {T([1,S,S])}")
    m.matmul("att", "%p", "%v", [1, S, S], [1, S, D])
    m.binary("add", "r1", "%x", "%att", [1, S, D], [1, S, D], [1, S, D])
    g2 = m.const("g2", [D], 0.3, 1.0)
    be2 = m.const("be2", [D], 0.1)
    m.emit(f"%n2 = tcc.layer_norm %r1, {g2}, {be2} axis = -1 epsilon = 1.0e-05 : {T([1,S,D])}, {T([D])}")
    w1 = m.const("w1", [1, D, F], 0.3)
    bb1 = m.const("bb1", [1, 1, F], 0.1)
    m.matmul("f1", "%n2", w1, [1, S, D], [1, D, F])
    m.binary("add", "f1b", "%f1", bb1, [1, S, F], [1, 1, F], [1, S, F])
    m.emit(f"%act = tcc.gelu %f1b : {T([1,S,F])}")
    w2 = m.const("w2", [1, F, D], 0.2)
    bb2 = m.const("bb2", [1, 1, D], 0.1)
    m.matmul("f2", "%act", w2, [1, S, F], [1, F, D])
    m.binary("add", "f2b", "%f2", bb2, [1, S, D], [1, 1, D], [1, S, D])
    m.binary("add", "y", "%r1", "%f2b", [1, S, D], [1, S, D], [1, S, D])
    header = """// A pre-norm transformer block: tcc.layer_norm, single-head attention
// (Q/K/V matmuls, K transposed, scaled scores, tcc.softmax, .V), residual
// add, tcc.layer_norm, a GELU (erf) feed-forward 16 -> 32 -> 16 with
// biases, residual add. Input 1x8x16.
// Long chain of transcendental ops (rsqrt, exp, erf) and sums of up to 32
// products over values that reach about 5 after layer norm: errors of a
// few ulp compound to about 1e-5 at the output.
// TOLERANCE: 1e-5 1e-4"""
    return header, m.text([f("x", [1, S, D])], [("%y", [1, S, D], "f32")])


def long_reduction():
    m = Model("long_reduction")
    S = [4, 2048]
    m.reduce("reduce_sum", "s", "%x", S, 1)
    m.reduce("reduce_max", "mx", "%x", S, 1)
    m.reduce("reduce_min", "mn", "%x", S, 0)
    m.splat("inv", "4.8828125e-04", [1, 1])
    m.shift()
    m.mul("mean", "%s", "%inv", [4, 1], [1, 1], [4, 1])
    m.binary("sub", "c", "%x", "%mean", S, [4, 1], S)
    m.mul("c2", "%c", "%c", S, S, S)
    m.reduce("reduce_sum", "var", "%c2", S, 1)
    header = """// Long reductions: reduce_sum, reduce_max over 2048 elements per row,
// reduce_min over the 4 rows, and a centred sum of squares (mean via a
// multiply by 1/2048). Input 4x2048.
// Sums of 2048 terms of magnitude up to 1 reach about 30 (and the sum of
// squares about 700); a different summation order (tree vs sequential)
// changes the result by about sqrt(n) * eps * |partial sums| ~ 1e-4 in the
// worst rows. max/min are exact.
// TOLERANCE: 5e-4 2e-5
// ACCUMULATION: 2048 800"""
    return header, m.text([f("x", S)], [("%s", [4, 1], "f32"), ("%mx", [4, 1], "f32"), ("%mn", [1, 2048], "f32"), ("%var", [4, 1], "f32")])


def matmul_shapes():
    m = Model("matmul_shapes")
    m.zp()
    m.matmul("ab", "%a", "%b", [3, 17, 13], [3, 13, 9])
    w = m.const("w", [1, 64, 7], 0.3)
    m.matmul("cw", "%c", w, [1, 5, 64], [1, 64, 7])
    m.transpose("bt", "%b", [3, 13, 9], [0, 2, 1])
    m.matmul("bbt", "%bt", "%b", [3, 9, 13], [3, 13, 9])
    header = """// matmul with awkward shapes: batched 3x17x13 . 3x13x9 of two inputs,
// 1x5x64 . a constant 1x64x7 (K = 64), and B^T.B (a transposed operand,
// symmetric result).
// Sums of up to 64 products of values below 1: results up to about 5,
// rounding (and order) near 1e-6.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("a", [3, 17, 13]), f("b", [3, 13, 9]), f("c", [1, 5, 64])], [("%ab", [3, 17, 9], "f32"), ("%cw", [1, 5, 7], "f32"), ("%bbt", [3, 9, 9], "f32")])


def clamp_minmax():
    m = Model("clamp_minmax")
    S = [5, 12]
    m.clamp("c", "%x", S, "-0.5", "0.75")
    m.splat("eight", "8.0", [1, 1])
    m.shift()
    m.mul("x8", "%x", "%eight", S, [1, 1], S)
    m.clamp("relu6", "%x8", S, "0.0", "6.0")
    m.binary("maximum", "mx", "%x", "%y", S, S, S)
    m.binary("minimum", "mn", "%x", "%y", S, S, S)
    m.binary("sub", "d", "%mx", "%mn", S, S, S)
    header = """// clamp with general bounds, a relu6 (clamp 0..6 of 8x), maximum and
// minimum of two inputs and their difference. Inputs 5x12.
// Exact ops only (one exactly rounded mul and sub).
// TOLERANCE: 0 0"""
    return header, m.text([f("x", S), f("y", S)], [("%c", S, "f32"), ("%relu6", S, "f32"), ("%d", S, "f32")])


def residual_mlp():
    m = Model("residual_mlp")
    m.zp()
    # Batch of 3 sequences: weights shared via a broadcast matmul operand is
    # not TOSA (batch must match), so tile the weight to batch 3.
    w = m.const("w", [1, 12, 12], 0.3)
    mult = m.shape("mult", [3, 1, 1])
    m.emit(f"%wt = tosa.tile {w}, {mult} : ({T([1,12,12])}, !tosa.shape<3>) -> {T([3,12,12])}")
    m.matmul("h", "%x", "%wt", [3, 4, 12], [3, 12, 12])
    m.emit(f"%t = tosa.tanh %h : ({T([3,4,12])}) -> {T([3,4,12])}")
    m.binary("add", "r", "%t", "%x", [3, 4, 12], [3, 4, 12], [3, 4, 12])
    m.emit(f"%ls = tcc.log_softmax %r axis = -1 : {T([3,4,12])}")
    m.emit(f"%am = tosa.argmax %ls {{axis = 2 : i32}} : ({T([3,4,12])}) -> {T([3,4], 'i32')}")
    header = """// A residual layer with a tiled (shared) weight: tile the 1x12x12
// weight to the batch of 3, batched matmul, tanh, residual add,
// tcc.log_softmax, and argmax of the result (class predictions). Input
// 3x4x12.
// Sums of 12 products, tanh/exp/log (a few ulp): ~1e-6; argmax is exact
// unless two logits are within rounding of each other (none here).
// TOLERANCE: 5e-6 1e-5"""
    return header, m.text([f("x", [3, 4, 12])], [("%ls", [3, 4, 12], "f32"), ("%am", [3, 4], "i32")])


def fusion_edges():
    m = Model("fusion_edges")
    m.shift()
    S = [4, 9]
    # a diamond: t feeds two branches that meet again
    m.unary("exp", "t", "%x", S)
    m.unary("tanh", "l", "%t", S)
    m.unary("sigmoid", "r", "%t", S)
    m.binary("add", "d", "%l", "%r", S, S, S)
    # an intermediate that is returned and also used further
    m.mul("sq", "%d", "%d", S, S, S)
    m.reduce("reduce_sum", "rs", "%sq", S, 1)
    m.binary("sub", "centred", "%sq", "%rs", S, [4, 1], S)
    header = """// Fusion edge cases: a diamond (exp feeding tanh and sigmoid that are
// added), an intermediate (d) returned and also consumed (d*d, a row sum,
// a broadcast subtract), and an input returned unchanged. (The same value
// returned twice: duplicate_result.mlir.) Input 4x9.
// Transcendental (exp, tanh, sigmoid: a few ulp) and a sum of 9 terms;
// values up to about 40.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", S)], [("%d", S, "f32"), ("%centred", S, "f32"), ("%x", S, "f32")])


def duplicate_result():
    m = Model("duplicate_result")
    S = [4, 9]
    m.unary("exp", "e", "%x", S)
    m.unary("abs", "a", "%e", S)
    header = """// One value returned twice (and a second result computed from it): the
// function has three results, two of them the same SSA value. Input 4x9.
// Transcendental (exp: a few ulp) of values below e.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("x", S)], [("%e", S, "f32"), ("%e", S, "f32"), ("%a", S, "f32")])


def odd_sizes():
    m = Model("odd_sizes")
    m.shift()
    k = m.const("k", [1, 333], 0.5)
    m.mul("e", "%a", k, [3, 333], [1, 333], [3, 333])
    m.unary("tanh", "te", "%e", [3, 333])
    m.reduce("reduce_sum", "c0", "%b", [257, 33], 0)
    m.reduce("reduce_max", "c1", "%b", [257, 33], 1)
    m.transpose("bt", "%b", [257, 33], [1, 0])
    m.emit(f"%sm = tcc.softmax %a axis = -1 : {T([3, 333])}")
    header = """// Sizes that are not multiples of any work-group size: a 3x333
// elementwise mul + tanh, reduce_sum over the 257 rows (axis 0) and
// reduce_max over the 33 columns of a 257x33 input, a 257x33 transpose,
// and a softmax over rows of 333.
// Sums of 257 terms (|sum| up to about 25, order-dependent rounding near
// 1e-5) and tanh/exp (a few ulp).
// TOLERANCE: 5e-5 1e-5
// ACCUMULATION: 333 30"""
    return header, m.text([f("a", [3, 333]), f("b", [257, 33])], [("%te", [3, 333], "f32"), ("%c0", [1, 33], "f32"), ("%c1", [257, 1], "f32"), ("%bt", [33, 257], "f32"), ("%sm", [3, 333], "f32")])


def bigger_matmul():
    m = Model("bigger_matmul")
    m.zp()
    m.matmul("ab", "%a", "%b", [2, 64, 128], [2, 128, 96])
    m.relu("y", "%ab", [2, 64, 96])
    header = """// A bigger batched matmul (2x64x128 . 2x128x96, both operands inputs)
// with a relu epilogue: exercises tiling over several work-groups.
// Sums of 128 products of values in [-1, 1]: results up to about 15,
// order-dependent rounding up to about 1e-5.
// TOLERANCE: 3e-5 1e-5
// ACCUMULATION: 128 20"""
    return header, m.text([f("a", [2, 64, 128]), f("b", [2, 128, 96])], [("%y", [2, 64, 96], "f32")])


def high_rank():
    m = Model("high_rank")
    m.shift()
    A, B = [2, 3, 1, 4, 5], [1, 3, 2, 1, 5]
    O = [2, 3, 2, 4, 5]
    m.binary("add", "s", "%a", "%b", A, B, O)
    m.mul("p", "%s", "%a", O, A, O)
    m.transpose("t", "%p", O, [4, 2, 0, 3, 1])
    m.reduce("reduce_max", "r", "%p", O, 3)
    header = """// Rank-5 tensors: add and mul broadcasting on three different axes,
// a rank-5 transpose (4,2,0,3,1), reduce_max over axis 3. Inputs
// 2x3x1x4x5 and 1x3x2x1x5.
// Plain arithmetic, a couple of exactly rounded ops per element.
// TOLERANCE: 1e-6 1e-6"""
    return header, m.text([f("a", A), f("b", B)], [("%t", [5, 2, 2, 4, 3], "f32"), ("%r", [2, 3, 2, 1, 5], "f32")])


def rank0():
    m = Model("rank0")
    m.shift()
    m.binary("add", "s", "%a", "%b", [], [], [])
    m.mul("p", "%s", "%a", [], [], [])
    m.unary("exp", "e", "%p", [])
    header = """// Rank-0 (scalar) tensors: add, mul and exp of two tensor<f32> inputs.
// Transcendental (exp: a few ulp) of a value below 2.
// TOLERANCE: 1e-6 1e-6"""
    return header, m.text([f("a", []), f("b", [])], [("%e", [], "f32")])


def bool_input():
    m = Model("bool_input")
    S = [3, 10]
    m.emit(f"%sel = tosa.select %mask, %a, %b : ({T(S, 'i1')}, {T(S)}, {T(S)}) -> {T(S)}")
    m.emit(f"%inv = tosa.logical_not %mask : ({T(S, 'i1')}) -> {T(S, 'i1')}")
    m.emit(f"%f = tosa.cast %inv : ({T(S, 'i1')}) -> {T(S)}")
    m.binary("add", "y", "%sel", "%f", S, S, S)
    header = """// An i1 (boolean) input: select on it, logical_not, cast to f32 and add.
// Inputs: mask 3x10 i1 (0/1), a and b 3x10 f32.
// Exact ops only.
// TOLERANCE: 0 0"""
    return header, m.text([("mask", S, "i1"), f("a", S), f("b", S)], [("%y", S, "f32"), ("%inv", S, "i1")])


def two_functions():
    a = Model("scale")
    a.shift()
    k = a.const("k", [1, 8], 1.0)
    a.mul("y", "%x", k, [4, 8], [1, 8], [4, 8])
    b = Model("sum_rows")
    b.reduce("reduce_sum", "y", "%x", [4, 8], 1)
    header = """// Two public functions in one module (@scale, a mul by a constant, and
// @sum_rows, a row sum): the artifact exposes both and each runs.
// Inputs 4x8.
// Plain arithmetic: a mul and a sum of 8 terms.
// TOLERANCE: 1e-6 1e-6"""
    return header, "module {\n" + a.text([f("x", [4, 8])], [("%y", [4, 8], "f32")]) + "\n" + b.text([f("x", [4, 8])], [("%y", [4, 1], "f32")]) + "}"


def int_arith():
    m = Model("int_arith")
    S = [3, 8]
    I = lambda shape: T(shape, "i32")
    m.emit(f"%s = tosa.add %a, %b : ({I(S)}, {I(S)}) -> {I(S)}")
    m.emit(f"%d = tosa.sub %a, %b : ({I(S)}, {I(S)}) -> {I(S)}")
    m.splat("shift", "0", [1], "i8")
    m.emit(f"%p = tosa.mul %s, %d, %shift : ({I(S)}, {I(S)}, tensor<1xi8>) -> {I(S)}")
    m.emit(f"%mx = tosa.maximum %a, %b : ({I(S)}, {I(S)}) -> {I(S)}")
    m.emit(f"%mn = tosa.minimum %mx, %d : ({I(S)}, {I(S)}) -> {I(S)}")
    m.emit(f"%c = tosa.clamp %p {{min_val = -500 : i32, max_val = 700 : i32}} : ({I(S)}) -> {I(S)}")
    m.emit(f"%ab = tosa.abs %mn : ({I(S)}) -> {I(S)}")
    m.emit(f"%rs = tosa.reduce_sum %c {{axis = 1 : i32}} : ({I(S)}) -> {I([3, 1])}")
    m.emit(f"%rm = tosa.reduce_max %ab {{axis = 0 : i32}} : ({I(S)}) -> {I([1, 8])}")
    m.emit(f"%gt = tosa.greater %a, %b : ({I(S)}, {I(S)}) -> {T(S, 'i1')}")
    m.emit(f"%sel = tosa.select %gt, %c, %ab : ({T(S, 'i1')}, {I(S)}, {I(S)}) -> {I(S)}")
    m.emit(f"%f = tosa.cast %sel : ({I(S)}) -> {T(S)}")
    header = """// i32 arithmetic: add, sub, mul (shift 0), maximum, minimum, clamp with
// i32 bounds, abs, reduce_sum, reduce_max, greater + select on i32, and a
// cast to f32. Inputs 3x8 i32 in [-50, 50].
// Integer results (and their exact f32 casts): exact.
// INPUT-RANGE: 0 -50 50
// INPUT-RANGE: 1 -50 50
// TOLERANCE: 0 0"""
    return header, m.text([("a", S, "i32"), ("b", S, "i32")], [("%rs", [3, 1], "i32"), ("%rm", [1, 8], "i32"), ("%sel", S, "i32"), ("%f", S, "f32")])


def argmax_gather():
    m = Model("argmax_gather")
    m.zp()
    table = m.const("table", [1, 12, 5], 1.0)
    m.emit(f"%am = tosa.argmax %logits {{axis = 2 : i32}} : ({T([1, 6, 12])}) -> {T([1, 6], 'i32')}")
    m.emit(f"%rows = tosa.gather {table}, %am : ({T([1, 12, 5])}, {T([1, 6], 'i32')}) -> {T([1, 6, 5])}")
    m.emit(f"%h = tosa.tanh %rows : ({T([1, 6, 5])}) -> {T([1, 6, 5])}")
    header = """// Data-dependent indexing: argmax of logits 1x6x12 picks rows of a
// constant 1x12x5 table (gather), followed by tanh. Input 1x6x12.
// Exact indices; tanh is a few ulp.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("logits", [1, 6, 12])], [("%am", [1, 6], "i32"), ("%h", [1, 6, 5], "f32")])


def large_elementwise():
    m = Model("large_elementwise")
    m.shift()
    S = [256, 1024]
    k = m.const("k", [1, 1024], 1.0)
    m.mul("p", "%x", k, S, [1, 1024], S)
    m.unary("sigmoid", "sg", "%p", S)
    m.binary("sub", "y", "%sg", "%x", S, S, S)
    m.reduce("reduce_max", "r", "%y", S, 0)
    header = """// A large elementwise kernel (256x1024 = 262144 elements, more than one
// work-item per element on any device) with a 1x1024 constant broadcast
// (4 KiB of weights), sigmoid, sub, and a column max over 256 rows.
// Transcendental (sigmoid: a few ulp); results below 2.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("x", S)], [("%y", S, "f32"), ("%r", [1, 1024], "f32")])


def func_call():
    h = Model("layer")
    h.zp()
    w = h.const("w", [1, 8, 8], 0.4)
    h.matmul("mm", "%x", w, [1, 4, 8], [1, 8, 8])
    h.unary("tanh", "y", "%mm", [1, 4, 8])
    m = Model("func_call")
    m.emit(f"%a = func.call @layer(%x) : ({T([1, 4, 8])}) -> {T([1, 4, 8])}")
    m.emit(f"%b = func.call @layer(%a) : ({T([1, 4, 8])}) -> {T([1, 4, 8])}")
    header = """// func.call: a private helper (@layer: matmul with a constant + tanh)
// called twice in sequence from the public @func_call. Input 1x4x8.
// Sums of 8 products and tanh (a few ulp), twice.
// TOLERANCE: 2e-6 1e-5"""
    helper = h.text([f("x", [1, 4, 8])], [("%y", [1, 4, 8], "f32")]).replace("func.func @layer", "func.func private @layer")
    return header, "module {\n" + helper + "\n" + m.text([f("x", [1, 4, 8])], [("%b", [1, 4, 8], "f32")]) + "}"
