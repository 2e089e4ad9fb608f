//! `tcc-decompose-composites`: expands tcc dialect composite ops (softmax,
//! log_softmax, layer_norm, gelu, silu, attention) into TOSA so that the upstream
//! TOSA → linalg lowering and tcc's fusion see only primitive ops.
//!
//! Option `ops` limits the expansion to a comma-separated list of op names
//! (without the `tcc.` prefix), so that a target with a library kernel for
//! an op can keep it whole.

use melior::Context;
use melior::ir::Value;
use melior::ir::operation::{OperationLike, OperationRef};

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};
use crate::ir::tosa_builder::TosaBuilder;
use crate::patterns::decompose_composites as expand;

pub struct DecomposeComposites;

type Expansion =
    for<'c> fn(&TosaBuilder<'c>, OperationRef<'c, 'c>) -> Result<Value<'c, 'c>, PassError<'c>>;

/// The composite ops and their expansions.
const EXPANSIONS: &[(&str, Expansion)] = &[
    ("softmax", expand::softmax),
    ("log_softmax", expand::log_softmax),
    ("gelu", expand::gelu),
    ("silu", expand::silu),
    ("layer_norm", expand::layer_norm),
    ("attention", crate::patterns::attention::decompose),
];

/// The composites whose expansions are elementwise (any extent, a
/// symbolic one included, passes through them).
const ELEMENTWISE: &[&str] = &["tcc.gelu", "tcc.silu"];

#[derive(Debug, Default)]
pub struct DecomposeOptions {
    /// Ops to expand; empty means all.
    pub ops: Vec<String>,
}

impl PassOptions for DecomposeOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[PassOptionInfo {
        name: "ops",
        kind: PassOptionKind::String,
        default: "",
        description: "Composite ops to expand, e.g. {softmax,gelu} (empty: all)",
    }];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "ops" => {
                let list = value.trim_start_matches('{').trim_end_matches('}');
                for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let name = name.trim_start_matches("tcc.");
                    if !EXPANSIONS.iter().any(|(op, _)| *op == name) {
                        let known: Vec<_> = EXPANSIONS.iter().map(|(op, _)| *op).collect();
                        return Err(format!(
                            "unknown composite op '{name}' (known: {})",
                            known.join(", ")
                        ));
                    }
                    self.ops.push(name.to_string());
                }
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

impl TccPass for DecomposeComposites {
    const ARGUMENT: &'static str = "tcc-decompose-composites";
    const SUMMARY: &'static str =
        "Expand tcc composite ops (softmax, layer_norm, gelu, ...) into TOSA";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["tosa"];
    type Options = DecomposeOptions;

    fn run<'c>(
        &self,
        context: &'c Context,
        root: Root<'c>,
        options: &DecomposeOptions,
    ) -> PassResult<'c> {
        let mut targets: Vec<(OperationRef<'c, 'c>, Expansion)> = Vec::new();
        root.walk(melior::ir::operation::WalkOrder::PostOrder, |op| {
            let name = op.name();
            let name = name.as_string_ref().as_str().unwrap_or_default();
            if let Some(short) = name.strip_prefix("tcc.")
                && let Some((_, expansion)) = EXPANSIONS.iter().find(|(n, _)| *n == short)
                && (options.ops.is_empty() || options.ops.iter().any(|o| o == short))
            {
                targets.push((unsafe { OperationRef::from_raw(op.to_raw()) }, *expansion));
            }
            melior::ir::operation::WalkResult::Advance
        });
        for (op, expansion) in targets {
            // The expansions build static TOSA (issue 33), but for the
            // elementwise ones: another composite on a symbolic dimension
            // is refused, named.
            if !ELEMENTWISE
                .iter()
                .any(|n| crate::ir::util::op_name(&op) == *n)
            {
                crate::ir::dynamic::refuse_dynamic(op, "tcc-decompose-composites")?;
            }
            let builder = TosaBuilder::before(context, op)?;
            let replacement = expansion(&builder, op)?;
            let old: Value = op
                .result(0)
                .map_err(|e| builder.error(e.to_string()))?
                .into();
            crate::ir::util::replace_and_erase(op, old, replacement);
        }
        Ok(())
    }
}
