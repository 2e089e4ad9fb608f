#!/usr/bin/env python3
"""Writes the benchmark models (TOSA MLIR) into a directory.

sgemm_N: C = A @ B for N x N x N f32 (inputs A, B: 1xNxN), the matmul that
cuBLAS SGEMM is compared with. mlp_bias_relu_N: a dense layer with bias and
relu epilogue (fused into the GEMM kernel). softmax_R_C: a row softmax.
rowsum_R_C: sum(exp(x)) over rows (row-reduction template).
"""
import sys
from pathlib import Path

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)

for n in (1024, 2048, 4096):
    (out / f"sgemm_{n}.mlir").write_text(f"""// SGEMM {n}x{n}x{n}: the product cuBLAS is compared with.
func.func @sgemm(%a: tensor<1x{n}x{n}xf32>, %b: tensor<1x{n}x{n}xf32>) -> tensor<1x{n}x{n}xf32> {{
  %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
  %c = tosa.matmul %a, %b, %zp, %zp : (tensor<1x{n}x{n}xf32>, tensor<1x{n}x{n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{n}x{n}xf32>
  return %c : tensor<1x{n}x{n}xf32>
}}
""")

for m, k, n in ((512, 1024, 1024), (2048, 1024, 4096)):
    (out / f"dense_{m}x{k}x{n}.mlir").write_text(f"""// Dense layer {m}x{k} @ {k}x{n} + bias, relu: one fused GEMM kernel.
func.func @dense(%x: tensor<1x{m}x{k}xf32>, %w: tensor<1x{k}x{n}xf32>, %b: tensor<1x1x{n}xf32>) -> tensor<1x{m}x{n}xf32> {{
  %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
  %mm = tosa.matmul %x, %w, %zp, %zp : (tensor<1x{m}x{k}xf32>, tensor<1x{k}x{n}xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x{m}x{n}xf32>
  %add = tosa.add %mm, %b : (tensor<1x{m}x{n}xf32>, tensor<1x1x{n}xf32>) -> tensor<1x{m}x{n}xf32>
  %y = tosa.clamp %add {{min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32}} : (tensor<1x{m}x{n}xf32>) -> tensor<1x{m}x{n}xf32>
  return %y : tensor<1x{m}x{n}xf32>
}}
""")

for r, c in ((4096, 1024),):
    (out / f"rowsum_{r}x{c}.mlir").write_text(f"""// Row sums of exp over {r} rows of {c}: the row-reduction template.
func.func @rowsum(%x: tensor<{r}x{c}xf32>) -> tensor<{r}x1xf32> {{
  %e = tosa.exp %x : (tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32>
  %s = tosa.reduce_sum %e {{axis = 1 : i32}} : (tensor<{r}x{c}xf32>) -> tensor<{r}x1xf32>
  return %s : tensor<{r}x1xf32>
}}
""")
    (out / f"softmax_{r}x{c}.mlir").write_text(f"""// Row softmax over {r}x{c}.
func.func @softmax(%x: tensor<{r}x{c}xf32>) -> tensor<{r}x{c}xf32> {{
  %y = tcc.softmax %x axis = -1 : tensor<{r}x{c}xf32>
  return %y : tensor<{r}x{c}xf32>
}}
""")
