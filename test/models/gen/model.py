"""The model builder of the end-to-end test model generator (gen.py):
tensor types, nested literals and `Model`, which collects a function's
SSA lines and random dense weights (random.Random(<model name>), so
every run writes the same file)."""

import random

def T(shape, et="f32"):
    """tensor<2x3xf32>"""
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def nested(values, shape):
    if not shape:
        return values[0]
    if len(shape) == 1:
        return "[" + ", ".join(values) + "]"
    step = len(values) // shape[0]
    return "[" + ", ".join(nested(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


class Model:
    def __init__(self, name):
        self.name = name
        self.rng = random.Random(name)
        self.lines = []

    def emit(self, line):
        self.lines.append("  " + line)

    def const(self, name, shape, scale=0.5, offset=0.0):
        """A deterministic f32 weight, uniform in [offset-scale, offset+scale]."""
        n = 1
        for d in shape:
            n *= d
        values = [f"{offset + self.rng.uniform(-scale, scale):.4f}" for _ in range(n)]
        self.emit(f'%{name} = "tosa.const"() <{{values = dense<{nested(values, shape)}> : {T(shape)}}}> : () -> {T(shape)}')
        return f"%{name}"

    def splat(self, name, value, shape, et="f32"):
        self.emit(f'%{name} = "tosa.const"() <{{values = dense<{value}> : {T(shape, et)}}}> : () -> {T(shape, et)}')
        return f"%{name}"

    def ints(self, name, values, shape, et="i32"):
        vals = [str(v) for v in values]
        self.emit(f'%{name} = "tosa.const"() <{{values = dense<{nested(vals, shape)}> : {T(shape, et)}}}> : () -> {T(shape, et)}')
        return f"%{name}"

    def shape(self, name, values):
        self.emit(f"%{name} = tosa.const_shape {{values = dense<[{', '.join(map(str, values))}]> : tensor<{len(values)}xindex>}} : () -> !tosa.shape<{len(values)}>")
        return f"%{name}"

    def zp(self):
        return self.splat("zp", "0.0", [1])

    def shift(self):
        return self.splat("shift", "0", [1], "i8")

    def reshape(self, name, x, xs, ys):
        s = self.shape(name + "_shape", ys)
        self.emit(f"%{name} = tosa.reshape {x}, {s} : ({T(xs)}, !tosa.shape<{len(ys)}>) -> {T(ys)}")
        return f"%{name}"

    def matmul(self, name, a, b, ash, bsh):
        out = [ash[0], ash[1], bsh[2]]
        self.emit(f"%{name} = tosa.matmul {a}, {b}, %zp, %zp : ({T(ash)}, {T(bsh)}, tensor<1xf32>, tensor<1xf32>) -> {T(out)}")
        return f"%{name}"

    def binary(self, op, name, a, b, ash, bsh, osh, et="f32"):
        self.emit(f"%{name} = tosa.{op} {a}, {b} : ({T(ash)}, {T(bsh)}) -> {T(osh, et)}")
        return f"%{name}"

    def mul(self, name, a, b, ash, bsh, osh):
        self.emit(f"%{name} = tosa.mul {a}, {b}, %shift : ({T(ash)}, {T(bsh)}, tensor<1xi8>) -> {T(osh)}")
        return f"%{name}"

    def unary(self, op, name, x, shape):
        self.emit(f"%{name} = tosa.{op} {x} : ({T(shape)}) -> {T(shape)}")
        return f"%{name}"

    def transpose(self, name, x, xs, perms):
        ys = [xs[p] for p in perms]
        self.emit(f"%{name} = tosa.transpose {x} {{perms = array<i32: {', '.join(map(str, perms))}>}} : ({T(xs)}) -> {T(ys)}")
        return f"%{name}"

    def clamp(self, name, x, shape, lo, hi):
        self.emit(f"%{name} = tosa.clamp {x} {{min_val = {lo} : f32, max_val = {hi} : f32}} : ({T(shape)}) -> {T(shape)}")
        return f"%{name}"

    def relu(self, name, x, shape):
        return self.clamp(name, x, shape, "0.0", "3.4028235e+38")

    def reduce(self, op, name, x, shape, axis):
        ys = list(shape)
        ys[axis] = 1
        self.emit(f"%{name} = tosa.{op} {x} {{axis = {axis} : i32}} : ({T(shape)}) -> {T(ys)}")
        return f"%{name}"

    def text(self, args, results):
        """args: [(name, shape, et)], results: [(value, shape, et)]"""
        sig = ", ".join(f"%{n}: {T(s, e)}" for n, s, e in args)
        rtypes = [T(s, e) for _, s, e in results]
        rt = rtypes[0] if len(rtypes) == 1 else "(" + ", ".join(rtypes) + ")"
        out = [f"func.func @{self.name}({sig}) -> {rt} {{"]
        out += self.lines
        out.append(f"  return {', '.join(v for v, _, _ in results)} : {', '.join(rtypes)}")
        out.append("}")
        return "\n".join(out) + "\n"


def f(name, shape):
    return (name, shape, "f32")


# ---------------------------------------------------------------- models
