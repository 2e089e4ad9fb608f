//! The window template's strategy step: which kernels are a depthwise
//! convolution or a max/sum pooling over NHWC that the window template
//! runs (named, or a `tcc.conv` with its input folded in; started
//! by a fill of its output; at most one elementwise epilogue reading the
//! window's result), and the `#tcc.window` the target gives them.

use crate::patterns::fold_conv_inputs::{window_dilations, window_strides};
use std::str::FromStr;

use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{TypeLike, Value, ValueLike};

use crate::config::{Target, WindowGeometry};
use crate::ir::strategy::KernelStrategy;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, op_name};

/// The window ops the template runs, by the op they compute.
const WINDOW_OPS: &[&str] = &[
    "depthwise_conv_2d_nhwc_hwc",
    "depthwise_conv_2d_nhwc_hwcm",
    "pooling_nhwc_max",
    "pooling_nhwc_sum",
];

/// Whether window ops take the template (`windows=auto|on|off|N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowChoice {
    /// As the target's configuration says.
    Auto,
    /// Always (the generic GPU configuration where the target has none).
    On,
    /// Never: loop nests.
    Off,
    /// Always, with blocks of this many output columns (to time or test
    /// the blocks; the target's other parameters kept).
    Columns(u32),
}

impl std::fmt::Display for WindowChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowChoice::Auto => f.write_str("auto"),
            WindowChoice::On => f.write_str("on"),
            WindowChoice::Off => f.write_str("off"),
            WindowChoice::Columns(columns) => write!(f, "{columns}"),
        }
    }
}

impl FromStr for WindowChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "" | "auto" => Ok(WindowChoice::Auto),
            "on" => Ok(WindowChoice::On),
            "off" => Ok(WindowChoice::Off),
            other => match other.parse::<u32>() {
                Ok(columns) if columns > 0 => Ok(WindowChoice::Columns(columns)),
                _ => Err(format!(
                    "windows must be auto, on, off or a number of columns, not '{other}'"
                )),
            },
        }
    }
}

/// The `#tcc.window` strategy of the kernel rooted at `op` (on tensors),
/// if it is a window the template runs and the choice takes it, on a
/// device of `vector_width` floats per SIMD register.
pub(super) fn strategy(
    target: Target,
    op: OperationRef,
    choice: WindowChoice,
    vector_width: u32,
) -> Option<KernelStrategy> {
    if choice == WindowChoice::Off {
        return None;
    }
    let geometry = geometry(op)?;
    let mut config = match (choice, target.window_config_for(&geometry, vector_width)) {
        (_, Some(config)) => config,
        (WindowChoice::Auto, None) => return None,
        _ => target.forced_window_config(&geometry)?,
    };
    if let WindowChoice::Columns(columns) = choice {
        config.columns = columns;
        config.validate(&geometry).ok()?;
    }
    Some(KernelStrategy::Window {
        config,
        work_items: config.work_items(&geometry),
    })
}

/// The geometry of a window op the template runs, `None` for any other
/// op or kernel.
fn geometry(op: OperationRef) -> Option<WindowGeometry> {
    let (name, filter, output) = crate::ir::contraction::window_layout(op);
    if !WINDOW_OPS.contains(&name.as_str()) || op.result_count() != 1 {
        return None;
    }
    let result = StaticTensor::of(op.result(0).ok()?.r#type())?;
    let window = StaticTensor::of(op.operand(filter).ok()?.r#type())?;
    if !result.element.is_f32() || !(4..=5).contains(&result.rank()) || window.rank() < 2 {
        return None;
    }
    let init = op.operand(output).ok()?;
    if defining_op(init).is_none_or(|d| op_name(&d) != "linalg.fill") {
        return None;
    }
    if !only_an_epilogue_follows(op) {
        return None;
    }
    let shape = &result.shape;
    Some(WindowGeometry {
        batch: shape[0],
        out_h: shape[1],
        out_w: shape[2],
        channels: shape[3],
        multiplier: shape.get(4).copied().unwrap_or(1),
        window: [window.shape[0], window.shape[1]],
        // The stride decides whether a GPU takes the template (the back end
        // works out the columns' steps again from the op's body).
        column_steps: window_strides(op).map(|[_, stride]| {
            [
                stride,
                window_dilations(op).map_or(1, |[_, dilation]| dilation),
            ]
        }),
    })
}

/// Whether the kernel of window op `op` holds, besides its fill, at most
/// one `linalg.generic` after it, which reads the window's result itself.
fn only_an_epilogue_follows(op: OperationRef) -> bool {
    let Some(kernel) = crate::ir::dispatch::enclosing(op) else {
        return false;
    };
    let Ok(result) = op.result(0) else {
        return false;
    };
    let result: Value = result.into();
    let mut after = false;
    let mut epilogues = 0;
    for member in crate::ir::dispatch::members(kernel) {
        if member == op {
            after = true;
            continue;
        }
        let name = op_name(&member);
        match (after, name.as_str()) {
            (false, "linalg.fill") => {}
            (true, "linalg.generic") if member.operands().any(|v| v == result) => epilogues += 1,
            _ => return false,
        }
    }
    epilogues <= 1
}
