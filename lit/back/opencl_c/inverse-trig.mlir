// The inverse and hyperbolic trigonometric math ops (the ONNX importer's
// Asin, Acos, Sinh, Cosh, Asinh, Acosh, Atanh) become OpenCL C built-ins,
// for every target.
// RUN: tcc compile %s --emit=opencl-c --target=generic | FileCheck %s
// RUN: tcc compile %s --emit=opencl-c --target=pocl-cpu | FileCheck %s
// RUN: tcc compile %s --emit=opencl-c --target=nvidia | FileCheck %s

// CHECK-DAG: asin(
// CHECK-DAG: acos(
// CHECK-DAG: sinh(
// CHECK-DAG: cosh(
// CHECK-DAG: asinh(
// CHECK-DAG: acosh(
// CHECK-DAG: atanh(

func.func @trig(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %a = math.asin %v : f32
    %b = math.acos %v : f32
    %c = math.sinh %v : f32
    %d = math.cosh %v : f32
    %f = math.asinh %v : f32
    %g = math.acosh %v : f32
    %h = math.atanh %v : f32
    %s1 = arith.addf %a, %b : f32
    %s2 = arith.addf %c, %d : f32
    %s3 = arith.addf %f, %g : f32
    %s4 = arith.addf %s1, %s2 : f32
    %s5 = arith.addf %s3, %h : f32
    %s = arith.addf %s4, %s5 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
