// The width of the kernels' index arithmetic (`tcc_index`): 32-bit while
// every buffer of every kernel holds fewer than 2^30 elements, 64-bit once
// one does (here a 2^31-element input), for the whole program. Index-typed
// buffers stay 64-bit either way (`long`), like the host's index.
// RUN: split-file %s %t
// RUN: tcc compile %t/small.mlir --emit=opencl-c | FileCheck %s --check-prefix=SMALL
// RUN: tcc compile %t/huge.mlir --emit=opencl-c --max-constant-bytes=17179869184 | FileCheck %s --check-prefix=HUGE

// SMALL: typedef int tcc_index;
// SMALL-NEXT: typedef uint tcc_uindex;
// SMALL: (tcc_index)get_global_id(0)
// SMALL-NOT: {{[0-9]L\b}}

// HUGE: typedef long tcc_index;
// HUGE-NEXT: typedef ulong tcc_uindex;
// HUGE: (tcc_index)get_global_id(0)
// HUGE: 2147483648L

//--- small.mlir
func.func @add(%x: tensor<1024x1024xf32>, %y: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %z = tosa.add %x, %y : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %z : tensor<1024x1024xf32>
}

//--- huge.mlir
func.func @negate(%x: tensor<2048x1024x1024xf32>) -> tensor<2048x1024x1024xf32> {
  %z = tosa.abs %x : (tensor<2048x1024x1024xf32>) -> tensor<2048x1024x1024xf32>
  return %z : tensor<2048x1024x1024xf32>
}
