//! The convolution op (`tcc.conv`, `td/TccOps.td`) and its typed window
//! (`#tcc.conv`, `td/TccConv.td`): what a convolution or pooling that
//! `tcc-fold-conv-inputs` rewrote computes, with its strides and
//! dilations. The rewrite writes the window once as the op's `window`;
//! kernel grouping, kernel naming, the kernel configuration and the window
//! and GEMM back ends read it here instead of matching the op's body. The
//! dialect verifies the op against its window (`cpp/TccConv.cpp`).

use melior::ir::Attribute;
use melior::ir::attribute::AttributeLike;
use melior::ir::operation::OperationLike;
use mlir_sys::{MlirAttribute, MlirContext, MlirOperation};

/// The op's name.
pub const OP: &str = "tcc.conv";
/// The name of the op's window attribute (`#tcc.conv`).
pub const WINDOW: &str = "window";

unsafe extern "C" {
    fn tccConvAttrGet(
        context: MlirContext,
        kind: i32,
        strides: *const i64,
        dilations: *const i64,
    ) -> MlirAttribute;
    fn tccConvAttrRead(
        attr: MlirAttribute,
        kind: *mut i32,
        strides: *mut i64,
        dilations: *mut i64,
    ) -> bool;
    fn tccConvOpGetWindow(op: MlirOperation) -> MlirAttribute;
}

/// The window op a `tcc.conv` computes (`tcc::WindowKind`),
/// named after the linalg op it replaced, whose layouts it keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowKind {
    /// `conv_2d_nhwc_hwcf`: loops `n, oh, ow, f | kh, kw, c`.
    Conv2dNhwcHwcf,
    /// `depthwise_conv_2d_nhwc_hwcm`: loops `n, oh, ow, c, m | kh, kw`.
    DepthwiseConv2dNhwcHwcm,
    /// `depthwise_conv_2d_nhwc_hwc`: loops `n, oh, ow, c | kh, kw`.
    DepthwiseConv2dNhwcHwc,
    /// `pooling_nhwc_max`: loops `n, oh, ow, c | kh, kw`.
    PoolingNhwcMax,
    /// `pooling_nhwc_sum`: loops `n, oh, ow, c | kh, kw`.
    PoolingNhwcSum,
}

impl WindowKind {
    /// Every kind, in the order of their C values.
    pub const ALL: [WindowKind; 5] = [
        WindowKind::Conv2dNhwcHwcf,
        WindowKind::DepthwiseConv2dNhwcHwcm,
        WindowKind::DepthwiseConv2dNhwcHwc,
        WindowKind::PoolingNhwcMax,
        WindowKind::PoolingNhwcSum,
    ];

    /// The linalg op's name without `linalg.` (`"conv_2d_nhwc_hwcf"`).
    pub fn name(self) -> &'static str {
        match self {
            WindowKind::Conv2dNhwcHwcf => "conv_2d_nhwc_hwcf",
            WindowKind::DepthwiseConv2dNhwcHwcm => "depthwise_conv_2d_nhwc_hwcm",
            WindowKind::DepthwiseConv2dNhwcHwc => "depthwise_conv_2d_nhwc_hwc",
            WindowKind::PoolingNhwcMax => "pooling_nhwc_max",
            WindowKind::PoolingNhwcSum => "pooling_nhwc_sum",
        }
    }

    /// The kind named `name` (a linalg op's name without `linalg.`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    fn code(self) -> i32 {
        self as i32
    }

    fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.code() == code)
    }
}

/// `#tcc.conv<kind, strides = [sh, sw], dilations = [dh, dw]>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvWindow {
    pub kind: WindowKind,
    /// Height and width strides.
    pub strides: [i64; 2],
    /// Height and width dilations.
    pub dilations: [i64; 2],
}

impl ConvWindow {
    /// The window of a `tcc.conv` op; `None` for any other op.
    pub fn of_op<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> Option<Self> {
        let raw = unsafe { tccConvOpGetWindow(op.to_raw()) };
        if raw.ptr.is_null() {
            return None;
        }
        Self::from_attribute(unsafe { Attribute::from_raw(raw) })
    }

    /// Decodes a `#tcc.conv` attribute; `None` for any other attribute.
    pub fn from_attribute(attribute: Attribute) -> Option<Self> {
        let (mut kind, mut strides, mut dilations) = (0, [0; 2], [0; 2]);
        let read = unsafe {
            tccConvAttrRead(
                attribute.to_raw(),
                &mut kind,
                strides.as_mut_ptr(),
                dilations.as_mut_ptr(),
            )
        };
        if !read {
            return None;
        }
        Some(Self {
            kind: WindowKind::from_code(kind)?,
            strides,
            dilations,
        })
    }

    /// The attribute of `context`; `None` when the strides or dilations
    /// fail the attribute's verifier (reported through the context's
    /// diagnostics) or the tcc dialect is not loaded there (a pass that
    /// writes it lists `tcc` among its dependent dialects).
    pub fn to_attribute<'c>(&self, context: &'c melior::Context) -> Option<Attribute<'c>> {
        let raw = unsafe {
            tccConvAttrGet(
                context.to_raw(),
                self.kind.code(),
                self.strides.as_ptr(),
                self.dilations.as_ptr(),
            )
        };
        (!raw.ptr.is_null()).then(|| unsafe { Attribute::from_raw(raw) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_round_trip_through_their_attributes() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        for kind in WindowKind::ALL {
            let window = ConvWindow {
                kind,
                strides: [2, 1],
                dilations: [1, 3],
            };
            let attribute = window.to_attribute(&context).expect("a valid window");
            assert_eq!(
                attribute.to_string(),
                format!(
                    "#tcc.conv<{}, strides = [2, 1], dilations = [1, 3]>",
                    kind.name()
                )
            );
            assert_eq!(ConvWindow::from_attribute(attribute), Some(window));
            assert_eq!(WindowKind::from_name(kind.name()), Some(kind));
        }
    }

    #[test]
    fn the_window_of_a_conv_op_and_of_no_other() {
        use melior::ir::{BlockLike, RegionLike};
        let context = crate::new_context();
        context.load_all_available_dialects();
        let module = melior::ir::Module::parse(
            &context,
            r#"
            func.func @f(%w: tensor<3x3xf32>, %init: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
              %r = tcc.conv<pooling_nhwc_sum, strides = [2, 2], dilations = [1, 1]>
                  ins(%w : tensor<3x3xf32>) outs(%init : tensor<1x4x4x8xf32>)
                  indexing_maps = [affine_map<(n, oh, ow, c, kh, kw) -> (kh, kw)>,
                                   affine_map<(n, oh, ow, c, kh, kw) -> (n, oh, ow, c)>]
                  iterator_types = [parallel, parallel, parallel, parallel, reduction, reduction] {
              ^bb0(%a: f32, %acc: f32):
                linalg.yield %acc : f32
              } -> tensor<1x4x4x8xf32>
              return %r : tensor<1x4x4x8xf32>
            }
            "#,
        )
        .expect("a valid tcc.conv");
        let function = module.body().first_operation().unwrap();
        let block = function.region(0).unwrap().first_block().unwrap();
        let conv = block.first_operation().unwrap();
        assert_eq!(
            ConvWindow::of_op(&conv),
            Some(ConvWindow {
                kind: WindowKind::PoolingNhwcSum,
                strides: [2, 2],
                dilations: [1, 1],
            })
        );
        assert_eq!(ConvWindow::of_op(&conv.next_in_block().unwrap()), None);
    }

    #[test]
    fn invalid_windows_give_no_attribute() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        let bad = ConvWindow {
            kind: WindowKind::PoolingNhwcMax,
            strides: [0, 1],
            dilations: [1, 1],
        };
        assert!(bad.to_attribute(&context).is_none());
        assert!(
            Attribute::parse(
                &context,
                "#tcc.conv<conv_2d_nhwc_hwcf, strides = [1], dilations = [1, 1]>"
            )
            .is_none()
        );
        assert!(
            Attribute::parse(
                &context,
                "#tcc.conv<conv_3d, strides = [1, 1], dilations = [1, 1]>"
            )
            .is_none()
        );
        let other = Attribute::parse(&context, "#tcc.row_reduce<workgroup_size = 128>").unwrap();
        assert_eq!(ConvWindow::from_attribute(other), None);
    }
}
