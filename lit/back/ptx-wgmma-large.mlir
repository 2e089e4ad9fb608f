// RUN: tcc compile %s --target=nvidia --precision=tf32 --backend=cuda --emit=ptx | FileCheck %s --implicit-check-not=__local_depot
// RUN: tcc compile %s --target=nvidia --precision=tf32 --backend=cuda --emit=opencl-c | FileCheck %s --check-prefix=CL
// RUN: tcc compile %s --target=nvidia --precision=tf32 --emit=ptx | FileCheck %s --check-prefix=OPENCL --implicit-check-not=tcc-dynamic-local --implicit-check-not=m64n256k8
// RUN: tcc compile %s --target=nvidia --precision=tf32 --backend=cuda --gpu-arch=sm_80 --emit=ptx | FileCheck %s --check-prefix=SM80 --implicit-check-not=tcc-dynamic-local --implicit-check-not=wgmma
// RUN: tcc compile %s --target=nvidia --precision=tf32 --backend=cuda -o %t.so
// RUN: tcc inspect %t.so | FileCheck %s --check-prefix=INSPECT
// RUN: not tcc compile %s --target=generic --backend=cuda -o %t.so 2>&1 | FileCheck %s --check-prefix=GENERIC
// RUN: not tcc compile %s --target=nvidia --ptx=off --backend=cuda -o %t.so 2>&1 | FileCheck %s --check-prefix=NOPTX
// The TF32 GEMM for the runtime's CUDA backend (`--backend=cuda`, issue 9):
// a product whose sizes divide the 256x128 tile (M = 2048, N = 2048, K =
// 64) takes the large-tile wgmma body, which stages A and B in 193 KiB of
// CUDA dynamic local memory. The PTX declares that memory after its
// header (the kernel's need is its launch record's, which `tcc inspect`
// shows; the PTX holds no marker);
// B's fragments come from local memory, one wgmma group stays in flight.
// A product whose rows do not divide 256 (M = 2176) keeps the 128x128
// tile and the 48 KiB body. Through OpenCL (the default backend) and for
// sm_80 no kernel asks for dynamic local memory.
// CHECK: .target sm_90a
// CHECK: .address_size 64
// CHECK: .extern .shared .align 16 .b8 tcc_dynamic_local[];
// CHECK-NOT: tcc-dynamic-local
// CHECK: .entry [[LARGE:batch_matmul_[0-9]+]](
// CHECK: .reqntid 16, 16, 1
// CHECK: mov.u32 {{.*}}, tcc_dynamic_local;
// CHECK: tensormap.replace.tile.box_dim.global.b1024.b32 [{{.*}}], 1, {{.*}};
// CHECK: mbarrier.arrive.expect_tx.shared::cta.b64 _, [{{.*}}], 49152;
// CHECK: ld.shared.v2.f32
// CHECK: wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK: .entry [[MID:batch_matmul_[0-9]+]](
// CHECK: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// CHECK: ld.global.cg.v2.f32
// CL: #if defined(TCC_PTX) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// CL: tile 256x128x8, 16x8 outputs per work-item on TF32 wgmma (2 warpgroups, 4 stages of k 32 of A and B copied by the TMA into 197632 bytes of CUDA dynamic local memory)
// CL: /* tcc-dynamic-local: 197632 */
// CL: #elif defined(TCC_PTX)
// CL: #else
// CL: tile 256x128x8, 16x8 outputs per work-item; M=2048 N=2048 K=64
// CL: tile 128x128x16, 8x8 outputs per work-item on TF32 wgmma (2 warpgroups, 2 stages of k 32 copied by the TMA, 128-byte swizzle); M=2176
// OPENCL: .target sm_90a
// OPENCL-COUNT-2: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// SM80: .target sm_80
// SM80: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// INSPECT: kernels: 2
// INSPECT-NEXT: batch_matmul_0  kind=matmul  workgroup_size=16x16x1  flops=536870912  cuda_dynamic_local=197632
// INSPECT-NEXT: batch_matmul_1  kind=matmul  workgroup_size=16x16x1  flops=570425344{{$}}
// GENERIC: error: --backend=cuda launches NVIDIA kernels through the CUDA driver: it needs --target=nvidia (got --target=generic)
// NOPTX: error: --backend=cuda runs the artifact's PTX: drop --ptx=off
func.func @two(%x: tensor<1x2048x64xf32>, %w: tensor<1x64x2048xf32>, %y: tensor<1x2176x64xf32>) -> (tensor<1x2048x2048xf32>, tensor<1x2176x2048xf32>) {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %h = tosa.matmul %x, %w, %zp, %zp : (tensor<1x2048x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2048x2048xf32>
  %g = tosa.matmul %y, %w, %zp, %zp : (tensor<1x2176x64xf32>, tensor<1x64x2048xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2176x2048xf32>
  return %h, %g : tensor<1x2048x2048xf32>, tensor<1x2176x2048xf32>
}
