//! `tcc compile --stats[=text|json]`: what the compiler made of a model —
//! how many kernels (and, from the gpu phase on, launches), of which kinds,
//! with which work-group sizes, and from
//! the gpu phase on each function's memory plan: its arena size and the
//! liveness lower bound (the most bytes of intermediate buffers alive at
//! any op, which no plan can beat).

use melior::ir::Module;
use melior::ir::operation::OperationLike;

use crate::ir::attr_names;
use crate::ir::dense::int_array_attribute;
use crate::ir::util::{collect_ops, integer_value, op_name, string_value};

#[derive(Debug, Default)]
pub struct Stats {
    /// (kernel name, kind, work-group size) in program order; the size is
    /// `N` for 1-D work-groups and `XxYxZ` otherwise.
    pub kernels: Vec<(String, String, Option<String>)>,
    /// From the gpu phase on, the kernel launches (`gpu.launch_func`s):
    /// more than the kernels where launches share one
    /// (`tcc-dedupe-kernels`); `None` before.
    pub launches: Option<usize>,
    /// Planned host functions, in module order.
    pub plans: Vec<MemoryPlan>,
}

/// The memory plan of one host function (`tcc-plan-memory`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPlan {
    pub function: String,
    pub arena_bytes: u64,
    pub live_bytes_bound: u64,
    /// With symbolic dimensions (issue 33; the plan holds the declared
    /// maximum): the arena and the bound at the declared minimum.
    pub at_min: Option<(u64, u64)>,
}

impl MemoryPlan {
    /// Arena size over the lower bound (1.0 when both are 0).
    pub fn ratio(&self) -> f64 {
        if self.live_bytes_bound == 0 {
            1.0
        } else {
            self.arena_bytes as f64 / self.live_bytes_bound as f64
        }
    }
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Reads kernel facts off the module: from the gpu phase on, the outlined
/// `gpu.func`s; before it, the kernels' roots, named by their
/// `tcc.dispatch`.
pub fn collect(module: &Module) -> Stats {
    let mut stats = Stats::default();
    for function in crate::ir::util::body_ops_named(module.as_operation(), "func.func") {
        let size = |name: &str| {
            function
                .attribute(name)
                .ok()
                .and_then(integer_value)
                .and_then(|v| u64::try_from(v).ok())
        };
        if let (Some(arena_bytes), Some(live_bytes_bound)) = (
            size(attr_names::ARENA_BYTES),
            size(attr_names::LIVE_BYTES_BOUND),
        ) {
            stats.plans.push(MemoryPlan {
                function: function
                    .attribute("sym_name")
                    .ok()
                    .and_then(string_value)
                    .unwrap_or_default(),
                arena_bytes,
                live_bytes_bound,
                at_min: size(attr_names::ARENA_BYTES_AT_MIN)
                    .zip(size(attr_names::LIVE_BYTES_BOUND_AT_MIN)),
            });
        }
    }
    let ops = collect_ops(module.as_operation());
    let outlined: Vec<_> = ops.iter().filter(|op| op_name(*op) == "gpu.func").collect();
    if !outlined.is_empty() {
        stats.launches = Some(
            ops.iter()
                .filter(|op| op_name(*op) == "gpu.launch_func")
                .count(),
        );
        for op in outlined {
            let name = op
                .attribute("sym_name")
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            let kind = op
                .attribute(attr_names::KIND)
                .ok()
                .and_then(string_value)
                .unwrap_or_default();
            let size = int_array_attribute(*op, "known_block_size")
                .filter(|sizes| !sizes.is_empty())
                .map(|sizes| {
                    if sizes[1..].iter().all(|&s| s == 1) {
                        sizes[0].to_string()
                    } else {
                        sizes
                            .iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>()
                            .join("x")
                    }
                });
            stats.kernels.push((name, kind, size));
        }
        return stats;
    }
    for op in ops {
        let Some(kind) = op.attribute(attr_names::KIND).ok().and_then(string_value) else {
            continue;
        };
        let name = crate::ir::dispatch::kernel_of(op).unwrap_or_default();
        let size = crate::ir::strategy::of(&op)
            .map(|s| s.workgroup_size())
            .map(|s| s.to_string());
        stats.kernels.push((name, kind, size));
    }
    stats
}

impl Stats {
    pub fn render(&self) -> String {
        let mut text = format!("kernels: {}\n", self.kernels.len());
        if let Some(launches) = self.launches {
            text.push_str(&format!("launches: {launches}\n"));
        }
        for (name, kind, size) in &self.kernels {
            let size = size.clone().unwrap_or_else(|| "-".to_string());
            text.push_str(&format!("  {name}  kind={kind}  workgroup_size={size}\n"));
        }
        for plan in &self.plans {
            text.push_str(&format!(
                "arena @{}: {} bytes (liveness lower bound {} bytes, {:.3}x)",
                plan.function,
                plan.arena_bytes,
                plan.live_bytes_bound,
                plan.ratio()
            ));
            if let Some((arena, bound)) = plan.at_min {
                text.push_str(&format!(
                    ", planned at the declared maximum; at the minimum {arena} bytes (liveness lower bound {bound} bytes)"
                ));
            }
            text.push('\n');
        }
        text
    }

    /// The session's arena: the largest of the functions' arenas.
    pub fn arena_bytes(&self) -> u64 {
        self.plans.iter().map(|p| p.arena_bytes).max().unwrap_or(0)
    }

    /// One JSON object: `kernels` (name, kind, workgroup_size: a number, a
    /// `[x, y, z]` array or null), `functions` (name, arena_bytes,
    /// live_bytes_bound), and the model's `arena_bytes` and
    /// `live_bytes_bound` (the largest over its functions; null before the
    /// gpu phase).
    pub fn render_json(&self) -> String {
        let kernels: Vec<String> = self
            .kernels
            .iter()
            .map(|(name, kind, size)| {
                let size = match size {
                    None => "null".to_string(),
                    Some(s) if s.contains('x') => format!("[{}]", s.replace('x', ", ")),
                    Some(s) => s.clone(),
                };
                format!(
                    "{{\"name\": {}, \"kind\": {}, \"workgroup_size\": {size}}}",
                    json_string(name),
                    json_string(kind)
                )
            })
            .collect();
        let functions: Vec<String> = self
            .plans
            .iter()
            .map(|p| {
                let at_min = p.at_min.map_or(String::new(), |(arena, bound)| {
                    format!(
                        ", \"arena_bytes_at_min\": {arena}, \"live_bytes_bound_at_min\": {bound}"
                    )
                });
                format!(
                    "{{\"name\": {}, \"arena_bytes\": {}, \"live_bytes_bound\": {}{at_min}}}",
                    json_string(&p.function),
                    p.arena_bytes,
                    p.live_bytes_bound
                )
            })
            .collect();
        let (arena, bound) = if self.plans.is_empty() {
            ("null".to_string(), "null".to_string())
        } else {
            (
                self.arena_bytes().to_string(),
                self.plans
                    .iter()
                    .map(|p| p.live_bytes_bound)
                    .max()
                    .unwrap_or(0)
                    .to_string(),
            )
        };
        format!(
            "{{\"kernel_count\": {}, \"launch_count\": {}, \"kernels\": [{}], \"functions\": [{}], \"arena_bytes\": {arena}, \"live_bytes_bound\": {bound}}}\n",
            self.kernels.len(),
            self.launches.map_or("null".to_string(), |n| n.to_string()),
            kernels.join(", "),
            functions.join(", ")
        )
    }

    /// The text or JSON rendering.
    pub fn render_as(&self, format: StatsFormat) -> String {
        match format {
            StatsFormat::Text => self.render(),
            StatsFormat::Json => self.render_json(),
        }
    }
}

/// How `--stats` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Lines for people (the default of a bare `--stats`).
    Text,
    /// One JSON object for scripts.
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_and_shapes() {
        assert_eq!(json_string("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        let stats = Stats {
            kernels: vec![
                ("k0".into(), "matmul".into(), Some("128".into())),
                ("k1".into(), "softmax".into(), Some("8x8x1".into())),
                ("k2".into(), "elementwise".into(), None),
            ],
            launches: Some(4),
            plans: vec![MemoryPlan {
                function: "main".into(),
                arena_bytes: 8192,
                live_bytes_bound: 8000,
                at_min: None,
            }],
        };
        assert_eq!(
            stats.render_json(),
            "{\"kernel_count\": 3, \"launch_count\": 4, \"kernels\": [{\"name\": \"k0\", \"kind\": \"matmul\", \"workgroup_size\": 128}, \
             {\"name\": \"k1\", \"kind\": \"softmax\", \"workgroup_size\": [8, 8, 1]}, \
             {\"name\": \"k2\", \"kind\": \"elementwise\", \"workgroup_size\": null}], \
             \"functions\": [{\"name\": \"main\", \"arena_bytes\": 8192, \"live_bytes_bound\": 8000}], \
             \"arena_bytes\": 8192, \"live_bytes_bound\": 8000}\n"
        );
        let text = stats.render();
        assert!(text.starts_with("kernels: 3\nlaunches: 4\n"), "{text}");
        assert!(
            text.ends_with("arena @main: 8192 bytes (liveness lower bound 8000 bytes, 1.024x)\n")
        );
    }
}
