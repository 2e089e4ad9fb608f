//! Kernels whose strategy is `#tcc.window`: a depthwise convolution or a
//! max/sum pooling over NHWC (named, or a `tcc.conv` with a folded
//! pad, producer or transpose), the fill that starts it and its fused
//! elementwise epilogue (bias, activation, an average's division),
//! instantiated from the window template of `tcc-kernels`. This module
//! reads the geometry off the IR and turns the window op's input
//! computation, filter, fill and epilogue into the C text the template
//! places.

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{BlockLike, RegionLike, Value, ValueLike};
use tcc_kernels::{
    KernelParameters, WindowCombine, WindowConfig, WindowGeometry, WindowInit, WindowSpec,
    window_kernel,
};

use super::conv_inputs::channel_vectorizable;
use super::template::{KernelTemplate, TemplateKernel};
use super::writer::{KernelWriter, MemrefView, key, memref_shape};
use crate::back::{CodegenError, ErrorAt};
use crate::ir::strategy::KernelStrategy;
use crate::ir::util::op_name;

/// The iteration dimensions of a window op, by position: n, oh, ow, c,
/// the multiplier m (hwcm only), kh, kw; and how it combines.
struct WindowDims {
    /// C names of the dimensions, in iteration order.
    names: &'static [&'static str],
    channel: i64,
    kw: i64,
    combine: WindowCombine,
}

/// The window ops the template runs, by the name of the op they compute.
fn window_dims(name: &str) -> Option<(&'static [&'static str], WindowCombine)> {
    const POOL: &[&str] = &["n", "oy", "ox", "c", "ky", "kx"];
    Some(match name {
        "depthwise_conv_2d_nhwc_hwc" => (POOL, WindowCombine::MulAdd),
        "depthwise_conv_2d_nhwc_hwcm" => (
            &["n", "oy", "ox", "c", "m", "ky", "kx"],
            WindowCombine::MulAdd,
        ),
        "pooling_nhwc_max" => (POOL, WindowCombine::Max),
        "pooling_nhwc_sum" => (POOL, WindowCombine::Add),
        _ => return None,
    })
}

impl WindowDims {
    fn of(op: OperationRef, name: &str) -> Result<Self, CodegenError> {
        let (names, combine) = window_dims(name).ok_or_else(|| {
            CodegenError::at(&op, format!("'{name}' is not a window the template runs"))
        })?;
        let position = |wanted: &str| names.iter().position(|n| *n == wanted).unwrap_or(0) as i64;
        Ok(WindowDims {
            names,
            channel: position("c"),
            kw: position("kx"),
            combine,
        })
    }
}

/// A named window op's `strides`/`dilations` (absent: 1).
fn named_pair(op: OperationRef, name: &str) -> Result<[i64; 2], CodegenError> {
    let Ok(attribute) = op.attribute(name) else {
        return Ok([1, 1]);
    };
    match crate::ir::dense::int_elements(attribute).as_deref() {
        Some([v]) => Ok([*v, *v]),
        Some([a, b]) => Ok([*a, *b]),
        _ => Err(CodegenError::at(&op, format!("cannot read {name}"))),
    }
}

/// The (stride, dilation) of a `tcc.conv`'s columns, where its
/// body shows them: the stride is its `#tcc.conv`'s; the dilation is 1
/// when the window column index is only ever added (a dilated window
/// multiplies it first), else unknown.
fn conv_column_steps(op: OperationRef, body: &[OperationRef], kw: i64) -> Option<[i64; 2]> {
    let stride = crate::ir::conv::of(&op)?.strides[1];
    let undilated = body.iter().all(|inner| {
        op_name(inner) != "linalg.index"
            || inner
                .attribute("dim")
                .ok()
                .and_then(crate::ir::util::integer_value)
                != Some(kw)
            || inner.result(0).is_ok_and(|index| {
                body.iter().all(|user| {
                    !user.operands().any(|v| v == index.into()) || op_name(user) == "arith.addi"
                })
            })
    });
    undilated.then_some([stride, 1])
}

/// The `lanes` channels from `indices` (the channel at `channel_dim`, a
/// multiple of `lanes`: the template's `c`) as a `floatN`: one aligned
/// vector load where the view keeps such vectors aligned, one `vloadN`
/// where they are contiguous, else one load each.
fn channel_vector(
    view: &MemrefView,
    extents: &[i64],
    indices: &[String],
    channel_dim: usize,
    lanes: u32,
) -> String {
    if view.vector_aligned(lanes, channel_dim, extents) {
        return view
            .buffer
            .load_vector_aligned(lanes, &view.address(indices));
    }
    if view.strides[channel_dim] == 1 {
        return view.buffer.load_vector(lanes, &view.address(indices));
    }
    let loads: Vec<String> = (0..lanes)
        .map(|lane| {
            let mut at = indices.to_vec();
            at[channel_dim] = format!("({} + {lane})", at[channel_dim]);
            view.load(&at)
        })
        .collect();
    format!("(float{lanes})({})", loads.join(", "))
}

impl KernelWriter {
    /// The input element of a named window op (unpadded: its windows lie
    /// inside the input), `lanes` channels.
    fn named_element(
        &self,
        op: OperationRef,
        lanes: u32,
    ) -> Result<(String, String, Option<[i64; 2]>), CodegenError> {
        let (input_value, input) = self.operand_view(op, 0, "window input")?;
        let [sh, sw] = named_pair(op, "strides")?;
        let [dh, dw] = named_pair(op, "dilations")?;
        let indices = [
            "n".to_string(),
            format!("(oy * {sh} + ky * {dh})"),
            format!("(ox * {sw} + kx * {dw})"),
            "c".to_string(),
        ];
        let value = if lanes > 1 {
            channel_vector(
                &input,
                &memref_shape(input_value.r#type()),
                &indices,
                3,
                lanes,
            )
        } else {
            input.load(&indices)
        };
        Ok((String::new(), value, Some([sw, dw])))
    }

    /// The input element of a `tcc.conv`: its body up to the
    /// combiner, with `linalg.index` bound to the template's names;
    /// `lanes` channels at once where the body allows, else one scalar
    /// copy per lane; and, for a window of at least the target's
    /// `window_unswitched_taps` of `taps`, the C name of its folded
    /// padding's check (`WindowSpec::inside`).
    fn conv_element(
        &mut self,
        op: OperationRef,
        dims: &WindowDims,
        lanes: u32,
        taps: i64,
    ) -> Result<(String, String, Option<[i64; 2]>, Option<String>), CodegenError> {
        let body = op
            .region(0)
            .at(&op)?
            .first_block()
            .ok_or_else(|| CodegenError::at(&op, "window without a body"))?;
        let count = body.argument_count();
        let acc: Value = body.argument(count - 1).at(&op)?.into();
        let weight: Value = body.argument(0).at(&op)?.into();
        let mut ops = Vec::new();
        let mut next = body.first_operation();
        while let Some(inner) = next {
            next = inner.next_in_block();
            ops.push(unsafe { OperationRef::from_raw(inner.to_raw()) });
        }
        let malformed = || CodegenError::at(&op, "window body does not end in its combiner");
        let tail = if dims.combine == WindowCombine::MulAdd {
            3
        } else {
            2
        };
        if ops.len() < tail {
            return Err(malformed());
        }
        let (input_ops, tail_ops) = ops.split_at(ops.len() - tail);
        let combined = tail_ops[0];
        let expected = match dims.combine {
            WindowCombine::MulAdd => "arith.mulf",
            WindowCombine::Add => "arith.addf",
            WindowCombine::Max => "arith.maximumf",
        };
        if op_name(&combined) != expected {
            return Err(malformed());
        }
        let a_value = combined
            .operands()
            .find(|v| *v != acc && *v != weight)
            .ok_or_else(malformed)?;
        let a_value = unsafe { Value::from_raw(a_value.to_raw()) };
        let steps = conv_column_steps(op, input_ops, dims.kw);
        let channel_dim = dims.channel as usize;
        let bound = |channel: &str| -> Vec<Option<String>> {
            dims.names
                .iter()
                .enumerate()
                .map(|(d, n)| Some(if d == channel_dim { channel } else { n }.to_string()))
                .collect()
        };
        let saved = (std::mem::take(&mut self.out), self.indent);
        self.indent = 0;
        let reserved = [weight, acc];
        // A folded padding's check, for the template to unswitch on where
        // the target asks (`WindowSpec::inside`).
        let check = self
            .window_unswitched_taps
            .filter(|least| taps >= *least)
            .and_then(|_| super::conv_inputs::tap_condition(input_ops, dims.channel));
        let mut inside = None;
        let value = if lanes == 1 {
            inside = self.conv_input_ops(op, input_ops, &bound("c"), 1, None, &reserved, check)?;
            self.name(op, a_value)?
        } else if channel_vectorizable(input_ops, dims.channel) {
            inside = self.conv_input_ops(
                op,
                input_ops,
                &bound("c"),
                lanes,
                Some("c"),
                &reserved,
                check,
            )?;
            self.name(op, a_value)?
        } else {
            let mut values = Vec::new();
            for lane in 0..lanes {
                self.conv_input_ops(
                    op,
                    input_ops,
                    &bound(&format!("(c + {lane})")),
                    1,
                    None,
                    &reserved,
                    None,
                )?;
                values.push(self.name(op, a_value)?);
            }
            format!("(float{lanes})({})", values.join(", "))
        };
        let statements = std::mem::replace(&mut self.out, saved.0);
        self.indent = saved.1;
        Ok((statements, value, steps, inside))
    }

    fn window_spec(
        &mut self,
        kernel: &TemplateKernel,
        config: WindowConfig,
    ) -> Result<WindowSpec, CodegenError> {
        let mut fill: Option<(usize, String)> = None;
        let mut window: Option<(OperationRef, String)> = None;
        let mut epilogue: Option<OperationRef> = None;
        for op in self.template_ops(kernel.block)? {
            let (name, _, _) = crate::ir::contraction::window_layout(op);
            match op_name(&op).as_str() {
                "linalg.fill" if window.is_none() => fill = Some(self.fill(op)?),
                _ if window.is_none() && window_dims(&name).is_some() => window = Some((op, name)),
                "linalg.generic" if window.is_some() && epilogue.is_none() => epilogue = Some(op),
                other => {
                    return Err(CodegenError::at(
                        &op,
                        format!("'{other}' cannot be part of a window kernel"),
                    ));
                }
            }
        }
        let (op, name) = window
            .ok_or_else(|| CodegenError::at(&kernel.op, "window kernel without its window op"))?;
        let dims = WindowDims::of(op, &name)?;
        let named = op_name(&op) != crate::ir::conv::OP;
        let (filter_index, output_index) = if named { (1, 2) } else { (0, 1) };
        let (output_value, output) = self.operand_view(op, output_index, "window output")?;
        let shape = memref_shape(output_value.r#type());
        let window_shape = memref_shape(op.operand(filter_index).at(&op)?.r#type());
        if shape.len() < 4 || window_shape.len() < 2 {
            return Err(CodegenError::at(&op, "window operands of unexpected rank"));
        }
        let lanes = config.vector;
        let vector = lanes > 1;
        let (statements, value, column_steps, inside) = if named {
            let (statements, value, steps) = self.named_element(op, lanes)?;
            (statements, value, steps, None)
        } else {
            self.conv_element(op, &dims, lanes, window_shape[0] * window_shape[1])?
        };
        let tap = if dims.combine == WindowCombine::MulAdd {
            let (_, filter) = self.operand_view(op, filter_index, "window filter")?;
            let mut indices = vec!["ky".to_string(), "kx".to_string(), "c".to_string()];
            if shape.len() == 5 {
                indices.push("m".to_string());
            }
            Some(if vector {
                channel_vector(&filter, &window_shape, &indices, 2, lanes)
            } else {
                filter.load(&indices)
            })
        } else {
            None
        };
        let mut out_dims = vec!["n", "oy", "ox", "oc"];
        if shape.len() == 5 {
            out_dims.push("om");
        }
        // The start: the fill's value, else what the output holds (a
        // kernel the outliner split from its fill).
        let init = match fill {
            Some((target, value)) if target == key(output_value) => WindowInit::Fill(value),
            _ => {
                let mut at: Vec<String> = vec!["n".into(), "oy".into(), "ox".into(), "c".into()];
                if shape.len() == 5 {
                    at.push("m".into());
                }
                WindowInit::Output(if vector {
                    channel_vector(&output, &shape, &at, 3, lanes)
                } else {
                    output.load(&at)
                })
            }
        };
        let out_names: Vec<String> = out_dims.iter().map(|d| d.to_string()).collect();
        // The channels `c ..` of a column as one aligned vector store, where
        // the target wants it and the stored view keeps them so.
        let vector_stores = vector && self.window_vector_stores;
        let vector_store =
            |view: &MemrefView, extents: &[i64], indices: &[String], epilogue: (&str, &str)| {
                vector_stores
                    .then(|| view.vector_store(lanes, extents, indices, ("oc", "c"), epilogue))
                    .flatten()
            };
        let (store, vector_stored) = match epilogue {
            None => {
                self.mark_written(&output.buffer);
                (
                    output.store("acc_value", &out_names),
                    vector_store(&output, &shape, &out_names, ("", "acc_value")),
                )
            }
            Some(generic) => {
                // The epilogue takes the accumulator as the window's output
                // itself, not through a view of it.
                let count = generic.operand_count();
                if !(0..count.saturating_sub(1))
                    .any(|i| generic.operand(i).is_ok_and(|v| v == output_value))
                {
                    return Err(CodegenError::at(
                        &generic,
                        "a window kernel's epilogue does not read the window's output",
                    ));
                }
                let (mut statements, value, (view, indices)) =
                    self.translate_generic(generic, Some(output_value), &out_dims)?;
                let stored_extents = generic
                    .operand(count - 1)
                    .map(|v| memref_shape(v.r#type()))
                    .unwrap_or_default();
                let vector_stored =
                    vector_store(&view, &stored_extents, &indices, (&statements, &value));
                statements.push_str(&view.store(&value, &indices));
                self.mark_written(&view.buffer);
                (statements, vector_stored)
            }
        };
        let geometry = WindowGeometry {
            batch: shape[0],
            out_h: shape[1],
            out_w: shape[2],
            channels: shape[3],
            multiplier: shape.get(4).copied().unwrap_or(1),
            window: [window_shape[0], window_shape[1]],
            column_steps,
        };
        let KernelStrategy::Window { work_items, .. } = kernel.strategy else {
            return Err(CodegenError::at(
                &kernel.op,
                "a window template without #tcc.window",
            ));
        };
        if config.work_items(&geometry) != work_items {
            return Err(CodegenError::at(
                &op,
                format!(
                    "#tcc.window's {work_items} work-items do not match the window's {}",
                    config.work_items(&geometry)
                ),
            ));
        }
        Ok(WindowSpec {
            name: kernel.name.to_string(),
            parameters: KernelParameters::default(),
            comment: format!(
                "/* {}: {name} window kernel, {} columns x {} channels per work-item; from {} */",
                kernel.name, config.columns, config.vector, kernel.location
            ),
            config,
            geometry,
            combine: dims.combine,
            element: (statements, value),
            tap,
            init,
            store,
            vector_store: vector_stored,
            rolled_rows: self.window_rows_rolled,
            vectorized_lanes: self.window_lanes_vectorized,
            inside,
        })
    }
}

impl KernelTemplate for WindowSpec {
    fn read(writer: &mut KernelWriter, kernel: &TemplateKernel) -> Result<Self, CodegenError> {
        let KernelStrategy::Window { config, .. } = kernel.strategy else {
            return Err(CodegenError::at(
                &kernel.op,
                "a window template without #tcc.window",
            ));
        };
        writer.window_spec(kernel, config)
    }

    fn instantiate(self, parameters: KernelParameters) -> Result<String, String> {
        window_kernel(&WindowSpec { parameters, ..self })
    }
}
