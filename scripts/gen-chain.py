#!/usr/bin/env python3
"""Writes an elementwise chain of N TOSA ops (tanh, multiply by a constant,
add a constant, in turn) over a 1x1024x1024 f32 input, the model behind
the fusion cap's build-time curve (docs/reliability.md).

Usage: scripts/gen-chain.py N OUT.mlir"""
import sys

n, out = int(sys.argv[1]), sys.argv[2]
t = "tensor<1x1024x1024xf32>"
lines = [f"func.func @chain(%x: {t}) -> {t} {{",
         '  %c = "tosa.const"() <{values = dense<0.75> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>',
         '  %d = "tosa.const"() <{values = dense<0.125> : tensor<1x1x1xf32>}> : () -> tensor<1x1x1xf32>',
         '  %shift = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>']
value = "%x"
for i in range(n):
    name = f"%v{i}"
    kind = i % 3
    if kind == 0:
        lines.append(f"  {name} = tosa.tanh {value} : ({t}) -> {t}")
    elif kind == 1:
        lines.append(f"  {name} = tosa.mul {value}, %c, %shift : ({t}, tensor<1x1x1xf32>, tensor<1xi8>) -> {t}")
    else:
        lines.append(f"  {name} = tosa.add {value}, %d : ({t}, tensor<1x1x1xf32>) -> {t}")
    value = name
lines.append(f"  return {value} : {t}")
lines.append("}")
open(out, "w").write("\n".join(lines) + "\n")
