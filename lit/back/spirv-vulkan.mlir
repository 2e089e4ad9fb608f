// The Vulkan target's SPIR-V (`tcc compile --target=vulkan`, docs/vulkan.md):
// the Shader capability with logical addressing and the GLSL450 memory
// model, 32-bit indices (no 64-bit integer type), each buffer argument a Block-decorated StorageBuffer variable of
// descriptor set 0 whose binding is the argument's number, the work-group
// size as the entry point's LocalSize, math through GLSL.std.450; the
// module passes spirv-val for Vulkan 1.1. The artifact holds one module
// with every kernel as an entry point. --target=opencl-spirv writes the
// Kernel-capability form for OpenCL instead. Flags that need OpenCL C or
// PTX are refused.
// RUN: rm -rf %t && mkdir -p %t
// RUN: tcc compile %s --target=vulkan --emit=spirv -o %t/vk
// RUN: spirv-val --target-env vulkan1.1 %t/vk/add_exp_0.spv
// RUN: spirv-dis %t/vk/add_exp_0.spv | FileCheck %s --implicit-check-not="OpTypeInt 64" --implicit-check-not="OpCapability Kernel"
// RUN: tcc compile %s --target=vulkan -o %t/model.so
// RUN: tcc compile %s --target=opencl-spirv --emit=spirv -o %t/cl
// RUN: spirv-val --target-env opencl1.2 %t/cl/add_exp_0.spv
// RUN: spirv-dis %t/cl/add_exp_0.spv | FileCheck %s --check-prefix=KERNEL
// RUN: not tcc compile %s --target=vulkan --precision=fp16 -o %t/x.so 2>&1 | FileCheck %s --check-prefix=FP16
// RUN: not tcc compile %s --target=vulkan --emit=opencl-c 2>&1 | FileCheck %s --check-prefix=OPENCL-C
// RUN: not tcc compile %s --target=vulkan --ptx=on -o %t/x.so 2>&1 | FileCheck %s --check-prefix=PTX
// RUN: not tcc compile %s --target=vulkn -o %t/x.so 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// TOLERANCE: 1e-6 1e-5
func.func @add_exp(%a: tensor<4x64xf32>, %b: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %s = tosa.add %a, %b : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32>
  %e = tosa.exp %s : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %e : tensor<4x64xf32>
}

// CHECK: OpCapability Shader
// CHECK-NOT: OpCapability Addresses
// CHECK: OpExtension "SPV_KHR_storage_buffer_storage_class"
// CHECK: [[GLSL:%[0-9]+]] = OpExtInstImport "GLSL.std.450"
// CHECK: OpMemoryModel Logical GLSL450
// CHECK: OpEntryPoint GLCompute %add_exp_0 "add_exp_0"
// CHECK: OpExecutionMode %add_exp_0 LocalSize 128 1 1
// CHECK-DAG: OpDecorate [[STRUCT:%[_a-z0-9]+]] Block
// CHECK-DAG: OpDecorate %add_exp_0_arg_0 Binding 0
// CHECK-DAG: OpDecorate %add_exp_0_arg_0 DescriptorSet 0
// CHECK-DAG: OpDecorate %add_exp_0_arg_1 Binding 1
// CHECK-DAG: OpDecorate %add_exp_0_arg_1 DescriptorSet 0
// CHECK-DAG: OpDecorate %add_exp_0_arg_2 Binding 2
// CHECK-DAG: OpDecorate %add_exp_0_arg_2 DescriptorSet 0
// CHECK: %add_exp_0_arg_0 = OpVariable %_ptr_StorageBuffer_{{.*}} StorageBuffer
// CHECK: OpFunction %void
// CHECK: OpExtInst %float [[GLSL]] Exp
// CHECK: OpFunctionEnd

// KERNEL: OpCapability Kernel
// KERNEL-NOT: OpCapability Shader
// KERNEL: OpExtInstImport "OpenCL.std"
// KERNEL: OpMemoryModel Physical64 OpenCL
// KERNEL: OpEntryPoint Kernel %add_exp_0 "add_exp_0"
// KERNEL: OpExecutionMode %add_exp_0 LocalSize 128 1 1

// FP16: error: --precision=fp16 needs the OpenCL C or PTX kernels: --target=vulkan writes f32 loop-nest kernels only
// OPENCL-C: error: --target=vulkan ships SPIR-V kernels: --emit=spirv writes them (one .spv per kernel), --emit=artifact the model
// PTX: error: --target=vulkan ships SPIR-V kernels: PTX and --backend=cuda need --target=nvidia
// UNKNOWN: error: --target=vulkn: unknown target 'vulkn' (targets: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host, generic, nvidia, pocl-cpu, vulkan, opencl-spirv, auto)
