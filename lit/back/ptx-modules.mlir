// `tcc compile --ptx-modules=N`: the kernels' PTX comes as N modules, each a
// whole PTX module (its own .version/.target header) holding its share of
// the kernels, separated by `//@tcc-ptx-module` lines, so that the runtime
// can have the driver build them in parallel. Every kernel is in exactly
// one module; what a module does not use of the others is dropped.
// RUN: tcc compile %s --target=nvidia --emit=ptx --ptx-modules=2 | FileCheck %s --check-prefix=TWO --implicit-check-not=.extern
// RUN: tcc compile %s --target=nvidia --emit=ptx | FileCheck %s --check-prefix=DEFAULT --implicit-check-not=//@tcc-ptx-module
// RUN: tcc compile %s --target=nvidia --emit=ptx --ptx-modules=9 | FileCheck %s --check-prefix=CAPPED
// RUN: not tcc compile %s --target=nvidia --emit=ptx --ptx-modules=0 2>&1 | FileCheck %s --check-prefix=ZERO

// Two kernels, two modules: the larger (the GEMM template) first.
// TWO: .version 8.0
// TWO-NEXT: .target sm_90
// TWO-NOT: .entry softmax
// TWO: .entry [[GEMM:[a-z_]*matmul[a-z_0-9]*]](
// TWO-NOT: .entry
// TWO: //@tcc-ptx-module
// TWO-NEXT: //
// TWO: .version 8.0
// TWO-NEXT: .target sm_90
// TWO-NOT: .entry [[GEMM]](
// TWO: .entry softmax
// TWO-NOT: .entry

// Up to 8 kernels stay one module by default.
// DEFAULT-COUNT-1: .version 8.0
// DEFAULT-COUNT-2: .entry

// More modules than kernels: one module per kernel.
// CAPPED-COUNT-1: //@tcc-ptx-module
// CAPPED-NOT: //@tcc-ptx-module

// ZERO: error: invalid value '0' for '--ptx-modules <N>'

func.func @mlp(%x: tensor<1x64x128xf32>, %w: tensor<1x128x96xf32>) -> tensor<1x64x96xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x96xf32>
  %y = tcc.softmax %h axis = -1 : tensor<1x64x96xf32>
  return %y : tensor<1x64x96xf32>
}
