// The PTX back end (`tcc compile --emit=ptx`): every kernel, the GEMM and
// softmax templates included, becomes a PTX entry for the architecture
// asked for, with `.reqntid` from the work-group size, its body inlined
// (no calls), nothing left for the driver to link (no `.extern`) and no
// stack frame (`__local_depot`: registers indexed by a loop counter that
// was not unrolled spill to slow local memory).
// RUN: tcc compile %s --target=nvidia --emit=ptx | FileCheck %s --implicit-check-not=.extern --implicit-check-not=__local_depot --implicit-check-not=call.uni
// RUN: tcc compile %s --target=nvidia --emit=ptx --gpu-arch=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: not tcc compile %s --target=nvidia --emit=ptx --gpu-arch=compute_90 2>&1 | FileCheck %s --check-prefix=BAD-ARCH
// RUN: not tcc compile %s --target=nvidia --emit=ptx --ptx=off 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: env TCC_CLANG=%t.no-such-clang not tcc compile %s --target=nvidia -o %t.so 2>&1 | FileCheck %s --check-prefix=NO-CLANG
// RUN: env TCC_CLANG=%t.no-such-clang tcc compile %s --target=nvidia --ptx=off -o %t.so
// RUN: tcc compile %s --target=nvidia --precision=tf32 --emit=ptx | FileCheck %s --check-prefix=TF32 --implicit-check-not=__local_depot
// RUN: tcc compile %s --target=nvidia --precision=tf32 --emit=opencl-c | FileCheck %s --check-prefix=TF32-CL
// RUN: not tcc compile %s --target=generic --precision=tf32 -o %t.so 2>&1 | FileCheck %s --check-prefix=TF32-GENERIC
// RUN: not tcc compile %s --target=nvidia --precision=tf32 --ptx=off -o %t.so 2>&1 | FileCheck %s --check-prefix=TF32-NO-PTX
// RUN: not tcc compile %s --target=nvidia --precision=tf32 --gpu-arch=sm_75 -o %t.so 2>&1 | FileCheck %s --check-prefix=TF32-SM75
// RUN: tcc compile %s --target=nvidia --precision=fp16 --emit=ptx | FileCheck %s --check-prefix=FP16 --implicit-check-not=__local_depot
// RUN: tcc compile %s --target=nvidia --precision=bf16 --emit=ptx | FileCheck %s --check-prefix=BF16 --implicit-check-not=__local_depot
// RUN: tcc compile %s --target=pocl-cpu --precision=fp16 -o %t.so 2>&1 | FileCheck %s --check-prefix=FP16-CPU
// RUN: not tcc compile %s --target=nvidia --precision=bf16 --gpu-arch=sm_75 -o %t.so 2>&1 | FileCheck %s --check-prefix=BF16-SM75

// CHECK: .version 8.0
// CHECK: .target sm_90
// CHECK: .entry [[GEMM:[a-z_]*matmul[a-z_0-9]*]](
// CHECK: .reqntid [[X:[0-9]+]], [[Y:[0-9]+]], 1
// CHECK: ld.shared
// CHECK: fma.rn.f32
// CHECK: bar.sync 0
// CHECK: .entry [[SOFTMAX:softmax[a-z_0-9]*]](
// CHECK: .reqntid
// CHECK: bar.sync 0
// The row's exponentials come from the hardware's 2^x (tcc_expf), not
// libclc's polynomial.
// CHECK: ex2.approx.ftz.f32

// --precision=tf32: the GEMM templates multiply on tensor cores in the
// PTX form, their tiles copied into local memory by cp.async and A's
// fragments read by ldmatrix; the OpenCL C keeps the fp32 body for other
// drivers.
// TF32: .entry [[GEMM:[a-z_]*matmul[a-z_0-9]*]](
// (@wide's GEMM takes the Hopper wgmma body instead: ptx-wgmma.mlir.)
// TF32: cp.async.cg.shared.global
// TF32: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// TF32: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// TF32: cp.async.wait_group
// TF32-CL: #ifdef TCC_PTX
// TF32-CL: on TF32 tensor cores
// TF32-CL: TCC_MMA_TF32(
// TF32-CL: #else
// TF32-CL: acc[wm][wn] = fma(ra[wm], rb[wn], acc[wm][wn]);
// TF32-CL: #endif
// TF32-GENERIC: --precision=tf32 runs GEMMs on NVIDIA tensor cores: it needs --target=nvidia (got --target=generic)
// TF32-NO-PTX: --precision=tf32 reaches tensor cores only through PTX: drop --ptx=off
// TF32-SM75: --precision=tf32 needs TF32 tensor cores with cp.async (sm_80 or newer), not --gpu-arch=sm_75

// --precision=fp16|bf16: the local tiles hold halves. The operands here
// are the functions' fp32 arguments (inputs keep their type), so they are
// rounded to the tile's type as they are staged (`cvt.rn.f16.f32`); the
// fragments are read as 32-bit words of half pairs (A) or two 16-bit
// loads (B), and the mma takes them as they are.
// FP16: .entry [[GEMM:[a-z_]*matmul[a-z_0-9]*]](
// FP16: cvt.rn.f16.f32
// FP16: st.shared.v4.b16
// FP16: ld.shared.b32
// FP16: ld.shared.b16
// FP16: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// BF16: .entry [[GEMM:[a-z_]*matmul[a-z_0-9]*]](
// BF16: cvt.rn.bf16.f32
// BF16: ld.shared.b32
// BF16: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// Elsewhere 16-bit storage with fp32 arithmetic, said in one line.
// FP16-CPU: note: --precision=fp16 on --target=pocl-cpu without PTX: weights and activations are stored in fp16, GEMMs and convolutions compute in fp32
// BF16-SM75: --precision=bf16 needs BF16 tensor cores with cp.async (sm_80 or newer), not --gpu-arch=sm_75

// SM80: .version 7.1
// SM80: .target sm_80

// BAD-ARCH: --gpu-arch=compute_90: expected sm_XY, e.g. sm_90

// OFF: --emit=ptx contradicts --ptx=off

// NO-CLANG: clang at {{.*}}no-such-clang does not exist: install clang-22 and libclc-22

func.func @mlp(%x: tensor<1x64x128xf32>, %w: tensor<1x128x96xf32>) -> tensor<1x64x96xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x64x128xf32>, tensor<1x128x96xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x64x96xf32>
  %y = tcc.softmax %h axis = -1 : tensor<1x64x96xf32>
  return %y : tensor<1x64x96xf32>
}

// 128x128 tiles of 8x8 outputs per work-item with a bias and relu epilogue:
// the case whose output loop, not unrolled, kept `acc` on the stack.
func.func @wide(%x: tensor<1x2048x64xf32>, %w: tensor<1x64x2048xf32>, %b: tensor<1x1x2048xf32>) -> tensor<1x2048x2048xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2048x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2048x2048xf32>
  %hb = tosa.add %h, %b : (tensor<1x2048x2048xf32>, tensor<1x1x2048xf32>) -> tensor<1x2048x2048xf32>
  %y = tosa.clamp %hb {min_val = 0.0 : f32, max_val = 3.4028235e+38 : f32} : (tensor<1x2048x2048xf32>) -> tensor<1x2048x2048xf32>
  return %y : tensor<1x2048x2048xf32>
}
