// Vector loads and stores of 16-bit and 32-bit channels are single wide
// memory instructions in the PTX form where the view keeps each vector
// aligned (the offset and every other stride multiples of the vector
// width; a dimension of extent 1 aside): libclc's `vload_half4`/`vload4`
// read element by element, which made a 7x7 fp16 depthwise kernel four
// 16-bit loads per float4 of channels (68 load instructions per window
// row where 17 do: ConvNeXt-T's 56x56x96 kernel at batch 32 on an H200
// took 101 us, 58 with the wide loads and stores).
// @dw_half: the first convolution reads its f32 input and the filter
// (7x7x384x1: the multiplier's unit dimension has stride 1) as
// `ld.global.nc.v4.b32` and stores its half output as `st.global.v4.b16`;
// the second reads that half output as `ld.global.nc.v2.b32`.
// @dw_slice (near miss): a channel slice starting at channel 2 is not
// aligned to 4 channels, so its input loads stay element by element (40
// a row: 10 columns x 4 channels).
// The CPU target (pocl-cpu) keeps one store per channel.
// RUN: tcc compile %s --target=nvidia --precision=fp16 --emit=ptx | FileCheck %s --check-prefix=PTX
// RUN: tcc compile %s --target=nvidia --precision=fp16 --emit=opencl-c | FileCheck %s --check-prefix=NV
// RUN: tcc compile %s --target=pocl-cpu --emit=opencl-c | FileCheck %s --check-prefix=CPU

// PTX-LABEL: .entry depthwise_conv_add_0(
// PTX: ld.global.nc.v4.b32
// PTX-NOT: st.global.b16
// PTX: st.global.v4.b16
// PTX-NOT: st.global.b16
// PTX: ret;
// PTX-LABEL: .entry depthwise_conv_add_1(
// PTX-NOT: ld.global.nc.b16
// PTX: ld.global.nc.v2.b32
// PTX-NOT: ld.global.nc.b16
// PTX: st.global.v4.b32
// PTX: ret;
// PTX-LABEL: .entry depthwise_conv_add_2(
// PTX-NOT: ld.global.nc.v2.b32
// PTX-COUNT-40: ld.global.nc.b32
// PTX: ret;

// NV-LABEL: void depthwise_conv_add_0(
// NV: w0 = (*(__global const float4*)(a{{[0-9]+}} + ky * 2688 + kx * 384 + c + m));
// NV: float stored[4];
// NV: stored[l] = v{{[0-9]+}};
// NV: tcc_store_f16_aligned4(stored_vector, a{{[0-9]+}} + n * 75264 + oy * 5376 + ox * 384 + c + om);
// NV-LABEL: void depthwise_conv_add_1(
// NV: const float4 v{{[0-9]+}} = tcc_load_f16_aligned4(a{{[0-9]+}} + n * 75264 + v{{[0-9]+}} * 5376 + v{{[0-9]+}} * 384 + c);
// NV-LABEL: void depthwise_conv_add_2(
// NV: const float4 v{{[0-9]+}} = vload4(0, a{{[0-9]+}} + 2 + n * 76048 + v{{[0-9]+}} * 5432 + v{{[0-9]+}} * 388 + c);

// CPU-LABEL: void depthwise_conv_add_0(
// CPU-NOT: stored_vector
// CPU-LABEL: void depthwise_conv_add_2(

func.func @dw_half(%x: tensor<32x14x14x384xf32>, %w: tensor<7x7x384x1xf32>, %b: tensor<384xf32>) -> tensor<32x14x14x384xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %y = tosa.depthwise_conv2d %x, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 3, 3, 3, 3>, stride = array<i64: 1, 1>} : (tensor<32x14x14x384xf32>, tensor<7x7x384x1xf32>, tensor<384xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x14x14x384xf32>
  %z = tosa.depthwise_conv2d %y, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 3, 3, 3, 3>, stride = array<i64: 1, 1>} : (tensor<32x14x14x384xf32>, tensor<7x7x384x1xf32>, tensor<384xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x14x14x384xf32>
  return %z : tensor<32x14x14x384xf32>
}

func.func @dw_slice(%x: tensor<32x14x14x388xf32>, %w: tensor<7x7x384x1xf32>, %b: tensor<384xf32>) -> tensor<32x14x14x384xf32> {
  %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
  %start = tosa.const_shape {values = dense<[0, 0, 0, 2]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %size = tosa.const_shape {values = dense<[32, 14, 14, 384]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %s = tosa.slice %x, %start, %size : (tensor<32x14x14x388xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<32x14x14x384xf32>
  %y = tosa.depthwise_conv2d %s, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 3, 3, 3, 3>, stride = array<i64: 1, 1>} : (tensor<32x14x14x384xf32>, tensor<7x7x384x1xf32>, tensor<384xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<32x14x14x384xf32>
  return %y : tensor<32x14x14x384xf32>
}
