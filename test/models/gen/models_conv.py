"""Test models whose convolutions read through prologues: constant padding,
BatchNorm and ReLU, strided windows (tcc-fold-conv-inputs)."""

from model import Model, T, f


def conv(m, name, x, w, b, xs, ws, ys, pad, stride=(1, 1)):
    m.emit(f"%{name} = tosa.conv2d {x}, {w}, {b}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: {', '.join(map(str, pad))}>, stride = array<i64: {stride[0]}, {stride[1]}>}} : ({T(xs)}, {T(ws)}, {T([ws[0]])}, tensor<1xf32>, tensor<1xf32>) -> {T(ys)}")
    return f"%{name}"


def bn_relu(m, name, x, shape):
    """Per-channel affine (an unfolded BatchNorm) and ReLU."""
    c = shape[-1]
    scale = m.const(name + "_scale", [1, 1, 1, c], 0.5, 1.0)
    shift = m.const(name + "_shift", [1, 1, 1, c], 0.3)
    y = m.mul(name + "_mul", x, scale, shape, [1, 1, 1, c], shape)
    y = m.binary("add", name + "_add", y, shift, shape, [1, 1, 1, c], shape)
    return m.relu(name, y, shape)


def conv_prologue():
    m = Model("conv_prologue")
    m.zp()
    m.shift()
    X = [1, 12, 12, 8]
    a = bn_relu(m, "bn1", "%x", X)
    w1 = m.const("w1", [32, 3, 3, 8], 0.3)
    b1 = m.const("b1", [32], 0.2)
    c1 = conv(m, "c1", a, w1, b1, X, [32, 3, 3, 8], [1, 12, 12, 32], [1, 1, 1, 1])
    Y = [1, 12, 12, 32]
    a2 = bn_relu(m, "bn2", c1, Y)
    w2 = m.const("w2", [40, 3, 3, 32], 0.15)
    b2 = m.const("b2", [40], 0.2)
    c2 = conv(m, "c2", a2, w2, b2, Y, [40, 3, 3, 32], [1, 12, 12, 40], [1, 1, 1, 1])
    Z = [1, 12, 12, 40]
    a3 = bn_relu(m, "bn3", c2, Z)
    w3 = m.const("w3", [36, 1, 1, 40], 0.2)
    b3 = m.const("b3", [36], 0.2)
    c3 = conv(m, "c3", a3, w3, b3, Z, [36, 1, 1, 40], [1, 12, 12, 36], [0, 0, 0, 0])
    # Near miss: the producer is also a result, so it stays its own kernel.
    a4 = bn_relu(m, "bn4", "%x", X)
    w4 = m.const("w4", [32, 3, 3, 8], 0.3)
    b4 = m.const("b4", [32], 0.2)
    c4 = conv(m, "c4", a4, w4, b4, X, [32, 3, 3, 8], [1, 12, 12, 32], [1, 1, 1, 1])
    header = """// Convolutions with an unfolded BatchNorm + ReLU prologue (DenseNet
// style): x -> affine+relu -> conv 3x3 pad 1 (8 -> 32) -> affine+relu ->
// conv 3x3 pad 1 (32 -> 40) -> affine+relu -> conv 1x1 (40 -> 36); and a
// prologue that is also a result (not fused). tcc-fold-conv-inputs folds
// the pads and prologues into the convolutions' loads (padding applies
// after the prologue). Input 1x12x12x8, NHWC.
// Sums of up to 288 products of values near 1.
// TOLERANCE: 1e-5 1e-4"""
    return header, m.text([f("x", X)], [(c3, [1, 12, 12, 36], "f32"), (a4, X, "f32"), (c4, [1, 12, 12, 32], "f32")])


def conv_strided_pad():
    m = Model("conv_strided_pad")
    m.zp()
    X = [1, 15, 15, 8]
    w = m.const("w", [32, 3, 3, 8], 0.3)
    b = m.const("b", [32], 0.2)
    s2 = conv(m, "s2", "%x", w, b, X, [32, 3, 3, 8], [1, 8, 8, 32], [1, 1, 1, 1], (2, 2))
    w2 = m.const("w2", [33, 5, 3, 8], 0.2)
    b2 = m.const("b2", [33], 0.2)
    asym = conv(m, "asym", "%x", w2, b2, X, [33, 5, 3, 8], [1, 7, 8, 33], [2, 0, 0, 2], (2, 2))
    header = """// Strided padded convolutions without a prologue: 3x3 stride 2 pad 1
// (1x15x15x8 -> 1x8x8x32) and 5x3 stride 2 with asymmetric padding
// (top 2, bottom 0, left 0, right 2; -> 1x7x8x33): the padding is read as
// bounds checks in the convolution's loads, no padded copy.
// Sums of up to 120 products.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", X)], [(s2, [1, 8, 8, 32], "f32"), (asym, [1, 7, 8, 33], "f32")])


def window_prologue():
    m = Model("window_prologue")
    m.zp()
    m.shift()
    X = [1, 9, 9, 6]
    a = bn_relu(m, "bn1", "%x", X)
    m.emit(f"%mp = tosa.max_pool2d {a} {{kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}} : ({T(X)}) -> {T([1,5,5,6])}")
    b = bn_relu(m, "bn2", "%x", X)
    w = m.const("w", [3, 3, 6, 1], 0.4)
    bias = m.const("bias", [6], 0.2)
    m.emit(f"%dw = tosa.depthwise_conv2d {b}, {w}, {bias}, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>}} : ({T(X)}, {T([3,3,6,1])}, {T([6])}, tensor<1xf32>, tensor<1xf32>) -> {T(X)}")
    m.emit(f"%mp2 = tosa.max_pool2d %x {{kernel = array<i64: 3, 3>, pad = array<i64: 0, 1, 2, 1>, stride = array<i64: 1, 1>}} : ({T(X)}) -> {T([1,8,10,6])}")
    header = """// Pooling and depthwise convolution with padding folded into their loads:
// affine+ReLU -> max_pool2d 3x3 stride 2 pad 1 (the -max pad value applies
// after the ReLU, so edge windows still see only real values), affine+ReLU
// -> depthwise 3x3 pad 1, and max_pool2d with asymmetric padding on the
// raw input. Input 1x9x9x6.
// max is exact; depthwise sums 9 products.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", X)], [("%mp", [1, 5, 5, 6], "f32"), ("%dw", X, "f32"), ("%mp2", [1, 8, 10, 6], "f32")])


def depthwise_op(m, name, x, w, b, xs, ws, ys, pad, stride=(1, 1), dilation=(1, 1)):
    m.emit(f"%{name} = tosa.depthwise_conv2d {x}, {w}, {b}, %zp, %zp {{acc_type = f32, dilation = array<i64: {dilation[0]}, {dilation[1]}>, pad = array<i64: {', '.join(map(str, pad))}>, stride = array<i64: {stride[0]}, {stride[1]}>}} : ({T(xs)}, {T(ws)}, {T([ws[2] * ws[3]])}, tensor<1xf32>, tensor<1xf32>) -> {T(ys)}")
    return f"%{name}"


def pool_op(m, op, name, x, xs, ys, kernel, pad, stride):
    zp = ", %zp, %zp" if op == "avg_pool2d" else ""
    zt = ", tensor<1xf32>, tensor<1xf32>" if op == "avg_pool2d" else ""
    acc = "acc_type = f32, " if op == "avg_pool2d" else ""
    m.emit(f"%{name} = tosa.{op} {x}{zp} {{{acc}kernel = array<i64: {kernel[0]}, {kernel[1]}>, pad = array<i64: {', '.join(map(str, pad))}>, stride = array<i64: {stride[0]}, {stride[1]}>}} : ({T(xs)}{zt}) -> {T(ys)}")
    return f"%{name}"


def window_kernels():
    m = Model("window_kernels")
    m.zp()
    m.shift()
    X = [1, 13, 11, 8]
    Y = [1, 10, 9, 6]
    # MobileNet's block: depthwise 3x3 pad 1, bias, ReLU6, residual add.
    w1 = m.const("w1", [3, 3, 8, 1], 0.4)
    b1 = m.const("b1", [8], 0.2)
    d1 = depthwise_op(m, "d1", "%x", w1, b1, X, [3, 3, 8, 1], X, [1, 1, 1, 1])
    r1 = m.clamp("r1", d1, X, "0.0", "6.0")
    res = m.binary("add", "res", r1, "%x", X, X, X)
    w2 = m.const("w2", [3, 3, 8, 1], 0.4)
    b2 = m.const("b2", [8], 0.2)
    d2 = depthwise_op(m, "d2", "%x", w2, b2, X, [3, 3, 8, 1], [1, 7, 6, 8], [1, 1, 1, 1], (2, 2))
    w3 = m.const("w3", [3, 3, 6, 1], 0.4)
    b3 = m.const("b3", [6], 0.2)
    d3 = depthwise_op(m, "d3", "%y", w3, b3, Y, [3, 3, 6, 1], [1, 8, 7, 6], [0, 0, 0, 0])
    w4 = m.const("w4", [3, 3, 8, 2], 0.4)
    b4 = m.const("b4", [16], 0.2)
    d4 = depthwise_op(m, "d4", "%x", w4, b4, X, [3, 3, 8, 2], [1, 13, 11, 16], [1, 1, 1, 1])
    w5 = m.const("w5", [3, 3, 8, 1], 0.4)
    b5 = m.const("b5", [8], 0.2)
    d5 = depthwise_op(m, "d5", "%x", w5, b5, X, [3, 3, 8, 1], X, [2, 2, 2, 2], (1, 1), (2, 2))
    mp = pool_op(m, "max_pool2d", "mp", "%x", X, [1, 7, 6, 8], (3, 3), [1, 1, 1, 1], (2, 2))
    ap = pool_op(m, "avg_pool2d", "ap", "%x", X, X, (3, 3), [1, 1, 1, 1], (1, 1))
    # Large windows (pocl-cpu checks their padding once per block, where
    # the block lies inside): 5x5 pad 2 and 7x7 stride 2 pad 3.
    w6 = m.const("w6", [5, 5, 8, 1], 0.2)
    b6 = m.const("b6", [8], 0.2)
    d6 = depthwise_op(m, "d6", "%x", w6, b6, X, [5, 5, 8, 1], X, [2, 2, 2, 2])
    w7 = m.const("w7", [7, 7, 8, 1], 0.15)
    b7 = m.const("b7", [8], 0.2)
    d7 = depthwise_op(m, "d7", "%x", w7, b7, X, [7, 7, 8, 1], [1, 7, 6, 8], [3, 3, 3, 3], (2, 2))
    gp = pool_op(m, "avg_pool2d", "gp", "%x", X, [1, 1, 1, 8], (13, 11), [0, 0, 0, 0], (1, 1))
    my = pool_op(m, "max_pool2d", "my", "%y", Y, [1, 9, 8, 6], (2, 2), [0, 0, 0, 0], (1, 1))
    s1 = m.reduce("reduce_sum", "s1", "%x", X, 1)
    s2 = m.reduce("reduce_sum", "s2", s1, [1, 1, 11, 8], 2)
    inv = m.splat("inv", f"{1.0 / 143:.8e}", [1, 1, 1, 1])
    ga = m.mul("ga", s2, inv, [1, 1, 1, 8], [1, 1, 1, 1], [1, 1, 1, 8])
    header = """// The window template's cases (depthwise convolution and pooling,
// columns blocked, channels as float4 where they allow): on 1x13x11x8
// (width 11: column blocks with a tail) a depthwise 3x3 pad 1 with bias,
// ReLU6 and a residual add; 3x3 stride 2 pad 1; channel multiplier 2;
// dilation 2 pad 2; 5x5 pad 2; 7x7 stride 2 pad 3; max pool 3x3 stride
// 2 pad 1; average pool 3x3 pad 1
// (padding not counted); a global 13x11 average pool; and a global
// average as sums over H and W times 1/143. On 1x10x9x6 (channels not a
// multiple of 4) an unpadded depthwise 3x3 (the named op) and a max pool
// 2x2 (named ops: no padding to fold).
// Sums of at most 143 values near 1.
// TOLERANCE: 1e-5 1e-5"""
    return header, m.text([f("x", X), f("y", Y)], [
        (res, X, "f32"), (d2, [1, 7, 6, 8], "f32"), (d3, [1, 8, 7, 6], "f32"),
        (d4, [1, 13, 11, 16], "f32"), (d5, X, "f32"), (mp, [1, 7, 6, 8], "f32"),
        (ap, X, "f32"), (gp, [1, 1, 1, 8], "f32"), (my, [1, 9, 8, 6], "f32"),
        (ga, [1, 1, 1, 8], "f32"), (d6, X, "f32"), (d7, [1, 7, 6, 8], "f32")])
