//! Kernels whose strategy is `#tcc.gemm`: a (batched) matmul, the fill
//! that initialises it and its fused elementwise epilogue, instantiated from
//! the tiled GEMM template of `tcc-kernels`. This module reads the operands'
//! layouts off the kernel IR and turns the epilogue's `linalg.generic` body
//! into the C statements the template runs per output element.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, RegionLike, TypeLike, Value, ValueLike};
use tcc_kernels::{
    Buffer, GemmConfig, GemmOperand, GemmShape, GemmSpec, KernelParameters, Storage, TensorCores,
    gemm::ConvImage, gemm_kernel,
};

use super::conv_inputs::channel_vectorizable;
use super::template::{KernelTemplate, TemplateKernel, gemm_comment};
use super::writer::{
    ElementType, KernelWriter, MemrefView, Precision, argument_buffer, key, memref_shape,
};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::op_name;

fn operand_of(view: &MemrefView, rank: usize) -> GemmOperand {
    let strides = &view.strides;
    let (batch_stride, row_stride, col_stride) = if rank == 3 {
        (strides[0], strides[1], strides[2])
    } else {
        (0, strides[0], strides[1])
    };
    GemmOperand {
        buffer: view.buffer.clone(),
        offset: view.offset,
        batch_stride,
        row_stride,
        col_stride,
    }
}

/// An operand the template never reads through (its loads come from an
/// offset expression or computed elements instead): only its buffer.
fn placeholder_operand(buffer: &Buffer) -> GemmOperand {
    GemmOperand {
        buffer: buffer.clone(),
        offset: 0,
        batch_stride: 0,
        row_stride: 0,
        col_stride: 0,
    }
}

/// The B operand of an implicit-GEMM convolution: its HWCF filter is the
/// K x N matrix `B[k][j]` (`k` runs over kh, kw, c), row-major with rows of
/// F when the filter is contiguous, which the template loads like any
/// matrix (as float4 where F allows); otherwise an offset expression
/// through the window coordinates.
fn filter_operand(
    b: &MemrefView,
    filter: &[i64],
    [ky, kx, ch]: [String; 3],
) -> (GemmOperand, Option<String>) {
    let (kw, channels, features) = (filter[1], filter[2], filter[3]);
    let contiguous = b.strides == [kw * channels * features, channels * features, features, 1];
    if contiguous {
        let operand = GemmOperand {
            buffer: b.buffer.clone(),
            offset: b.offset,
            batch_stride: 0,
            row_stride: features,
            col_stride: 1,
        };
        return (operand, None);
    }
    (
        placeholder_operand(&b.buffer),
        Some(b.address(&[ky, kx, ch, "j".to_string()])),
    )
}

/// The B operand of an implicit-GEMM convolution whose filter is stored in
/// panels of `panel` output channels (`F/P x KH x KW x C x P`, contiguous):
/// the template reads it as `[N/P][K][P]` from the view's offset.
fn panel_operand(
    op: OperationRef,
    b: &MemrefView,
    filter: &[i64],
    panel: i64,
) -> Result<GemmOperand, CodegenError> {
    let (kh, kw, channels) = (filter[0], filter[1], filter[2]);
    let contiguous = [
        kh * kw * channels * panel,
        kw * channels * panel,
        channels * panel,
        panel,
        1,
    ];
    if b.strides != contiguous {
        return Err(CodegenError::at(
            &op,
            format!(
                "a filter in panels of {panel} must be contiguous, not strided {:?}",
                b.strides
            ),
        ));
    }
    Ok(GemmOperand {
        buffer: b.buffer.clone(),
        offset: b.offset,
        batch_stride: 0,
        row_stride: panel,
        col_stride: 1,
    })
}

/// C expressions of an implicit-GEMM convolution's window coordinates for
/// GEMM row `i` and column `k`, given its NHWC output and HWCF filter
/// shapes: the image `n`, output pixel `y`, `x`, filter tap `ky`, `kx`
/// and input channel `ch`. With `nested_k` the template walks K as the
/// window's own loops (`GemmSpec::k_window`), and the tap and channel are
/// those loops' variables rather than quotients and remainders of `k`.
fn window(output: &[i64], filter: &[i64], nested_k: bool) -> [String; 6] {
    let (oh, ow, kw, channels) = (output[1], output[2], filter[1], filter[2]);
    let [ky, kx, ch] = if nested_k {
        ["k_ky".into(), "k_kx".into(), "k_ch".into()]
    } else {
        [
            format!("(k / {})", kw * channels),
            format!("((k / {channels}) % {kw})"),
            format!("(k % {channels})"),
        ]
    };
    [
        format!("(i / {})", oh * ow),
        format!("((i / {ow}) % {oh})"),
        format!("(i % {ow})"),
        ky,
        kx,
        ch,
    ]
}

/// A convolution's K as its window's loops, `[taps_y, taps_x, channels]`
/// (see `GemmSpec::k_window`), from its HWCF filter shape.
fn k_window(filter: &[i64]) -> [i64; 3] {
    [filter[0], filter[1], filter[2]]
}

/// Static values of a conv attribute like `dense<[2, 1]> : tensor<2xi64>`
/// or the splat `dense<1> : tensor<2xi64>`; absent: 1.
fn pair(op: OperationRef, name: &str) -> Result<[i64; 2], CodegenError> {
    crate::ir::dense::conv_pair(op, name).ok_or_else(|| {
        let attribute = op
            .attribute(name)
            .map(|a| a.to_string())
            .unwrap_or_default();
        CodegenError::at(&op, format!("cannot read {name} = {attribute}"))
    })
}

/// The implicit GEMMs of a grouped convolution (`ir::grouped_conv`), the
/// group `b` the template's batch: A reads the NHWC input at channel
/// `b * Cg + ch`, B is group `b`'s `[KH, KW, Cg, Fg]` block of the
/// `[G, KH, KW, Cg, Fg]` filter (row-major rows of Fg where the filter is
/// contiguous, so loaded like any matrix), and C's column `j` is output
/// channel `b * Fg + j` (`j * G + b` with a channel shuffle folded in).
/// As for a plain convolution, 4 neighbouring k are
/// 4 contiguous channels (one float4) where Cg is a multiple of 4.
fn grouped_conv(
    (a, b, c, c_value_key): (MemrefView, MemrefView, MemrefView, usize),
    conv: crate::ir::grouped_conv::GroupedConv,
    tile_k: i64,
    nested_k: bool,
    load_channels: &dyn Fn(&MemrefView, &str) -> String,
) -> Contraction {
    let [groups, kh, kw, cg, fg] = conv.filter;
    let ([sh, sw], [dh, dw]) = (conv.strides, conv.dilations);
    let [n, y, x, ky, kx, ch] = window(&conv.output, &[kh, kw, cg, fg], nested_k);
    // One image: its index is 0 (the compiler cannot tell that `i / (OH *
    // OW)` is, and its multiple of the image's size stayed in every load:
    // ShuffleNet's grouped 1x1 convolutions ran a quarter slower so).
    let n = if conv.output[0] == 1 {
        "0".to_string()
    } else {
        n
    };
    let vector = !nested_k && cg % 4 == 0 && tile_k % 4 == 0;
    let a_offset = a.address(&[
        n.clone(),
        format!("({y} * {sh} + {ky} * {dh})"),
        format!("({x} * {sw} + {kx} * {dw})"),
        format!("(b * {cg} + {ch})"),
    ]);
    let contiguous = b.strides == [kh * kw * cg * fg, kw * cg * fg, cg * fg, fg, 1];
    let (b_operand, b_offset) = if contiguous {
        let operand = GemmOperand {
            buffer: b.buffer.clone(),
            offset: b.offset,
            batch_stride: kh * kw * cg * fg,
            row_stride: fg,
            col_stride: 1,
        };
        (operand, None)
    } else {
        (
            placeholder_operand(&b.buffer),
            Some(b.address(&["b".to_string(), ky, kx, ch, "j".to_string()])),
        )
    };
    Contraction {
        a: placeholder_operand(&a.buffer),
        a_offset: (!vector).then(|| a_offset.clone()),
        a_element: vector.then(|| (String::new(), load_channels(&a, &a_offset))),
        a_element_vector: vector,
        k_window: nested_k.then_some([kh, kw, cg]),
        a_inside: None,
        a_image: None,
        b: b_operand,
        b_offset,
        b_panel: None,
        c,
        c_value_key,
        dims: vec![
            n,
            y,
            x,
            if conv.shuffled {
                format!("(j * {groups} + b)")
            } else {
                format!("(b * {fg} + j)")
            },
        ],
    }
}

/// What a contraction operand is called in errors.
const OPERAND: &str = "contraction operand";

/// The contraction a GEMM kernel computes, with C index expressions for
/// the output's dimensions in terms of `b`, `i`, `j`.
struct Contraction {
    a: GemmOperand,
    a_offset: Option<String>,
    a_element: Option<(String, String)>,
    /// `a_element` computes a float4 of 4 neighbouring channels.
    a_element_vector: bool,
    /// A convolution's K walked as its window's loops (`nested_k`).
    k_window: Option<[i64; 3]>,
    /// The padding's bounds check in `a_element` (`GemmSpec::a_inside`).
    a_inside: Option<String>,
    /// A convolution's image read as it is (`GemmSpec::a_image`).
    a_image: Option<ConvImage>,
    b: GemmOperand,
    b_offset: Option<String>,
    /// B in panels of this many output channels (`GemmSpec::b_panel`).
    b_panel: Option<i64>,
    c: MemrefView,
    c_value_key: usize,
    dims: Vec<String>,
}

/// Whether `op` is a 2-D NHWC/HWCF convolution rewritten into a `tcc.conv`
/// by `tcc-fold-conv-inputs` (input padding and producer in its body).
fn is_conv_op(op: OperationRef) -> bool {
    op_name(&op) == crate::ir::conv::OP
        && crate::ir::contraction::window_layout(op).0 == "conv_2d_nhwc_hwcf"
}

impl KernelWriter {
    /// A convolution's image, when the op reads it as it is
    /// (`ir::conv_input`) from an NHWC kernel buffer with contiguous
    /// channels: the A that the FP16/BF16 `wgmma` body gathers itself.
    /// With `folded` (the register-blocked form, which reads a pointwise
    /// convolution's image as a matrix), also where folding dropped a
    /// one-iteration loop's index (`conv_input::plain_input_folded`).
    fn conv_image(&self, op: OperationRef, folded: bool) -> Option<ConvImage> {
        let plain = if folded {
            crate::ir::conv_input::plain_input_folded(op)?
        } else {
            crate::ir::conv_input::plain_input(op)?
        };
        let view = self.views.get(&key(plain.image))?;
        let [sn, sy, sx, 1] = view.strides[..] else {
            return None;
        };
        Some(ConvImage {
            buffer: view.buffer.clone(),
            offset: view.offset,
            shape: plain.image_shape,
            pixel_strides: [sn, sy, sx],
            output: plain.output,
            taps: plain.taps,
            strides: plain.strides,
            dilations: plain.dilations,
            pads: plain.pads,
        })
    }

    /// The implicit GEMM of a `tcc.conv`: B is its filter (HWCF),
    /// and A's elements are computed by translating its body up to the
    /// final `acc + a * w`: the coordinates, bounds checks, loads, producer
    /// ops and pad-value select, with `linalg.index` bound to the window
    /// position of GEMM row `i` and column `k`.
    fn conv_op(
        &mut self,
        op: OperationRef,
        tile_k: i64,
        nested_k: bool,
    ) -> Result<Contraction, CodegenError> {
        let ((_, b), (c_value, c)) = (
            self.operand_view(op, 0, OPERAND)?,
            self.operand_view(op, 1, OPERAND)?,
        );
        // Plain HWCF or in panels of output channels (`tcc-pack-weight-panels`).
        let panel = crate::ir::filter_panels::panel_width(op, 0);
        let filter = crate::ir::filter_panels::hwcf_filter_shape(op, 0)
            .ok_or_else(|| {
                CodegenError::at(&op, "convolution filter is neither HWCF nor in panels")
            })?
            .to_vec();
        let channels = filter[2];
        let [n, y, x, ky, kx, ch] = window(&memref_shape(c_value.r#type()), &filter, nested_k);
        // (n, oh, ow, f, kh, kw, c); f must not take part in A.
        let dims = [
            Some(n.clone()),
            Some(y.clone()),
            Some(x.clone()),
            None,
            Some(ky.clone()),
            Some(kx.clone()),
            Some(ch.clone()),
        ];
        let body = op
            .region(0)
            .at(&op)?
            .first_block()
            .ok_or_else(|| CodegenError::at(&op, "convolution without a body"))?;
        let weight: Value = body.argument(0).at(&op)?.into();
        let acc: Value = body.argument(1).at(&op)?.into();
        let mut ops = Vec::new();
        let mut next = body.first_operation();
        while let Some(inner) = next {
            next = inner.next_in_block();
            ops.push(unsafe { OperationRef::from_raw(inner.to_raw()) });
        }
        // The tail: addf(acc, mulf(a, w)); yield. An int8 convolution's
        // (`tcc-quantize-int8`) is addi(acc, muli(extsi(a), extsi(w))).
        let malformed = || CodegenError::at(&op, "convolution body is not `acc + a * w`");
        let [.., multiply, add, terminator] = ops.as_slice() else {
            return Err(malformed());
        };
        let int8 = op_name(multiply) == "arith.muli" && op_name(add) == "arith.addi";
        fn operands<'c>(o: &OperationRef<'c, '_>) -> Vec<Value<'c, 'c>> {
            o.operands()
                .map(|v| unsafe { Value::from_raw(v.to_raw()) })
                .collect()
        }
        let product: Value = multiply.result(0).at(&op)?.into();
        let sum: Value = add.result(0).at(&op)?.into();
        if !(int8 || (op_name(multiply) == "arith.mulf" && op_name(add) == "arith.addf"))
            || op_name(terminator) != "linalg.yield"
            || operands(terminator) != [sum]
            || !(operands(add) == [acc, product] || operands(add) == [product, acc])
        {
            return Err(malformed());
        }
        // The int8 factors' sign extensions are the template's (A is staged
        // as the i8 value itself): they leave the A computation.
        let mut extensions = Vec::new();
        let factors: Vec<Value> = operands(multiply)
            .into_iter()
            .map(|factor| match crate::ir::util::defining_op(factor) {
                Some(extension)
                    if int8
                        && op_name(&extension) == "arith.extsi"
                        && ops.iter().any(|o| o.to_raw().ptr == extension.to_raw().ptr) =>
                {
                    extensions.push(extension.to_raw().ptr);
                    extension
                        .operand(0)
                        .map(|v| unsafe { Value::from_raw(v.to_raw()) })
                        .unwrap_or(factor)
                }
                _ => factor,
            })
            .collect();
        let a_value = match factors.as_slice() {
            [a, w] if *w == weight && *a != weight => *a,
            [w, a] if *w == weight && *a != weight => *a,
            _ => return Err(malformed()),
        };
        let input_ops: Vec<OperationRef> = ops[..ops.len() - 3]
            .iter()
            .filter(|o| !extensions.contains(&o.to_raw().ptr))
            .copied()
            .collect();
        let input_ops = input_ops.as_slice();
        // A float4 of 4 channels shares one computation of coordinates and
        // bounds checks. With the window's loops those are per tap anyway
        // (and a broadcast from a float4 costs a shuffle per row), so
        // there it is only for a producer's float arithmetic (DenseNet's
        // BatchNorm + ReLU before each convolution: 4 channels per
        // operation; in scalars its 1x1 layers took 1.8x as long).
        let producer = input_ops.iter().any(|o| {
            let name = op_name(o);
            name.starts_with("arith.")
                && name != "arith.select"
                && o.results().any(|r| Value::from(r).r#type().is_f32())
        });
        let vector = (!nested_k || producer)
            && channels % 4 == 0
            && tile_k % 4 == 0
            && channel_vectorizable(input_ops, 6);
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        // With the window's loops, the padding's bounds check is tested
        // once per tap (`GemmSpec::a_inside`).
        let condition = if nested_k {
            super::conv_inputs::tap_condition(input_ops, 6)
        } else {
            None
        };
        let inside = self.conv_input_ops(
            op,
            input_ops,
            &dims,
            if vector { 4 } else { 1 },
            // 4 neighbouring k from a multiple of 4 (the staging's): `ch`
            // a multiple of 4 when the channels are.
            vector.then_some(ch.as_str()),
            &[weight, acc],
            condition,
        )?;
        let value = self.name(op, a_value)?;
        let statements = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;
        let (b_operand, b_offset) = match panel {
            Some(panel) => (panel_operand(op, &b, &filter, panel)?, None),
            None => filter_operand(&b, &filter, [ky, kx, ch]),
        };
        Ok(Contraction {
            a: placeholder_operand(&b.buffer),
            a_offset: None,
            a_element: Some((statements, value)),
            a_element_vector: vector,
            k_window: nested_k.then(|| k_window(&filter)),
            a_inside: inside,
            a_image: self.conv_image(op, nested_k),
            b: b_operand,
            b_offset,
            b_panel: panel,
            c,
            c_value_key: key(c_value),
            dims: vec![n, y, x, "j".to_string()],
        })
    }

    fn contraction(
        &self,
        op: OperationRef,
        tile_k: i64,
        nested_k: bool,
    ) -> Result<Contraction, CodegenError> {
        let ((a_value, a), (_, b), (c_value, c)) = (
            self.operand_view(op, 0, OPERAND)?,
            self.operand_view(op, 1, OPERAND)?,
            self.operand_view(op, 2, OPERAND)?,
        );
        // A convolution's A reads 4 channels at once from a multiple of 4
        // (below): one aligned load where the input's view keeps them so.
        let a_channels_aligned = a.vector_aligned(4, 3, &memref_shape(a_value.r#type()));
        let load_channels = |a: &MemrefView, offset: &str| {
            if a_channels_aligned {
                a.buffer.load_vector_aligned(4, offset)
            } else {
                a.buffer.load_vector(4, offset)
            }
        };
        if let Some(conv) = crate::ir::grouped_conv::of(op) {
            return Ok(grouped_conv(
                (a, b, c, key(c_value)),
                conv,
                tile_k,
                nested_k,
                &load_channels,
            ));
        }
        if op_name(&op) == "linalg.conv_2d_nhwc_hwcf" {
            let filter = memref_shape(op.operand(1).at(&op)?.r#type());
            let [sh, sw] = pair(op, "strides")?;
            let [dh, dw] = pair(op, "dilations")?;
            let channels = filter[2];
            let [n, y, x, ky, kx, ch] = window(&memref_shape(c_value.r#type()), &filter, nested_k);
            // 4 neighbouring k share a pixel and filter tap and are
            // contiguous channels when the channel count is a multiple of 4.
            let vector = !nested_k && channels % 4 == 0 && tile_k % 4 == 0;
            let a_offset = a.address(&[
                n.clone(),
                format!("({y} * {sh} + {ky} * {dh})"),
                format!("({x} * {sw} + {kx} * {dw})"),
                ch.clone(),
            ]);
            let (b_operand, b_offset) = filter_operand(&b, &filter, [ky, kx, ch]);
            return Ok(Contraction {
                a: placeholder_operand(&a.buffer),
                a_offset: (!vector).then(|| a_offset.clone()),
                a_element: vector.then(|| (String::new(), load_channels(&a, &a_offset))),
                a_element_vector: vector,
                k_window: nested_k.then(|| k_window(&filter)),
                a_inside: None,
                a_image: self.conv_image(op, nested_k),
                b: b_operand,
                b_offset,
                b_panel: None,
                c,
                c_value_key: key(c_value),
                dims: vec![n, y, x, "j".to_string()],
            });
        }
        let rank = c.strides.len();
        // B packed in panels (`tcc-pack-weight-panels`): `[1 x] N/P x K x
        // P`, contiguous, read as `[N/P][K][P]`.
        let b_panel = crate::ir::filter_panels::matmul_panel_width(op);
        let b_operand = match b_panel {
            Some(panel) => {
                let dims = memref_shape(op.operand(1).at(&op)?.r#type());
                let k = dims[dims.len() - 2];
                let contiguous = b.strides[b.strides.len() - 2..] == [panel, 1]
                    && b.strides[b.strides.len() - 3] == k * panel;
                if !contiguous {
                    return Err(CodegenError::at(
                        &op,
                        format!(
                            "a matmul's B in panels of {panel} must be contiguous, not strided {:?}",
                            b.strides
                        ),
                    ));
                }
                GemmOperand {
                    buffer: b.buffer.clone(),
                    offset: b.offset,
                    batch_stride: 0,
                    row_stride: panel,
                    col_stride: 1,
                }
            }
            None => operand_of(&b, rank),
        };
        let dims: Vec<String> = if rank == 3 {
            vec!["b".into(), "i".into(), "j".into()]
        } else {
            vec!["i".into(), "j".into()]
        };
        Ok(Contraction {
            a: operand_of(&a, rank),
            a_offset: None,
            a_element: None,
            a_element_vector: false,
            k_window: None,
            a_inside: None,
            a_image: None,
            b: b_operand,
            b_offset: None,
            b_panel,
            c,
            c_value_key: key(c_value),
            dims,
        })
    }

    /// Reads a `#tcc.gemm` kernel's operands, fill, epilogue and split-K
    /// scratch into the template's spec.
    fn gemm_spec(
        &mut self,
        kernel: &TemplateKernel,
        (config, shape): (GemmConfig, GemmShape),
    ) -> Result<GemmSpec, CodegenError> {
        let block = kernel.block;
        let tile_k = i64::from(config.tile_k);
        // Kernels that may take a wgmma body end with its tensor-map slots
        // (`tcc-attach-tensor-map-slots`, which runs after
        // `tcc-attach-split-k-scratch`); the body writes them.
        // Its buffers: the scalar (index) arguments of a kernel on a
        // symbolic dimension follow them.
        let count = (0..block.argument_count())
            .take_while(|&i| {
                block
                    .argument(i)
                    .is_ok_and(|a| !melior::ir::Value::from(a).r#type().is_index())
            })
            .count();
        let tensor_map_slots = if kernel
            .op
            .attribute(crate::ir::attr_names::TENSOR_MAP_SLOTS)
            .is_ok()
        {
            if count == 0 {
                return Err(CodegenError::at(
                    &kernel.op,
                    "a GEMM kernel marked tcc.tensor_map_slots has no slots argument",
                ));
            }
            let slots = argument_buffer(count - 1, ElementType::I8.storage());
            self.mark_written(&slots);
            Some(slots)
        } else {
            None
        };
        // Split-K kernels' own arguments end with the workspace and
        // counters (`tcc-attach-split-k-scratch`), before any slots; the
        // template writes both.
        let own = count - usize::from(tensor_map_slots.is_some());
        let split_k_scratch = if config.split_k > 1 {
            let counters_are_i32 = own >= 2
                && block.argument(own - 1).is_ok_and(|counters| {
                    super::writer::memref_element(counters.r#type())
                        == Some(super::writer::ElementType::I32)
                });
            if !counters_are_i32 {
                return Err(CodegenError::at(
                    &kernel.op,
                    "a split-K GEMM kernel needs its workspace and counters arguments (run tcc-attach-split-k-scratch)",
                ));
            }
            let workspace = argument_buffer(own - 2, ElementType::F32.storage());
            let counters = argument_buffer(own - 1, ElementType::I32.storage());
            self.mark_written(&workspace);
            self.mark_written(&counters);
            Some((workspace, counters))
        } else {
            None
        };
        let mut contraction_op: Option<OperationRef> = None;
        let mut fill: Option<(usize, String)> = None;
        let mut init_generic: Option<OperationRef> = None;
        let mut epilogue: Option<OperationRef> = None;
        for op in self.template_ops(block)? {
            match op_name(&op).as_str() {
                "linalg.fill" => fill = Some(self.fill(op)?),
                "linalg.matmul" | "linalg.batch_matmul" | "linalg.conv_2d_nhwc_hwcf" => {
                    contraction_op = Some(op)
                }
                "tcc.conv" if contraction_op.is_none() && is_conv_op(op) => {
                    contraction_op = Some(op)
                }
                "linalg.generic"
                    if contraction_op.is_none()
                        && crate::ir::filter_panels::matmul_panel_width(op).is_some() =>
                {
                    contraction_op = Some(op)
                }
                "linalg.generic"
                    if contraction_op.is_none() && crate::ir::grouped_conv::of(op).is_some() =>
                {
                    contraction_op = Some(op)
                }
                "linalg.generic" if contraction_op.is_none() && init_generic.is_none() => {
                    init_generic = Some(op)
                }
                "linalg.generic" if contraction_op.is_some() && epilogue.is_none() => {
                    epilogue = Some(op)
                }
                other => {
                    return Err(CodegenError::at(
                        &op,
                        format!("'{other}' cannot be part of a tiled GEMM kernel"),
                    ));
                }
            }
        }
        let contraction_op = contraction_op.ok_or_else(|| {
            CodegenError::at(
                &kernel.op,
                "#tcc.gemm kernel without a matmul or convolution",
            )
        })?;
        // The register-blocked form (CPUs) walks a convolution's K as its
        // window's loops; the tiled forms stage flat k tiles.
        let nested_k = config.is_register_blocked();
        let contraction = if is_conv_op(contraction_op) {
            self.conv_op(contraction_op, tile_k, nested_k)?
        } else {
            self.contraction(contraction_op, tile_k, nested_k)?
        };
        let int8 = contraction.b.buffer.storage == Storage::I8;
        let dims: Vec<&str> = contraction.dims.iter().map(String::as_str).collect();
        let (init_statements, init) = match (&fill, init_generic) {
            (Some((target, value)), _) if *target == contraction.c_value_key => {
                (String::new(), value.clone())
            }
            (_, Some(generic)) => {
                let (statements, value, _) = self.translate_generic(generic, None, &dims)?;
                (statements, value)
            }
            _ => (String::new(), contraction.c.load(&contraction.dims)),
        };
        // Four neighbouring columns stored at once where the stored view
        // keeps them one aligned vector (the template's `j` runs from a
        // multiple of 4 there).
        let vector_store =
            |view: &MemrefView, extents: &[i64], indices: &[String], epilogue: (&str, &str)| {
                view.vector_store(4, extents, indices, ("j", "j"), epilogue)
            };
        let c_value = contraction_op
            .operand(contraction_op.operand_count() - 1)
            .at(&contraction_op)?;
        let (store, vector_store) = match epilogue {
            None => {
                self.mark_written(&contraction.c.buffer);
                (
                    contraction.c.store("acc_value", &contraction.dims),
                    vector_store(
                        &contraction.c,
                        &memref_shape(c_value.r#type()),
                        &contraction.dims,
                        ("", "acc_value"),
                    ),
                )
            }
            Some(generic) => {
                let (mut statements, value, output) =
                    self.translate_generic(generic, Some(c_value), &dims)?;
                let (view, indices) = output;
                let stored_extents = generic
                    .operand(generic.operand_count() - 1)
                    .map(|v| memref_shape(v.r#type()))
                    .unwrap_or_default();
                let vector_stored =
                    vector_store(&view, &stored_extents, &indices, (&statements, &value));
                statements.push_str(&view.store(&value, &indices));
                statements.push('\n');
                self.mark_written(&view.buffer);
                (statements, vector_stored)
            }
        };
        let m_extent = self.m_extent(contraction_op)?;
        self.scalars.sort();
        Ok(GemmSpec {
            name: kernel.name.to_string(),
            parameters: KernelParameters::default(),
            comment: gemm_comment(kernel),
            config,
            shape,
            a: contraction.a,
            a_offset: contraction.a_offset,
            a_element: contraction.a_element,
            a_element_vector: contraction.a_element_vector,
            k_window: contraction.k_window,
            a_inside: contraction.a_inside,
            a_image: contraction.a_image,
            b: contraction.b,
            b_offset: contraction.b_offset,
            b_panel: contraction.b_panel,
            init_statements,
            init,
            store,
            vector_store,
            split_k_scratch,
            tensor_map_slots,
            // int8 weights: an int8 GEMM (`tcc-quantize-int8`), whatever
            // the precision.
            tensor_cores: match self.precision {
                _ if int8 => Some(TensorCores::S8),
                Precision::Fp32 => None,
                Precision::Tf32 => Some(TensorCores::Tf32),
                Precision::Fp16 => Some(TensorCores::Fp16),
                Precision::Bf16 => Some(TensorCores::Bf16),
            },
            dynamic_local: self.dynamic_local,
            m_extent,
            scalars: self.scalars.iter().map(|s| s.name()).collect(),
        })
    }

    /// M at run time when the contraction's output is dynamic (issue 33:
    /// a symbolic batch in its rows): the product of its row dimensions'
    /// extents (all but the last, and a batched matmul's batch), their
    /// dynamic ones read from the kernel's scalar arguments. `None` when
    /// M is static.
    fn m_extent(&mut self, contraction: OperationRef) -> Result<Option<String>, CodegenError> {
        let output = contraction
            .operand(contraction.operand_count() - 1)
            .at(&contraction)?;
        let output: Value<'static, 'static> = unsafe { Value::from_raw(output.to_raw()) };
        let shape = memref_shape(output.r#type());
        if !shape.contains(&crate::ir::memref::DYNAMIC) {
            return Ok(None);
        }
        let first = usize::from(op_name(&contraction) == "linalg.batch_matmul");
        if first == 1 && shape.first() == Some(&crate::ir::memref::DYNAMIC) {
            // A dynamic batch of products over static matrices: the launch
            // has one work-group layer per product (`get_group_id(2)`), so
            // the kernel never reads the count.
            if shape[1..].contains(&crate::ir::memref::DYNAMIC) {
                return Err(CodegenError::at(
                    &contraction,
                    "a GEMM kernel with a dynamic batch of products and dynamic rows: dynamic dimension not supported by the GEMM template",
                ));
            }
            return Ok(None);
        }
        let mut factors = Vec::new();
        let mut constant = 1i64;
        for dim in first..shape.len().saturating_sub(1) {
            let extent = self.extent(contraction, output, dim)?;
            match extent.parse::<i64>() {
                Ok(size) => constant *= size,
                Err(_) => factors.push(extent),
            }
        }
        if constant != 1 {
            factors.push(super::writer::index_literal(constant));
        }
        Ok(Some(match factors.len() {
            1 => factors.remove(0),
            _ => format!("({})", factors.join(" * ")),
        }))
    }
}

impl KernelTemplate for GemmSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let KernelStrategy::Gemm {
            config,
            shape,
            precision,
        } = kernel.strategy
        else {
            return Err(CodegenError::at(
                &kernel.op,
                "a GEMM template without #tcc.gemm",
            ));
        };
        writer.precision = precision;
        writer.gemm_spec(kernel, (config, shape))
    }

    fn instantiate(self, parameters: KernelParameters) -> Result<String, String> {
        gemm_kernel(&GemmSpec { parameters, ..self })
    }
}
