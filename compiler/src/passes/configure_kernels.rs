//! `tcc-configure-kernels`: the tile phase's strategy step. Asks the target
//! configuration (`config/`) for each kernel's work-group size and records
//! it as `tcc.config = {workgroup_size = N}` on the kernel's root op, and
//! the target as `tcc.target` on the module, where the gpu phase's mapping
//! reads them. The mechanism never consults the target itself.

use melior::ir::attribute::{DictionaryAttribute, IntegerAttribute, StringAttribute};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::r#type::IntegerType;
use melior::ir::{Identifier, ValueLike};

use super::form_dispatches::KIND_ATTR;
use super::pass::{PassError, PassOptions, TccPass};
use crate::config::{KernelKind, Target};
use crate::ir::types::StaticTensor;
use crate::ir::util::{collect_ops, string_value};

pub struct ConfigureKernels;

/// The attribute holding a kernel's configuration.
pub const CONFIG_ATTR: &str = "tcc.config";
/// The module attribute naming the target the kernels are configured for.
pub const TARGET_ATTR: &str = "tcc.target";

#[derive(Debug, Default)]
pub struct ConfigureOptions {
    pub target: Target,
}

impl PassOptions for ConfigureOptions {
    const NAMES: &'static [&'static str] = &["target"];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "target" => {
                self.target = value.parse()?;
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

fn kind_from_name(name: &str) -> KernelKind {
    match name {
        "matmul" => KernelKind::Matmul,
        "convolution" => KernelKind::Convolution,
        "reduction" => KernelKind::Reduction,
        _ => KernelKind::Elementwise,
    }
}

/// Parallel points of a kernel: the elements of its largest result.
fn work_items(op: OperationRef) -> i64 {
    op.results()
        .filter_map(|r| StaticTensor::of(r.r#type()).map(|t| t.num_elements()))
        .max()
        .unwrap_or(1)
}

impl TccPass for ConfigureKernels {
    const ARGUMENT: &'static str = "tcc-configure-kernels";
    const SUMMARY: &'static str = "Attach each kernel's work-group configuration from the target's tuning tables";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    type Options = ConfigureOptions;

    fn run<'c>(
        &self,
        context: &'c melior::Context,
        root: &mut OperationRefMut<'c, 'c>,
        options: &ConfigureOptions,
    ) -> Result<(), PassError<'c>> {
        let module = unsafe { OperationRef::from_raw(root.to_raw()) };
        let i64_type = IntegerType::new(context, 64).into();
        for op in collect_ops(module) {
            let Some(kind) = op.attribute(KIND_ATTR).ok().and_then(string_value) else { continue };
            let config = options.target.kernel_config(kind_from_name(&kind), work_items(op));
            let dictionary = DictionaryAttribute::new(
                context,
                &[(
                    Identifier::new(context, "workgroup_size"),
                    IntegerAttribute::new(i64_type, config.workgroup_size).into(),
                )],
            );
            let mut op = unsafe { OperationRefMut::from_raw(op.to_raw()) };
            op.set_discardable_attribute(CONFIG_ATTR, dictionary.into());
        }
        root.set_discardable_attribute(TARGET_ATTR, StringAttribute::new(context, options.target.name()).into());
        Ok(())
    }
}
