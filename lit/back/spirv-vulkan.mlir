// The Vulkan target's SPIR-V (`tcc compile --target=vulkan`, docs/vulkan.md):
// the Shader capability with logical addressing and the GLSL450 memory
// model, each buffer argument a Block-decorated StorageBuffer variable of
// descriptor set 0 whose binding is the argument's number, the work-group
// size as the entry point's LocalSize, math through GLSL.std.450; the
// module passes spirv-val for Vulkan 1.1. The artifact holds one module
// with every kernel as an entry point. --target=opencl-spirv writes the
// Kernel-capability form for OpenCL instead. Flags that need OpenCL C or
// PTX are refused.
// RUN: rm -rf %t && mkdir -p %t
// RUN: tcc compile %s --target=vulkan --emit=spirv -o %t/vk
// RUN: spirv-val --target-env vulkan1.1 %t/vk/KERNEL.spv
// RUN: spirv-dis %t/vk/KERNEL.spv | FileCheck %s
// RUN: tcc compile %s --target=vulkan -o %t/model.so
// RUN: tcc compile %s --target=opencl-spirv --emit=spirv -o %t/cl
// RUN: spirv-val --target-env opencl1.2 %t/cl/KERNEL.spv
// RUN: spirv-dis %t/cl/KERNEL.spv | FileCheck %s --check-prefix=KERNEL
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
