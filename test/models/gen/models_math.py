"""Test models: elementwise math, broadcasts, casts, comparisons, reductions,
reshapes and the first CNN and attention blocks."""

from model import Model, T, f


def cnn():
    m = Model("cnn")
    m.zp()
    # conv 3x3, 3 -> 8 channels, pad 1: 1x8x8x3 -> 1x8x8x8
    w1 = m.const("w1", [8, 3, 3, 3], 0.4)
    b1 = m.const("b1", [8], 0.2)
    m.emit(f"%c1 = tosa.conv2d %x, {w1}, {b1}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}} : ({T([1,8,8,3])}, {T([8,3,3,3])}, {T([8])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,8,8,8])}")
    m.relu("r1", "%c1", [1, 8, 8, 8])
    m.emit(f"%p1 = tosa.max_pool2d %r1 {{kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : ({T([1,8,8,8])}) -> {T([1,4,4,8])}")
    # depthwise 3x3, multiplier 1, pad 1: 1x4x4x8 -> 1x4x4x8
    w2 = m.const("w2", [3, 3, 8, 1], 0.4)
    b2 = m.const("b2", [8], 0.2)
    m.emit(f"%c2 = tosa.depthwise_conv2d %p1, {w2}, {b2}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}} : ({T([1,4,4,8])}, {T([3,3,8,1])}, {T([8])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,4,4,8])}")
    m.relu("r2", "%c2", [1, 4, 4, 8])
    m.emit(f"%p2 = tosa.avg_pool2d %r2, %zp, %zp {{acc_type = f32, kernel = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : ({T([1,4,4,8])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,2,2,8])}")
    # fully connected: flatten to 1x1x32, matmul 32 -> 10, bias
    m.reshape("flat", "%p2", [1, 2, 2, 8], [1, 1, 32])
    w3 = m.const("w3", [1, 32, 10], 0.3)
    b3 = m.const("b3", [1, 1, 10], 0.1)
    m.matmul("fc", "%flat", w3, [1, 1, 32], [1, 32, 10])
    m.binary("add", "fcb", "%fc", b3, [1, 1, 10], [1, 1, 10], [1, 1, 10])
    m.reshape("y", "%fcb", [1, 1, 10], [1, 10])
    header = """// A small CNN: conv2d 3x3 (pad 1) + bias + relu, max_pool2d 2x2,
// depthwise_conv2d 3x3 + bias + relu, avg_pool2d 2x2, then a fully
// connected layer as reshape + matmul + bias. Input 1x8x8x3 (NHWC), output
// 1x10.
// Plain arithmetic: sums of at most 32 products of values below 1, so f32
// rounding (and a different summation order or fused multiply-add in the
// kernels) stays near 1e-6.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", [1, 8, 8, 3])], [("%y", [1, 10], "f32")])


def attention():
    m = Model("attention")
    m.zp()
    m.shift()
    S, D, H, Dh = 8, 16, 2, 8
    wq = m.const("wq", [1, D, D], 0.3)
    wk = m.const("wk", [1, D, D], 0.3)
    wv = m.const("wv", [1, D, D], 0.3)
    wo = m.const("wo", [1, D, D], 0.3)
    heads = {}
    for n, w in (("q", wq), ("k", wk), ("v", wv)):
        m.matmul(n, "%x", w, [1, S, D], [1, D, D])
        m.reshape(n + "4", f"%{n}", [1, S, D], [1, S, H, Dh])
        m.transpose(n + "t", f"%{n}4", [1, S, H, Dh], [0, 2, 1, 3])
        heads[n] = m.reshape(n + "h", f"%{n}t", [1, H, S, Dh], [H, S, Dh])
    m.transpose("kT", heads["k"], [H, S, Dh], [0, 2, 1])
    m.matmul("scores", heads["q"], "%kT", [H, S, Dh], [H, Dh, S])
    m.splat("scale", "0.353553385", [1, 1, 1])
    m.mul("scaled", "%scores", "%scale", [H, S, S], [1, 1, 1], [H, S, S])
    m.emit(f"%probs = tcc.softmax %scaled axis = -1 : {T([H, S, S])}")
    m.matmul("ctx", "%probs", heads["v"], [H, S, S], [H, S, Dh])
    m.reshape("ctx4", "%ctx", [H, S, Dh], [1, H, S, Dh])
    m.transpose("ctxt", "%ctx4", [1, H, S, Dh], [0, 2, 1, 3])
    m.reshape("merged", "%ctxt", [1, S, H, Dh], [1, S, D])
    m.matmul("proj", "%merged", wo, [1, S, D], [1, D, D])
    m.binary("add", "y", "%proj", "%x", [1, S, D], [1, S, D], [1, S, D])
    header = """// A two-head self-attention block: Q, K, V projections (matmul), heads
// split with reshape + transpose, scores Q.K^T (batched matmul with a
// transposed K), scaled by 1/sqrt(8) (mul), tcc.softmax, probabilities.V,
// heads merged (transpose + reshape), output projection and a residual
// add. Input 1x8x16, output 1x8x16; also returns the attention
// probabilities 2x8x8.
// The softmax's exp differs by a few ulp between OpenCL and libm; the
// products that follow keep the error near 1e-6 relative.
// TOLERANCE: 1e-5 1e-4"""
    return header, m.text([f("x", [1, S, D])], [("%y", [1, S, D], "f32"), ("%probs", [H, S, S], "f32")])


def broadcast_chain():
    m = Model("broadcast_chain")
    m.shift()
    A, B, C = [2, 3, 4], [1, 3, 1], [1, 1, 4]
    k = m.const("k", [2, 1, 4], 0.5)
    m.binary("add", "t1", "%a", "%b", A, B, A)
    m.mul("t2", "%t1", "%c", A, C, A)
    m.binary("sub", "t3", "%t2", k, A, [2, 1, 4], A)
    m.binary("maximum", "t4", "%t3", "%b", A, B, A)
    m.binary("minimum", "t5", "%t4", "%c", A, C, A)
    m.splat("one", "1.5", [1, 1, 1])
    m.binary("add", "t6", "%t5", "%one", A, [1, 1, 1], A)
    m.mul("outer", "%b", "%c", B, C, [1, 3, 4])
    m.binary("sub", "outer2", "%outer", k, [1, 3, 4], [2, 1, 4], [2, 3, 4])
    header = """// A broadcasting elementwise chain: add, mul, sub, maximum, minimum with
// operands of shapes 2x3x4, 1x3x1, 1x1x4, 2x1x4 and 1x1x1 (a constant),
// and an outer product 1x3x1 * 1x1x4 broadcast again against 2x1x4.
// Plain arithmetic, a few exactly rounded ops per element (fused
// multiply-add in a kernel may change the last bit).
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("a", A), f("b", B), f("c", C)], [("%t6", A, "f32"), ("%outer2", [2, 3, 4], "f32")])


def concat_pad_slice():
    m = Model("concat_pad_slice")
    m.emit(f"%cat = tosa.concat %a, %b {{axis = 2 : i32}} : ({T([1,4,6])}, {T([1,4,2])}) -> {T([1,4,8])}")
    padding = m.shape("padding", [0, 0, 1, 2, 2, 1])
    m.splat("padval", "0.5", [1])
    m.emit(f"%padded = tosa.pad %cat, {padding}, %padval : ({T([1,4,8])}, !tosa.shape<6>, tensor<1xf32>) -> {T([1,7,11])}")
    start = m.shape("start", [0, 1, 3])
    size = m.shape("size", [1, 5, 6])
    m.emit(f"%sl = tosa.slice %padded, {start}, {size} : ({T([1,7,11])}, !tosa.shape<3>, !tosa.shape<3>) -> {T([1,5,6])}")
    # concat of three along axis 1, one of them a constant
    k = m.const("k", [1, 2, 6], 0.5)
    m.emit(f"%cat2 = tosa.concat %sl, {k}, %a {{axis = 1 : i32}} : ({T([1,5,6])}, {T([1,2,6])}, {T([1,4,6])}) -> {T([1,11,6])}")
    # zero padding at the front only, then a slice of the middle
    padding2 = m.shape("padding2", [1, 0, 0, 0, 3, 0])
    m.splat("zero", "0.0", [1])
    m.emit(f"%padded2 = tosa.pad %cat2, {padding2}, %zero : ({T([1,11,6])}, !tosa.shape<6>, tensor<1xf32>) -> {T([2,11,9])}")
    start2 = m.shape("start2", [0, 2, 1])
    size2 = m.shape("size2", [2, 7, 7])
    m.emit(f"%y = tosa.slice %padded2, {start2}, {size2} : ({T([2,11,9])}, !tosa.shape<3>, !tosa.shape<3>) -> {T([2,7,7])}")
    header = """// Data movement: concat (two and three operands, one a constant), pad
// with a non-zero and a zero pad value (leading and trailing, several
// axes), slice with non-zero offsets. Inputs 1x4x6 and 1x4x2.
// Pure data movement: results must be bit-exact.
// TOLERANCE: 0 0"""
    return header, m.text([f("a", [1, 4, 6]), f("b", [1, 4, 2])], [("%sl", [1, 5, 6], "f32"), ("%y", [2, 7, 7], "f32")])


def layernorm_gelu():
    m = Model("layernorm_gelu")
    m.zp()
    g1 = m.const("g1", [16], 0.5, 1.0)
    b1 = m.const("b1", [16], 0.2)
    m.emit(f"%ln1 = tcc.layer_norm %x, {g1}, {b1} axis = -1 epsilon = 1.0e-05 : {T([2,8,16])}, {T([16])}")
    m.emit(f"%g = tcc.gelu %ln1 approximate = \"tanh\" : {T([2,8,16])}")
    g2 = m.const("g2", [8, 16], 0.5, 1.0)
    b2 = m.const("b2", [8, 16], 0.2)
    m.emit(f"%ln2 = tcc.layer_norm %g, {g2}, {b2} axis = 1 epsilon = 1.0e-05 : {T([2,8,16])}, {T([8,16])}")
    m.emit(f"%y = tcc.gelu %ln2 : {T([2,8,16])}")
    header = """// Layer norm + GELU: tcc.layer_norm over the last axis (scale/bias 16),
// tcc.gelu with the tanh approximation, tcc.layer_norm over the last two
// axes (axis = 1, scale/bias 8x16), tcc.gelu (erf form). Input 2x8x16.
// Mean/variance reductions of 16 and 128 elements, rsqrt, tanh and erf
// (OpenCL's rsqrt is allowed 2 ulp, tanh/erf several): outputs are O(1),
// errors a few 1e-6.
// TOLERANCE: 1e-5 1e-4"""
    return header, m.text([f("x", [2, 8, 16])], [("%g", [2, 8, 16], "f32"), ("%y", [2, 8, 16], "f32")])


def transpose_conv():
    m = Model("transpose_conv")
    m.zp()
    w = m.const("w", [4, 3, 3, 3], 0.4)
    b = m.const("b", [4], 0.2)
    m.emit(f"%y = tosa.transpose_conv2d %x, {w}, {b}, %zp, %zp {{acc_type = f32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}} : ({T([1,4,4,3])}, {T([4,3,3,3])}, {T([4])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,9,9,4])}")
    w2 = m.const("w2", [2, 2, 3, 3], 0.4)
    b2 = m.const("b2", [2], 0.2)
    m.emit(f"%y2 = tosa.transpose_conv2d %x, {w2}, {b2}, %zp, %zp {{acc_type = f32, out_pad = array<i64: 0, 1, 1, 0>, stride = array<i64: 1, 1>}} : ({T([1,4,4,3])}, {T([2,2,3,3])}, {T([2])}, tensor<1xf32>, tensor<1xf32>) -> {T([1,6,7,2])}")
    header = """// transpose_conv2d (a.k.a. deconvolution): 3x3 kernel, stride 2, 3 -> 4
// channels (1x4x4x3 -> 1x9x9x4), and a 2x3 kernel, stride 1, with
// asymmetric out_pad (1x4x4x3 -> 1x6x7x2). Both with bias.
// Plain arithmetic, at most 27 products per output.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", [1, 4, 4, 3])], [("%y", [1, 9, 9, 4], "f32"), ("%y2", [1, 6, 7, 2], "f32")])


def exp_log():
    m = Model("exp_log")
    S = [4, 32]
    m.unary("exp", "e", "%x", S)
    m.unary("abs", "ax", "%x", S)
    m.splat("quarter", "0.25", [1, 1])
    m.binary("add", "pos", "%ax", "%quarter", S, [1, 1], S)
    m.unary("log", "l", "%pos", S)
    header = """// exp and log (of |x| + 0.25, so the argument is positive). Input 4x32
// in [-1, 1].
// Transcendental: OpenCL allows 3 ulp for exp and log; outputs are below
// e in magnitude.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("x", S)], [("%e", S, "f32"), ("%l", S, "f32")])


def recip_rsqrt():
    m = Model("recip_rsqrt")
    S = [3, 5, 7]
    m.unary("abs", "ax", "%x", S)
    m.splat("half", "0.5", [1, 1, 1])
    m.binary("add", "pos", "%ax", "%half", S, [1, 1, 1], S)
    m.unary("reciprocal", "r", "%pos", S)
    m.unary("rsqrt", "s", "%pos", S)
    m.splat("zp", "0.0", [1])
    m.emit(f"%n = tosa.negate %x, %zp, %zp : ({T(S)}, tensor<1xf32>, tensor<1xf32>) -> {T(S)}")
    header = """// abs, reciprocal and rsqrt (of |x| + 0.5), negate. Input 3x5x7 in
// [-1, 1].
// abs and negate are exact; reciprocal and rsqrt may be a few ulp off in
// OpenCL (rsqrt: 2 ulp); outputs are at most 2.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("x", S)], [("%ax", S, "f32"), ("%r", S, "f32"), ("%s", S, "f32"), ("%n", S, "f32")])


def activations():
    m = Model("activations")
    S = [2, 4, 16]
    m.splat("three", "3.0", [1, 1, 1])
    m.shift()
    m.mul("wide", "%x", "%three", S, [1, 1, 1], S)
    m.unary("sigmoid", "sg", "%wide", S)
    m.unary("tanh", "th", "%wide", S)
    m.unary("erf", "er", "%wide", S)
    m.emit(f"%si = tcc.silu %wide : {T(S)}")
    header = """// sigmoid, tanh, erf and tcc.silu over [-3, 3] (input 2x4x16 in [-1, 1]
// scaled by 3).
// Transcendental: sigmoid is 1/(1+exp(-x)), tanh and erf are allowed
// several ulp in OpenCL; outputs are at most 3 in magnitude.
// TOLERANCE: 2e-6 1e-5"""
    return header, m.text([f("x", S)], [("%sg", S, "f32"), ("%th", S, "f32"), ("%er", S, "f32"), ("%si", S, "f32")])


def pow_():
    m = Model("pow")
    S = [4, 8]
    m.unary("abs", "ax", "%a", S)
    m.splat("tenth", "0.1", [1, 1])
    m.binary("add", "base", "%ax", "%tenth", S, [1, 1], S)
    m.splat("two", "2.0", [1, 1])
    m.shift()
    m.mul("expo", "%b", "%two", S, [1, 1], S)
    m.binary("pow", "p", "%base", "%expo", S, S, S)
    m.splat("three", "3.0", [1, 1])
    m.binary("pow", "cube", "%base", "%three", S, [1, 1], S)
    header = """// pow: a positive base (|a| + 0.1) to a real exponent in [-2, 2], and
// to the constant 3. Inputs 4x8 in [-1, 1].
// Transcendental (OpenCL pow: 16 ulp); results up to 100 (0.1^-2), so
// the error is relative.
// TOLERANCE: 1e-6 2e-5"""
    return header, m.text([f("a", S), f("b", S)], [("%p", S, "f32"), ("%cube", S, "f32")])


def compare_select():
    m = Model("compare_select")
    S = [2, 3, 8]
    m.clamp("ca", "%a", S, "-0.25", "0.25")
    m.splat("q", "0.25", [1, 1, 1])
    m.binary("equal", "eq", "%ca", "%q", S, [1, 1, 1], S, "i1")
    m.binary("greater", "gt", "%a", "%b", S, S, S, "i1")
    m.binary("greater_equal", "ge", "%b", "%ca", S, S, S, "i1")
    m.emit(f"%sel1 = tosa.select %gt, %a, %b : ({T(S, 'i1')}, {T(S)}, {T(S)}) -> {T(S)}")
    m.splat("m", "-1.0", [1, 1, 1])
    m.emit(f"%sel2 = tosa.select %eq, %m, %sel1 : ({T(S, 'i1')}, {T([1,1,1])}, {T(S)}) -> {T(S)}")
    m.emit(f"%both = tosa.logical_and %gt, %ge : ({T(S, 'i1')}, {T(S, 'i1')}) -> {T(S, 'i1')}")
    m.emit(f"%either = tosa.logical_or %both, %eq : ({T(S, 'i1')}, {T(S, 'i1')}) -> {T(S, 'i1')}")
    m.emit(f"%mask = tosa.logical_not %either : ({T(S, 'i1')}) -> {T(S, 'i1')}")
    m.emit(f"%y = tosa.select %mask, %sel2, %ca : ({T(S, 'i1')}, {T(S)}, {T(S)}) -> {T(S)}")
    header = """// Comparisons and select: equal (against a clamp's bound, so some
// elements compare equal), greater, greater_equal, select with a
// broadcast operand, logical_and/or/not, and an i1 output. Inputs 2x3x8.
// Comparisons, selects and clamp are exact.
// TOLERANCE: 0 0"""
    return header, m.text([f("a", S), f("b", S)], [("%y", S, "f32"), ("%mask", S, "i1")])


def cast():
    m = Model("cast")
    S = [3, 16]
    m.splat("ten", "10.0", [1, 1])
    m.shift()
    m.mul("wide", "%x", "%ten", S, [1, 1], S)
    m.emit(f"%i = tosa.cast %wide : ({T(S)}) -> {T(S, 'i32')}")
    m.emit(f"%fi = tosa.cast %n : ({T(S, 'i32')}) -> {T(S)}")
    m.splat("half", "0.5", [1, 1])
    m.mul("hn", "%fi", "%half", S, [1, 1], S)
    m.emit(f"%bx = tosa.cast %i : ({T(S, 'i32')}) -> {T(S, 'i1')}")
    m.emit(f"%fb = tosa.cast %bx : ({T(S, 'i1')}) -> {T(S)}")
    m.binary("add", "y", "%hn", "%fb", S, S, S)
    header = """// cast: f32 -> i32 (of x*10, rounding to nearest even per TOSA), i32 ->
// f32 (of an i32 input), i32 -> i1 (non-zero), i1 -> f32. Inputs: x 3x16
// f32 in [-1, 1], n 3x16 i32 in [-100, 100].
// Casts of these values are exact.
// INPUT-RANGE: 1 -100 100
// TOLERANCE: 0 0"""
    return header, m.text([f("x", S), ("n", S, "i32")], [("%i", S, "i32"), ("%y", S, "f32")])


def reductions():
    m = Model("reductions")
    S = [4, 6, 8]
    m.reduce("reduce_sum", "s", "%x", S, 2)
    m.reduce("reduce_max", "mx", "%x", S, 1)
    m.reduce("reduce_min", "mn", "%x", S, 0)
    m.reduce("reduce_sum", "s01", "%x", S, 0)
    m.reduce("reduce_sum", "s012", "%s01", [1, 6, 8], 1)
    header = """// Reductions: reduce_sum over the last axis, reduce_max over the middle
// axis, reduce_min over the first, and two chained sums. Input 4x6x8. TOSA
// keeps the reduced dim (size 1). (reduce_product: reduce_product.mlir.)
// Sums of at most 24 terms: the summation order may differ
// (rounding near 1e-6); max and min are exact.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", S)], [("%s", [4, 6, 1], "f32"), ("%mx", [4, 1, 8], "f32"), ("%mn", [1, 6, 8], "f32"), ("%s012", [1, 1, 8], "f32")])


def reduce_product():
    m = Model("reduce_product")
    S = [4, 6, 8]
    m.splat("half", "0.5", [1, 1, 1])
    m.shift()
    m.mul("h", "%x", "%half", S, [1, 1, 1], S)
    m.splat("one", "1.0", [1, 1, 1])
    m.binary("add", "pos", "%h", "%one", S, [1, 1, 1], S)
    m.reduce("reduce_product", "p2", "%pos", S, 2)
    m.reduce("reduce_product", "p0", "%pos", S, 0)
    header = """// tosa.reduce_product (the "reduce_prod" of the op list) of x/2 + 1 (in
// [0.5, 1.5]) over the last and the first axis. Input 4x6x8.
// Products of at most 8 factors: rounding near 1e-6 relative.
// TOLERANCE: 1e-6 1e-5"""
    return header, m.text([f("x", S)], [("%p2", [4, 6, 1], "f32"), ("%p0", [1, 6, 8], "f32")])


def argmax():
    m = Model("argmax")
    S = [4, 6, 8]
    m.emit(f"%a2 = tosa.argmax %x {{axis = 2 : i32}} : ({T(S)}) -> {T([4, 6], 'i32')}")
    m.emit(f"%a0 = tosa.argmax %x {{axis = 0 : i32}} : ({T(S)}) -> {T([6, 8], 'i32')}")
    m.emit(f"%a1 = tosa.argmax %x {{axis = 1 : i32}} : ({T(S)}) -> {T([4, 8], 'i32')}")
    header = """// argmax over each of the three axes of a 4x6x8 input (i32 outputs; TOSA
// drops the reduced dim). Random inputs have no ties.
// Integer results: exact.
// TOLERANCE: 0 0"""
    return header, m.text([f("x", S)], [("%a2", [4, 6], "i32"), ("%a0", [6, 8], "i32"), ("%a1", [4, 8], "i32")])


def reshape_transpose():
    m = Model("reshape_transpose")
    m.transpose("t1", "%x", [2, 3, 4], [2, 0, 1])
    m.reshape("r1", "%t1", [4, 2, 3], [8, 3])
    m.transpose("t2", "%r1", [8, 3], [1, 0])
    m.reshape("r2", "%t2", [3, 8], [1, 3, 2, 4])
    m.transpose("t3", "%r2", [1, 3, 2, 4], [3, 1, 0, 2])
    k = m.const("k", [4, 3, 1, 2], 0.5)
    m.binary("add", "y", "%t3", k, [4, 3, 1, 2], [4, 3, 1, 2], [4, 3, 1, 2])
    m.reshape("flat", "%x", [2, 3, 4], [24])
    header = """// reshape and transpose chains: 3-D transpose (2,0,1), reshape to 2-D,
// 2-D transpose, reshape to 4-D, 4-D transpose (3,1,0,2), then an add of a
// constant; and a flattening reshape to rank 1. Input 2x3x4.
// Data movement and one exactly rounded add: bit-exact.
// TOLERANCE: 0 0"""
    return header, m.text([f("x", [2, 3, 4])], [("%y", [4, 3, 1, 2], "f32"), ("%flat", [24], "f32")])
