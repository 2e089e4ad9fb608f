// RUN: tcc compile %s --target=nvidia --precision=tf32 --emit=ptx | FileCheck %s --implicit-check-not=__local_depot --implicit-check-not=mma.sync
// RUN: tcc compile %s --target=nvidia --precision=tf32 --emit=opencl-c | FileCheck %s --check-prefix=CL
// RUN: tcc compile %s --target=nvidia --precision=tf32 --gpu-arch=sm_80 --emit=ptx | FileCheck %s --check-prefix=SM80 --implicit-check-not=wgmma
// RUN: tcc compile %s --target=nvidia --precision=fp16 --emit=ptx | FileCheck %s --check-prefix=FP16 --implicit-check-not=wgmma
// RUN: tcc compile %s --target=nvidia --emit=ptx | FileCheck %s --check-prefix=FP32 --implicit-check-not=wgmma
// The TF32 GEMM on Hopper (issue 9): a 2048x2048 output takes NVIDIA's
// 128x128 tile, and its plain row-major operands qualify for the wgmma
// body, so the program's PTX is generated for sm_90a and PTX ISA 8.3 (the
// wgmma body; ptxas refuses wgmma for plain sm_90): the work-group builds
// its tensor map of A in its slot (the kernel's last argument), two
// warpgroups of m64n128k8 per work-group read A through a
// 128-byte-swizzle descriptor after the TMA's copy lands on the stage's
// mbarrier, B's fragments loaded `.cg` (L2 only). Another architecture
// (sm_80), FP16 and fp32 keep their bodies and their target.
// CHECK: .version 8.3
// CHECK: .target sm_90a
// CHECK: .entry [[GEMM:[a-z_]*matmul[a-z_0-9]*]](
// CHECK: .param .u64 .ptr .global .align 1 [[GEMM]]_param_3
// CHECK: .reqntid 16, 16, 1
// CHECK: tensormap.replace.tile.global_address.global.b1024.b64
// CHECK: fence.proxy.tensormap::generic.acquire.gpu
// CHECK: mbarrier.init.shared::cta.b64
// CHECK: mbarrier.arrive.expect_tx.shared::cta.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: bar.sync 0
// CHECK: wgmma.fence.sync.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// CHECK: wgmma.commit_group.sync.aligned
// CHECK: ld.global.cg.v2.f32
// CHECK: wgmma.wait_group.sync.aligned 0
// CL: #if defined(TCC_PTX) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// CL: on TF32 wgmma
// CL: #elif defined(TCC_PTX)
// CL: TCC_MMA_TF32(
// CL: #else
// SM80: .target sm_80
// SM80: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// FP16: .version 8.0
// FP16: .target sm_90{{$}}
// FP16: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// FP32: .target sm_90{{$}}
// FP32: fma.rn.f32
func.func @tiles128(%x: tensor<1x2048x64xf32>, %w: tensor<1x64x2048xf32>) -> tensor<1x2048x2048xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2048x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2048x2048xf32>
  return %h : tensor<1x2048x2048xf32>
}
