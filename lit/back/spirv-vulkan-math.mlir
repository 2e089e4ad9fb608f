// What the Vulkan SPIR-V writes where GLSL.std.450 has no exact instruction
// (docs/vulkan.md, `tccLowerMathForShader` in dialects/cpp/TccMath.cpp), and
// boolean buffers: erf is a rational function (no Erf instruction, and
// no "failed to legalize operation 'math.erf'"), minimum is compares,
// selects and the bitwise or of the operands for signed zeros (no FMin or
// NMin), log scales a subnormal operand by 2^24 (16777216) first, and the
// boolean output is stored as bytes within 32-bit words (an atomic and/or of
// the byte's bits; no 8-bit or boolean storage type). Each module passes
// spirv-val for Vulkan 1.1.
// RUN: rm -rf %t && mkdir -p %t
// RUN: tcc compile %s --target=vulkan --emit=spirv -o %t/vk
// RUN: spirv-val --target-env vulkan1.1 %t/vk/erf_0.spv
// RUN: spirv-val --target-env vulkan1.1 %t/vk/min_1.spv
// RUN: spirv-val --target-env vulkan1.1 %t/vk/log_2.spv
// RUN: spirv-val --target-env vulkan1.1 %t/vk/cmp_3.spv
// RUN: spirv-dis %t/vk/erf_0.spv | FileCheck %s --check-prefix=ERF --implicit-check-not=" Erf"
// RUN: spirv-dis %t/vk/min_1.spv | FileCheck %s --check-prefix=MIN --implicit-check-not=FMin --implicit-check-not=NMin
// RUN: spirv-dis %t/vk/log_2.spv | FileCheck %s --check-prefix=LOG
// RUN: spirv-dis %t/vk/cmp_3.spv | FileCheck %s --check-prefix=BOOL --implicit-check-not="OpCapability Int8"

func.func @math(%a: tensor<64xf32>, %b: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xi1>) {
  %e = tosa.erf %a : (tensor<64xf32>) -> tensor<64xf32>
  %m = tosa.minimum %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %l = tosa.log %b : (tensor<64xf32>) -> tensor<64xf32>
  %g = tosa.greater %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xi1>
  return %e, %m, %l, %g : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xi1>
}

// ERF-COUNT-10: OpExtInst %float {{%[0-9]+}} Fma
// ERF: OpFDiv %float

// MIN: [[A:%[0-9]+]] = OpBitcast %uint [[X:%[0-9]+]]
// MIN-NEXT: [[B:%[0-9]+]] = OpBitcast %uint [[Y:%[0-9]+]]
// MIN-NEXT: [[OR:%[0-9]+]] = OpBitwiseOr %uint [[A]] [[B]]
// MIN: OpIsNan %bool
// MIN: OpFOrdLessThan %bool [[X]] [[Y]]

// LOG: %float_16777216 = OpConstant %float 16777216
// LOG: OpFOrdLessThan %bool
// LOG: OpFMul %float {{%[0-9]+}} %float_16777216
// LOG: OpExtInst %float {{%[0-9]+}} Log
// LOG: OpFSub %float

// BOOL: OpAtomicAnd %uint
// BOOL: OpAtomicOr %uint
