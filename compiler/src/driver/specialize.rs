//! `tcc compile --specialize NAME=V1,V2,...`: static variants of a
//! dynamic model compiled ahead of time, one per declared bucket, in the
//! same artifact as the generic function.
//!
//! Why: a kernel's strategy (template, tiles, fusions that read static
//! shapes) is chosen at compile time, and the generic function's are the
//! declared maximum's; run-time constants cannot change them (see
//! docs/architecture.md, "Dynamic shapes"). A variant is the model
//! imported again with the dimension fixed to the bucket's value, so it
//! compiles exactly as `--input-shape` of that shape would (its own
//! strategies, every static-only pattern), for every back end, PTX
//! included. The variants share the weights with the generic function
//! (identical constants are stored once: `back::host_llvm::weights`), and
//! the generic function's host entry calls the variant whose values the
//! call's shapes bind (`back::host_llvm::writer`), so every runtime path
//! gets it without knowing.
//!
//! Each variant is a function of its own in the module, named
//! `<function>__<dim>_<value>...`, marked with [`SPECIALIZATION_OF`] (the
//! generic function's name), [`SPECIALIZED_DIMS`] and
//! [`SPECIALIZED_VALUES`]; it is not in the artifact's function table.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use melior::ir::attribute::{ArrayAttribute, IntegerAttribute, StringAttribute};
use melior::ir::operation::OperationLike;
use melior::ir::r#type::IntegerType;
use melior::ir::{BlockLike, Module};

use super::session::Session;
use crate::front::onnx::{self, ConstStyle, ImportOptions};

/// The attribute naming the generic function a variant specializes.
pub use crate::ir::dynamic::{SPECIALIZATION_OF, SPECIALIZED_DIMS, SPECIALIZED_VALUES};

/// The most variants one compile makes (each is a whole compile of the
/// model).
pub const MAX_VARIANTS: usize = 16;

/// One dimension's `--specialize` values: a fixed value each, or `None`
/// for `*` (the dimension kept symbolic in the combinations with the
/// other dimensions' values).
pub type SpecializeValues = Vec<Option<i64>>;

/// Parses `NAME=V1,V2,...`, where a value may be `*`: with another
/// dimension's buckets, `--specialize batch=1,8,* --specialize
/// sequence=1` also compiles the one-token step for every other batch
/// (batch symbolic, sequence 1), which the generic function would run
/// with every kernel sized for the largest sequence.
pub fn parse_specialize(text: &str) -> std::result::Result<(String, SpecializeValues), String> {
    let (name, values) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not NAME=V1,V2,... (e.g. batch=1,8,32)"))?;
    if name.is_empty() {
        return Err(format!("'{text}' names no dimension (NAME=V1,V2,...)"));
    }
    let values = values
        .split(',')
        .map(|v| match v.trim() {
            "*" => Ok(None),
            v => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| format!("'{v}' in '{text}' is not a whole number or *")),
        })
        .collect::<std::result::Result<SpecializeValues, String>>()?;
    Ok((name.to_string(), values))
}

/// Parses `--fix-dim`'s `NAME=VALUE`.
pub fn parse_fixed_dim(text: &str) -> std::result::Result<(String, i64), String> {
    let (name, value) = text
        .split_once('=')
        .filter(|(n, _)| !n.is_empty())
        .ok_or_else(|| format!("'{text}' is not NAME=VALUE (e.g. sequence=128)"))?;
    let value: i64 = value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' in '{text}' is not a whole number"))?;
    if value < 1 {
        return Err(format!("'{text}': a dimension is at least 1"));
    }
    Ok((name.to_string(), value))
}

/// The buckets `--specialize` asks for: every combination of the values
/// given per dimension (each `(name, value)` list in `dims`' order, a `*`
/// leaving its dimension out of the combination), checked against the
/// declared ranges. Buckets fixing more dimensions come first: the
/// generic entry calls the first whose values a call's shapes bind.
pub fn buckets(
    specs: &[(String, SpecializeValues)],
    dims: &[tcc_dialects::dims::DimRange],
) -> Result<Vec<Vec<(String, i64)>>> {
    let mut per_dim: Vec<(String, SpecializeValues)> = Vec::new();
    for (name, values) in specs {
        let Some(range) = dims.iter().find(|d| &d.name == name) else {
            bail!(
                "--specialize {name}=...: '{name}' is not a symbolic dimension (declare it with --dim {name}=MIN..MAX)"
            );
        };
        if per_dim.iter().any(|(n, _)| n == name) {
            bail!("--specialize gives '{name}' twice: list its values once ({name}=1,8,32)");
        }
        let mut sorted: SpecializeValues = Vec::new();
        for &value in values {
            if sorted.contains(&value) {
                match value {
                    Some(value) => bail!("--specialize {name}: {value} is listed twice"),
                    None => bail!("--specialize {name}: * is listed twice"),
                }
            }
            sorted.push(value);
            let Some(value) = value else {
                continue;
            };
            if value < range.min || value > range.max {
                bail!(
                    "--specialize {name}={value}: outside '{name}''s declared range {}..{}",
                    range.min,
                    range.max
                );
            }
        }
        per_dim.push((name.clone(), sorted));
    }
    // In `--dim` order, so that variant names do not depend on the flags'.
    per_dim.sort_by_key(|(n, _)| dims.iter().position(|d| &d.name == n));
    let mut combinations: Vec<Vec<(String, i64)>> = vec![Vec::new()];
    for (name, values) in &per_dim {
        combinations = combinations
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |&v| {
                    let mut next = prefix.clone();
                    if let Some(v) = v {
                        next.push((name.clone(), v));
                    }
                    next
                })
            })
            .collect();
        if combinations.len() > MAX_VARIANTS {
            bail!(
                "--specialize asks for more than {MAX_VARIANTS} variants (each compiles the whole model): give fewer values"
            );
        }
    }
    // Every dimension at `*` is the generic function itself.
    combinations.retain(|c| !c.is_empty());
    combinations.sort_by_key(|c| std::cmp::Reverse(c.len()));
    Ok(combinations)
}

/// The name of the variant of `function` for `bucket`
/// (`main__batch_8`).
pub fn variant_name(function: &str, bucket: &[(String, i64)]) -> String {
    let mut name = function.to_string();
    for (dim, value) in bucket {
        let dim: String = dim
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        name.push_str(&format!("__{dim}_{value}"));
    }
    name
}

/// Imports the ONNX model at `path` once per bucket, with `generic`'s
/// options (the generic import's input shapes, structures, fixed and
/// symbolic dimensions) and the bucket's dimensions fixed (the other
/// declared ones stay symbolic), and appends each variant's function to
/// `module` (the generic import), marked as a specialization of
/// `function`.
pub fn add_variants<'c>(
    session: &'c Session,
    module: &Module<'c>,
    path: &Path,
    generic: &ImportOptions,
    buckets: &[Vec<(String, i64)>],
) -> Result<()> {
    if buckets.is_empty() {
        return Ok(());
    }
    if !super::import::is_onnx(path) {
        bail!(
            "{}: --specialize imports the model again per bucket, which it does for ONNX models (.onnx); compile an MLIR model once per shape instead",
            path.display()
        );
    }
    let function = ImportOptions::default().function_name;
    let context = &session.context;
    for bucket in buckets {
        let name = variant_name(&function, bucket);
        let fixed = |dim: &str| bucket.iter().any(|(name, _)| name == dim);
        // The declared dimensions the bucket leaves (a sequence beside a
        // batch of one) stay symbolic in the variant.
        let options = ImportOptions {
            input_shapes: generic.input_shapes.clone(),
            structures: generic.structures.clone(),
            symbolic_dims: generic
                .symbolic_dims
                .iter()
                .filter(|d| !fixed(&d.name))
                .cloned()
                .collect(),
            fixed_dims: bucket.iter().chain(&generic.fixed_dims).cloned().collect(),
            const_style: ConstStyle::Resource,
            function_name: name.clone(),
            round_half_at_storage: generic.round_half_at_storage,
            ..ImportOptions::default()
        };
        let imported = onnx::import_file(path, &options)
            .map_err(|e| anyhow!("--specialize {}: {e}", describe(bucket)))?;
        let variant = super::import::build_imported(
            session,
            &format!("{} ({})", path.display(), describe(bucket)),
            imported,
        )?;
        let body = variant.body();
        let mut ops = Vec::new();
        let mut next = body.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            ops.push(op);
        }
        for op in ops {
            if crate::ir::util::op_name(&op) == "func.func" {
                crate::ir::util::set_discardable_attribute(
                    op,
                    SPECIALIZATION_OF,
                    StringAttribute::new(context, &function).into(),
                );
                let dims: Vec<_> = bucket
                    .iter()
                    .map(|(n, _)| StringAttribute::new(context, n).into())
                    .collect();
                let values: Vec<_> = bucket
                    .iter()
                    .map(|(_, v)| {
                        IntegerAttribute::new(IntegerType::new(context, 64).into(), *v).into()
                    })
                    .collect();
                crate::ir::util::set_discardable_attribute(
                    op,
                    SPECIALIZED_DIMS,
                    ArrayAttribute::new(context, &dims).into(),
                );
                crate::ir::util::set_discardable_attribute(
                    op,
                    SPECIALIZED_VALUES,
                    ArrayAttribute::new(context, &values).into(),
                );
            }
            // SAFETY: `op` is a top-level op of `variant`'s body, detached
            // and handed to `module`'s body, which takes ownership; both
            // modules live in `session`'s context.
            unsafe {
                mlir_sys::mlirOperationRemoveFromParent(op.to_raw());
                mlir_sys::mlirBlockAppendOwnedOperation(module.body().to_raw(), op.to_raw());
            }
        }
    }
    if !module.as_operation().verify() {
        return Err(session.failure(&format!(
            "{}: the module with its specializations does not verify",
            path.display()
        )));
    }
    Ok(())
}

/// `batch=8,seq=128`.
pub fn describe(bucket: &[(String, i64)]) -> String {
    tcc_runtime::describe_bucket(bucket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcc_dialects::dims::DimRange;

    fn range(name: &str, min: i64, max: i64) -> DimRange {
        DimRange {
            name: name.into(),
            min,
            max,
        }
    }

    #[test]
    fn buckets_are_every_combination_in_dim_order() {
        let dims = [range("batch", 1, 32), range("seq", 1, 512)];
        let specs = [
            parse_specialize("seq=128,384").unwrap(),
            parse_specialize("batch=1,8").unwrap(),
        ];
        let b = buckets(&specs, &dims).unwrap();
        let names: Vec<String> = b.iter().map(|b| variant_name("main", b)).collect();
        assert_eq!(
            names,
            [
                "main__batch_1__seq_128",
                "main__batch_1__seq_384",
                "main__batch_8__seq_128",
                "main__batch_8__seq_384"
            ]
        );
    }

    #[test]
    fn a_star_keeps_its_dimension_symbolic_after_the_full_buckets() {
        let dims = [range("batch", 1, 8), range("sequence", 1, 256)];
        let specs = [
            parse_specialize("batch=1,*,8").unwrap(),
            parse_specialize("sequence=1").unwrap(),
        ];
        let b = buckets(&specs, &dims).unwrap();
        let names: Vec<String> = b.iter().map(|b| variant_name("main", b)).collect();
        assert_eq!(
            names,
            [
                "main__batch_1__sequence_1",
                "main__batch_8__sequence_1",
                "main__sequence_1"
            ]
        );
        // Only stars: nothing but the generic function.
        let star = [parse_specialize("batch=*").unwrap()];
        assert!(buckets(&star, &dims).unwrap().is_empty());
    }

    #[test]
    fn bad_buckets_are_refused_with_the_reason() {
        let dims = [range("batch", 1, 32)];
        let err = |text: &str| {
            let spec = parse_specialize(text).unwrap();
            buckets(&[spec], &dims).unwrap_err().to_string()
        };
        assert!(err("batch=0,8").contains("outside 'batch''s declared range 1..32"));
        assert!(err("batch=64").contains("outside"));
        assert!(err("batch=8,8").contains("listed twice"));
        assert!(err("seq=8").contains("declare it with --dim seq=MIN..MAX"));
        assert!(
            parse_specialize("batch")
                .unwrap_err()
                .contains("NAME=V1,V2")
        );
        assert!(parse_specialize("batch=1,x").unwrap_err().contains("'x'"));
        assert!(err("batch=1,*,*").contains("* is listed twice"));
        let many = parse_specialize(&format!(
            "batch={}",
            (1..=17)
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ))
        .unwrap();
        assert!(
            buckets(&[many], &dims)
                .unwrap_err()
                .to_string()
                .contains("more than 16")
        );
    }
}
