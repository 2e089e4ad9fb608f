//! `tcc compile --stats`: what the compiler made of a model — how many
//! kernels, of which kinds, with which work-group sizes.

use melior::ir::Module;
use melior::ir::attribute::DictionaryAttribute;
use melior::ir::operation::OperationLike;

use crate::ir::util::{collect_ops, integer_value, op_name, string_value};
use crate::passes::{CONFIG_ATTR, KERNEL_ATTR, KIND_ATTR};

#[derive(Debug, Default)]
pub struct Stats {
    /// (kernel name, kind, work-group size) in program order; the size is
    /// `N` for 1-D work-groups and `XxYxZ` otherwise.
    pub kernels: Vec<(String, String, Option<String>)>,
}

/// Reads kernel facts off the module: from the gpu phase on, the outlined
/// `gpu.func`s; before it, the `tcc.kernel` groups.
pub fn collect(module: &Module) -> Stats {
    let mut stats = Stats::default();
    let ops = collect_ops(module.as_operation());
    let outlined: Vec<_> = ops.iter().filter(|op| op_name(*op) == "gpu.func").collect();
    if !outlined.is_empty() {
        for op in outlined {
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            let kind = op
                .attribute(KIND_ATTR)
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            let size = op.attribute("known_block_size").ok().and_then(|a| {
                let text = a.to_string();
                let sizes: Vec<i64> = text
                    .split(':')
                    .nth(1)?
                    .trim_end_matches('>')
                    .split(',')
                    .filter_map(|s| s.trim().parse().ok())
                    .collect();
                Some(if sizes[1..].iter().all(|&s| s == 1) {
                    sizes[0].to_string()
                } else {
                    sizes
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join("x")
                })
            });
            stats.kernels.push((name, kind, size));
        }
        return stats;
    }
    for op in ops {
        let Some(kind) = op.attribute(KIND_ATTR).ok().and_then(string_value) else {
            continue;
        };
        let name = op
            .attribute(KERNEL_ATTR)
            .ok()
            .and_then(string_value)
            .unwrap_or_default();
        let size = op
            .attribute(CONFIG_ATTR)
            .ok()
            .and_then(|a| DictionaryAttribute::try_from(a).ok())
            .and_then(|d| d.element_by_name("workgroup_size"))
            .and_then(integer_value)
            .map(|s| s.to_string());
        stats.kernels.push((name, kind, size));
    }
    stats
}

impl Stats {
    pub fn render(&self) -> String {
        let mut text = format!("kernels: {}\n", self.kernels.len());
        for (name, kind, size) in &self.kernels {
            let size = size.clone().unwrap_or_else(|| "-".to_string());
            text.push_str(&format!("  {name}  kind={kind}  workgroup_size={size}\n"));
        }
        text
    }
}
